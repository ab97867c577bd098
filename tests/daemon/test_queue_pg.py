"""The queue's claims and schedule fires on PostgreSQL under contention: several daemons'
connections at once on a real server, each item and each fire taken exactly once."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from hilbench.daemon.queue_db import QueueDB


def _together(n: int, work) -> list:
    """Run ``work(i)`` in ``n`` threads released at the same moment; their results."""
    gate = threading.Barrier(n)
    out: list = [None] * n
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            gate.wait()
            out[i] = work(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    return out


@pytest.mark.slow
def test_concurrent_claims_take_each_item_once_and_only_for_their_bench(pg_url):
    with QueueDB(pg_url) as q:
        for n in range(40):
            q.add(f"/c{n}.toml", f"# {n}", f"c{n}", bench=None if n % 2 else f"b{n % 4}")

    def drain(i: int) -> list[tuple[int, str | None]]:
        bench = f"b{i}"
        taken = []
        with QueueDB(pg_url) as q:
            while (item := q.claim(bench, time.time())) is not None:
                taken.append((item.id, item.bench))
                q.finish(item.id, "completed", "", [])
        return taken

    results = _together(4, drain)
    claimed = Counter(item for taken in results for item, _ in taken)
    assert len(claimed) == 40 and set(claimed.values()) == {1}  # every item, once
    for i, taken in enumerate(results):
        assert all(bench == f"b{i}" for _, bench in taken)  # bound to the claimer
    with QueueDB(pg_url) as q:
        history = q.history(limit=100)
    by_id = {h["id"]: h["bench"] for h in history}
    # an item queued for bench b0 or b2 was run by that bench; b1 and b3 took none of them
    for h in history:
        n = int(h["name"][1:])
        if n % 2 == 0:
            assert by_id[h["id"]] == f"b{n % 4}", h


def test_one_fire_ticked_by_four_daemons_at_once_queues_one_item(pg_url):
    with QueueDB(pg_url) as q:
        sid = q.add_schedule(name="nightly", source_path="/n.toml", content="# n",
                             cron="* * * * *", tz="UTC", missed="skip", trials=None,
                             record=None, priority=0, now=1000.0, bench="b0")

    def tick(_: int) -> int | None:
        with QueueDB(pg_url) as q:
            return q.record_fires(sid, 1060.0, [(1060.0, "queued", "")], True)

    items = [i for i in _together(4, tick) if i is not None]
    with QueueDB(pg_url) as q:
        fires = q.fires(sid)
        queued = [i for i in q.items() if i.schedule_id == sid]
    assert len(items) == 1 and [i.id for i in queued] == items
    assert queued[0].bench == "b0"
    assert [(f["fire_time"], f["outcome"]) for f in fires] == [(1060.0, "queued")]
