"""What the daemon benchmarks share: simulated-bench campaign files, a daemon process, and
reading the store for what ran."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psutil

from hilbench.daemon.queue_db import QueueDB

SIM_METER = """
[[instruments]]
id = "dmm"
driver = "keysight34465a"
measures = "cpu0"
simulate = "simulated-cpu"

[instruments.settings]
function = "current"
range = 10.0
nplc = 0.02
autozero = false
sample_interval_s = 0.001
supply_voltage_v = 12.0
"""


def qubo_file(folder: Path, name: str, units: int, timeout_s: float = 0.001) -> Path:
    """A campaign of ``units`` QUBO units (n = 10, 15, 20, 25; SA; ``timeout_s``) on a spawned
    CPU agent measured by the simulated bench meter."""
    nodes = [10, 15, 20, 25]
    seeds = -(-units // len(nodes))
    text = f"""[campaign]
name = "{name}"

[[agents]]
id = "cpu0"
driver = "cpu"
spawn = true

[[qubo]]
agent = "cpu0"
scenario = "fixed_timeout"
nodes = {nodes}
densities = [0.05]
seeds = {list(range(seeds))}
solvers = ["sa"]
timeouts_s = [{timeout_s}]
{SIM_METER}"""
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


class DaemonProc:
    """`hilbench daemon` on ``db`` with a free loopback control port."""

    def __init__(self, db: Path, config: Path | None = None) -> None:
        self.db = db
        self.config = config
        self.proc: subprocess.Popen | None = None
        self.log = open(db.with_suffix(".daemon.out"), "a", encoding="utf-8")  # noqa: SIM115

    def start(self, timeout_s: float = 60) -> None:
        cmd = [sys.executable, "-m", "hilbench", "daemon", "--db", str(self.db),
               "--control", "tcp://127.0.0.1:*"]
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


def successes(db: Path) -> int:
    with QueueDB(db) as q:
        return q.run_tally().get("success", 0)


def accounting(db: Path, expected: dict[int, set[str]]) -> dict[str, Any]:
    """Per queue item: units expected (from its campaign file), done once, lost, duplicated."""
    with QueueDB(db) as q:
        hist = {h["id"]: h for h in q.history(100000)}
        tally = q.run_tally()
        retried = sum(n for status, n in tally.items() if status != "success")
        lost = duplicated = done = 0
        unfinished = []
        for item_id, keys in expected.items():
            row = hist.get(item_id)
            if row is None or row["exit_status"] != "completed":
                unfinished.append(item_id)
            counts: Counter[str] = Counter()
            if row is not None and row["campaign_uid"]:
                counts = Counter(q.success_keys(row["campaign_uid"]))
            done += sum(min(counts[k], 1) for k in keys)
            lost += sum(1 for k in keys if counts[k] == 0)
            duplicated += sum(n - 1 for n in counts.values() if n > 1)
    return {"done": done, "retried": retried, "lost": lost, "duplicated": duplicated,
            "unfinished_items": unfinished}


def unit_keys(path: Path) -> set[str]:
    from hilbench.orchestrator.campaign import load_campaign
    from hilbench.orchestrator.procedure import expand_all

    return {str(u.key) for u in expand_all(load_campaign(path))}


def rates(db: Path) -> tuple[float, float]:
    """Units per second over the first and the last tenth of the successful runs (by start)."""
    with QueueDB(db) as q:
        times = q.success_times()
    tenth = max(2, len(times) // 10)

    def rate(part: list[float]) -> float:
        return (len(part) - 1) / (part[-1] - part[0]) if part[-1] > part[0] else float("nan")

    return rate(times[:tenth]), rate(times[-tenth:])


def env_note() -> str:
    return f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
