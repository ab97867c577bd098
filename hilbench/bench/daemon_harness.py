"""What the daemon benchmarks share: a daemon process, and reading the store for what ran (their
campaign files: :func:`hilbench.bench.bench_campaign.campaign_file`)."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from hilbench.daemon.queue_db import QueueDB
from hilbench.private_files import open_private


class DaemonProc:
    """`hilbench daemon` on ``db``, with its own control socket (in the store's logs)."""

    def __init__(self, db: Path, config: Path | None = None) -> None:
        self.db = db
        self.config = config
        self.proc: subprocess.Popen | None = None
        self.log = open_private(db.with_suffix(".daemon.out"), "a")

    def start(self, timeout_s: float = 60) -> None:
        cmd = [sys.executable, "-m", "hilbench", "daemon", "--db", str(self.db)]
        if self.config is not None:
            cmd += ["--config", str(self.config)]
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + timeout_s
        while True:
            with QueueDB(self.db) as q:
                if q.daemon_info().get("pid") == self.proc.pid:
                    return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the daemon did not start (see {self.log.name})")
            time.sleep(0.05)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def rss_mib(self) -> float:
        return psutil.Process(self.pid).memory_info().rss / 2**20

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(90)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def agents(self) -> list[psutil.Process]:
        """The agent processes of the daemon's current worker."""
        with QueueDB(self.db) as q:
            worker = q.daemon_info().get("worker_pid")
        if not worker:
            return []
        try:
            children = psutil.Process(worker).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        out = []
        for child in children:
            try:
                if " agent " in " ".join(child.cmdline()) + " ":
                    out.append(child)
            except psutil.NoSuchProcess:
                continue
        return out


def successes(db: Path | QueueDB) -> int:
    """Successful runs in the store (through ``db`` itself when it is an open queue)."""
    if isinstance(db, QueueDB):
        return db.run_tally().get("success", 0)
    with QueueDB(db) as q:
        return successes(q)


def accounting(db: Path, expected: dict[int, set[str]]) -> dict[str, Any]:
    """Per queue item: units expected (from its campaign file), done once, ended unverified
    (no success, a run whose timing could not be confirmed after its attempts: stored with
    that status, so not lost), lost (neither), duplicated (more than one success)."""
    with QueueDB(db) as q:
        hist = {h["id"]: h for h in q.history(100000)}
        tally = q.run_tally()
        retried = sum(n for status, n in tally.items() if status != "success")
        lost = duplicated = done = unverified = 0
        unfinished = []
        for item_id, keys in expected.items():
            row = hist.get(item_id)
            if row is None or row["exit_status"] != "completed":
                unfinished.append(item_id)
            counts: Counter[str] = Counter()
            honest: set[str] = set()
            if row is not None and row["campaign_uid"]:
                counts = Counter(q.success_keys(row["campaign_uid"]))
                honest = q.unverified_keys(row["campaign_uid"])
            done += sum(min(counts[k], 1) for k in keys)
            unverified += sum(1 for k in keys if counts[k] == 0 and k in honest)
            lost += sum(1 for k in keys if counts[k] == 0 and k not in honest)
            duplicated += sum(n - 1 for n in counts.values() if n > 1)
    return {"done": done, "unverified": unverified, "retried": retried, "lost": lost,
            "duplicated": duplicated, "unfinished_items": unfinished}


def unit_keys(path: Path) -> set[str]:
    from hilbench.orchestrator.campaign import load_campaign
    from hilbench.orchestrator.procedure import expand_all

    return {str(u.key) for u in expand_all(load_campaign(path))}


@dataclass
class Throughput:
    """Units per second over the first and the last tenth of the units, by completion order,
    counting only the time the daemon had work: see :func:`throughput`."""

    first: float
    last: float
    tenth: int  # units in a tenth
    idle_s: float  # nothing queued or running (waiting for a schedule to fire)
    outage_s: float  # from each SIGKILL to the first unit done after it
    outages: int


def throughput(done: list[float], work: list[tuple[float, float]],
               kills: list[float]) -> Throughput:
    """Throughput from unit completion times ``done`` (sorted, UTC s).

    The time between two consecutive completions is the second unit's cost, less the part of
    it when no queue item existed (outside every ``work`` span, an item's (added, ended)):
    that is waiting for a schedule, not throughput. A gap holding one of the ``kills`` is the
    restart's outage and is left out whole (its unit too); both are returned apart."""
    spans = sorted(work)
    merged: list[list[float]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])

    def covered(a: float, b: float) -> float:
        return sum(max(0.0, min(b, hi) - max(a, lo)) for lo, hi in merged)

    kill_at = sorted(kills)
    costs: list[float | None] = []  # per gap: busy seconds, or None for an outage
    idle = outage = 0.0
    outages = 0
    for a, b in itertools.pairwise(done):
        if any(a < k <= b for k in kill_at):
            costs.append(None)
            outage += b - a
            outages += 1
            continue
        busy = covered(a, b)
        idle += (b - a) - busy
        costs.append(busy)
    tenth = max(2, len(done) // 10)

    def rate(part: list[float | None]) -> float:
        kept = [c for c in part if c is not None]
        return len(kept) / sum(kept) if kept and sum(kept) > 0 else float("nan")

    return Throughput(rate(costs[: tenth - 1]), rate(costs[-(tenth - 1):]), tenth, idle, outage,
                      outages)


def busy_throughput(db: Path, kills: list[float]) -> Throughput:
    """:func:`throughput` of the successful runs in ``db``, the queue items' history giving
    when the daemon had work."""
    with QueueDB(db) as q:
        done = q.success_times()
        work = [(h["added_at"], h["stopped_at"]) for h in q.history(1_000_000)]
        work += [(i.added_at, time.time()) for i in q.items()]
    return throughput(done, work, kills)


def env_note() -> str:
    return f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
