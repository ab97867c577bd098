"""Several benches on one PostgreSQL queue: real daemon processes, a real server, real stores.

Each bench's daemon has its own store file (its journal, where its runs are written) and its
own lock folder (as on separate hosts), and shares the queue in PostgreSQL.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

from hilbench.daemon.queue_db import QueueDB
from tests.daemon.conftest import qubo_campaign
from tests.subprocesses import hilbench_here

BENCHES = ("A", "B", "C")
# Two items a bench (each a campaign: a worker and an agent started, ~1.5 s of CPU) share the
# queue with a schedule's: each bench takes items while the others do, which is what is shown.
ITEMS = 6
# Bench A's first item is long enough to be killed in the middle: many 1 ms units (~40 ms of
# wall and ~12 ms of CPU each, more wall under load) last seconds for little CPU; 8 units of
# 1.2 s cost 10 s of SA's CPU. 6 units of 5 ms had all ended unseen under a load of 7.
LONG_UNITS = 100


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "daemon.toml"
    path.write_text("[daemon]\npoll_s = 0.1\nretry_delay_s = 0.5\nbusy_delay_s = 0.5\n")
    return path


def _short(tmp_path: Path) -> Path:
    """A short folder for this test's stores: a store's control socket sits in its logs folder,
    and under pytest-xdist tmp_path (popen-gw0/…) made that path 108 bytes, past the 107 a Unix
    socket's name may have (the daemon refuses it, naming --control)."""
    folder = Path(tempfile.gettempdir()) / f"hq-{hashlib.sha256(bytes(tmp_path)).hexdigest()[:12]}"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def _daemon(daemon_at, tmp_path: Path, bench: str, url: str, **kw):
    return daemon_at(_short(tmp_path) / f"{bench}.sqlite", config=_config(tmp_path), bench=bench,
                     queue=url, env={"HILBENCH_LOCK_DIR": str(tmp_path / f"locks-{bench}")},
                     **kw)


def _runs(store: Path) -> list[tuple[str, str, str, str, float]]:
    """(run uid, campaign uid, unit key, exit status, start time) of each run in a store."""
    with sqlite3.connect(store) as conn:
        return conn.execute(
            "SELECT uid, campaign_uid, unit_key, exit_status, wall_time FROM runs").fetchall()


@pytest.mark.timeout(600)  # 120 s to the kill, then 240 s for the queue
@pytest.mark.slow
def test_three_benches_share_one_queue_each_item_once_by_its_bench(daemon_at, tmp_path, pg_url):
    units: dict[int, tuple[str, int]] = {}  # item id -> (bench, units)
    with QueueDB(pg_url) as q:
        for n in range(ITEMS):
            bench = BENCHES[n % 3]
            long = n == 0  # bench A's first item: long enough to be killed in the middle
            seeds = LONG_UNITS if long else 1
            path = qubo_campaign(tmp_path, f"c{n:02d}", seeds, timeout_s=0.001 if long else 0.005)
            item = q.add(str(path), path.read_text(), f"c{n:02d}", bench=bench)
            units[item] = (bench, seeds)
        # One schedule for bench B, every minute, its last fire 2.5 minutes ago: every daemon
        # ticks every schedule, all three at once at start, and run-once queues one item.
        sched_file = qubo_campaign(tmp_path, "nightly", 1)
        sid = q.add_schedule(name="nightly", source_path=str(sched_file),
                             content=sched_file.read_text(), cron="* * * * *", tz="UTC",
                             missed="run-once", trials=None, record=None, priority=0,
                             now=time.time() - 150, bench="B")
    first = min(units)
    daemons = {b: _daemon(daemon_at, tmp_path, b, pg_url) for b in BENCHES}
    # A last: its long item starts with it, and B's and C's start-ups (seconds each under a
    # load of 10) had used up its units before the wait below began
    for b in ("B", "C", "A"):
        daemons[b].start()
    a = daemons["A"]
    a.wait_until(lambda s: (s["current"] or {}).get("item") == first
                 and s["current"]["done"] >= 1, "bench A is in the middle of its first item")
    a.kill()
    killed_at = time.time()
    a.start()  # the restarted daemon takes its item up again before anything else

    t0 = time.monotonic()
    with QueueDB(pg_url) as q:
        while q.items() and time.monotonic() - t0 < 240:
            time.sleep(0.5)
        left = q.items()
        history = {h["id"]: h for h in q.history(limit=100)}
        fires = q.fires(sid)
        benches = {b["bench"]: b for b in q.benches()}
    assert not left, f"still queued after 240 s: {[i.summary() for i in left]}"

    scheduled = [h for h in history.values() if h["schedule_id"] == sid]
    queued = [f for f in fires if f["outcome"] == "queued"]
    # One item per fire that queued, whoever of the three ticked it: the missed fires at start
    # make one item (run-once), and a later minute may fire again once that item has run (the
    # test outlasts a minute), never twice for one fire time.
    assert scheduled and len(scheduled) == len(queued), (scheduled, fires)
    assert {f["item_id"] for f in queued} == {h["id"] for h in scheduled}, fires
    assert len({f["fire_time"] for f in fires}) == len(fires), fires  # each fire once
    units.update({h["id"]: ("B", 1) for h in scheduled})
    assert set(history) == set(units)
    for item_id, (bench, _n) in units.items():
        h = history[item_id]
        assert h["exit_status"] == "completed", h
        assert h["bench"] == bench, h

    stores = {b: _runs(_short(tmp_path) / f"{b}.sqlite") for b in BENCHES}
    duplicates = 0
    for bench, runs in stores.items():
        success = Counter((c, k) for _, c, k, status, _ in runs if status == "success")
        duplicates += sum(n - 1 for n in success.values())
        mine = {i for i, (b, _) in units.items() if b == bench}
        campaigns = {history[i]["campaign_uid"] for i in mine}
        # every unit of every item of this bench ran exactly once, in this bench's store
        assert sum(units[i][1] for i in mine) == sum(success.values()), bench
        assert {c for c, _ in success} == campaigns, bench
        uids = {u for u, *_ in runs}
        assert all(set(history[i]["run_uids"]) <= uids for i in mine), bench
    assert duplicates == 0
    # The killed item's one campaign ran units before the kill and after it (resumed by
    # bench A's restarted daemon, not started afresh), each unit successful once.
    killed = [r for r in stores["A"] if r[1] == history[first]["campaign_uid"]]
    assert sum(r[3] == "success" for r in killed) == LONG_UNITS, killed
    assert min(r[4] for r in killed) < killed_at < max(r[4] for r in killed), killed
    assert benches["A"]["pid"] == a.proc.pid and benches["A"]["state"] in ("idle", "running")
    print(f"{len(history)} items on 3 benches in {time.monotonic() - t0:.1f} s after the kill; "
          f"runs: {', '.join(f'{b} {len(r)}' for b, r in stores.items())}; duplicates "
          f"{duplicates}")


@pytest.mark.slow
def test_status_all_shows_each_bench_and_the_one_that_is_down(daemon_at, tmp_path, pg_url):
    up = _daemon(daemon_at, tmp_path, "bench-up", pg_url).start()
    down = _daemon(daemon_at, tmp_path, "bench-down", pg_url).start()
    down.kill()
    path = qubo_campaign(tmp_path, "later", 1)
    added = hilbench_here("queue", "add", path, "--db", pg_url, "--bench", "bench-down")
    assert added.returncode == 0, added.stderr
    assert "bench bench-down" in added.stdout
    refused = hilbench_here("queue", "add", path, "--db", pg_url)
    assert refused.returncode == 2 and "--bench NAME" in refused.stderr, refused.stderr

    shown = hilbench_here("status", "--all", "--db", pg_url, "--down-after", "5")
    assert shown.returncode == 0, shown.stderr
    lines = {line.split(":")[0]: line for line in shown.stdout.splitlines()
             if line.startswith("bench ")}
    assert set(lines) == {"bench bench-up", "bench bench-down"}, shown.stdout
    assert "DOWN" not in lines["bench bench-up"] and f"pid {up.proc.pid}" in lines[
        "bench bench-up"]
    assert "DOWN" in lines["bench bench-down"] and "1 queued for it" in lines["bench bench-down"]
    as_json = json.loads(hilbench_here("status", "--all", "--db", pg_url, "--json").stdout)
    state = {b["bench"]: b["up"] for b in as_json["benches"]}
    assert state == {"bench-up": True, "bench-down": False}
