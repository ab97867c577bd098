"""`hilbench run` stopped by SIGKILL, SIGTERM or Ctrl-C at three points (agent start-up, mid-run,
instrument acquisition): nothing it started outlives it, the store says what happened, and the
same command resumes so that every unit ends with exactly one success. Real processes only."""

from __future__ import annotations

import os
import shlex
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from hilbench.clock import now
from hilbench.orchestrator.runner import UNFINISHED_REASON
from hilbench.store import Store
from tests.campaign_toml import agent, campaign, keysight, qubo
from tests.subprocesses import hilbench_command, run_campaign, start_campaign, unit_runs

pytestmark = pytest.mark.slow

def lifecycle_campaign(timeout_s: float, meter: bool = False) -> str:
    """Two QUBO runs on a spawned CPU agent, the first of ``timeout_s`` (where the signal lands),
    the second (still to come when it does) of at most 0.2 s; with ``meter``, a simulated
    Keysight reads it every millisecond."""
    tables = [agent(), qubo(seeds=[0], timeouts_s=[timeout_s]),
              qubo(seeds=[1], timeouts_s=[min(timeout_s, 0.2)])]
    if meter:
        settings = {"range": 10.0, "nplc": 0.02, "autozero": False, "sample_interval_s": 0.001}
        tables.append(keysight(simulate="simulated-cpu", noise_std_w=0.01, settings=settings))
    return campaign(*tables, name="lifecycle")


def _query(db: Path, sql: str) -> list[tuple]:
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=5) as conn:
            return conn.execute(sql).fetchall()
    except sqlite3.OperationalError:  # schema not created yet
        return []


def agent_starting(proc: subprocess.Popen, db: Path) -> bool:
    """The agent process exists and no run has begun."""
    return _has_agent(proc.pid) and not _query(db, "SELECT 1 FROM runs")


def _has_agent(pid: int) -> bool:
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return False
    for child in children:
        try:
            if "agent" in child.cmdline():
                return True
        except psutil.Error:  # gone, or a zombie, since it was listed
            continue
    return False


def run_open(proc: subprocess.Popen, db: Path) -> bool:
    """The first run has begun and not stopped (a later unit is still to come, so a slow test
    machine cannot signal a campaign that has just finished)."""
    return _query(db, "SELECT count(*), sum(exit_status IS NULL) FROM runs") == [(1, 1)]


def solving(proc: subprocess.Popen, db: Path, for_s: float = 0.0) -> bool:
    """The first run's QUBO "solve" phase (the phase an instrument measures) has been open for
    ``for_s`` on the store's own clock. The stop point is a state of the store, not a sleep: a
    signal sent now lands inside a solve that lasts UNIT_S, however loaded the machine."""
    rows = _query(db, "SELECT t_start FROM phases WHERE name = 'solve' AND t_stop IS NULL")
    return bool(rows) and now() - rows[0][0] >= for_s and run_open(proc, db)


UNIT_S = 1.5  # each solve's fixed timeout: the margin between the stop point and its end

POINTS: dict[str, tuple[Callable[[subprocess.Popen, Path], bool], str]] = {
    "agent-start-up": (agent_starting, lifecycle_campaign(0.2)),
    "mid-run": (solving, lifecycle_campaign(UNIT_S)),
    "acquisition": (
        lambda proc, db: solving(proc, db, for_s=0.2),  # the meter has been acquiring 0.2 s
        lifecycle_campaign(UNIT_S, meter=True),
    ),
}


class Descendants:
    """Every process below ``pid``, remembered from the moment it is seen until the end."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.seen: dict[int, psutil.Process] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def scan(self) -> None:
        try:
            for child in self.root.children(recursive=True):
                self.seen.setdefault(child.pid, child)
        except psutil.NoSuchProcess:
            pass

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.scan()
            time.sleep(0.01)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def alive(self) -> list[str]:
        """The processes seen that still run, each with its status and command line. One whose
        command line reads empty has released its memory: it is exiting (a loaded run listed
        '428 ' 2 s after SIGTERM), past running any code of ours."""
        living = []
        for p in self.seen.values():
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE and p.cmdline():
                    living.append(f"{p.pid} {p.status()} {' '.join(p.cmdline())}")
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                pass
        return living


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT],
                         ids=["SIGKILL", "SIGTERM", "SIGINT"])
@pytest.mark.parametrize("point", list(POINTS))
def test_stopped_campaign_leaves_no_process_and_resumes(tmp_path, point, sig):
    reached, text = POINTS[point]
    path = tmp_path / "c.toml"
    path.write_text(text)
    db = tmp_path / "l.sqlite"
    proc = start_campaign(path, db)
    tree = Descendants(proc.pid)
    _out, err = _signal_when(proc, tree, lambda: reached(proc, db), sig, point)
    assert tree.seen, "hilbench started no process"
    assert tree.alive() == [], f"still alive 2 s after {sig.name}"

    open_runs = [r for r in _runs(db) if r["status"] == "incomplete"]
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
    else:
        # A clean stop: exit 128 + signal, the run in progress aborted with the reason, a hint.
        assert proc.returncode == 128 + sig, (err, _out, _runs(db))
        assert "to resume: " + shlex.join(hilbench_command("run", path, "--db", db)) in err
        assert open_runs == []
        aborted = [r for r in _runs(db) if r["status"] == "abort"]
        if point != "agent-start-up":
            assert [r["reason"] for r in aborted] == [f"interrupted by {sig.name}"]
        with Store(db) as store:
            assert [c["status"] for c in store.campaigns()] == ["abort"]

    again = run_campaign(path, db, timeout=120)
    assert again.returncode == 0, again.stderr
    runs = _runs(db)
    assert all(r["status"] != "incomplete" for r in runs)
    successes = [r["unit_key"] for r in runs if r["status"] == "success"]
    assert sorted(successes) == sorted(set(successes)) and len(successes) == 2
    for run in open_runs:  # left open by the killed orchestrator: closed by the resume
        assert {r["uid"]: r for r in runs}[run["uid"]]["status"] == "abort"
        assert {r["uid"]: r for r in runs}[run["uid"]]["reason"] == UNFINISHED_REASON
    with Store(db) as store:
        campaigns = store.campaigns()
    assert [c["status"] for c in campaigns] == ["success"] and campaigns[0]["resumes"] == 1


def _signal_when(
    proc: subprocess.Popen, tree: Descendants, reached: Callable[[], bool], sig: signal.Signals,
    what: str,
) -> tuple[str, str]:
    """Watch hilbench's process tree until ``reached()``, send ``sig``, and return its stdout
    and stderr no earlier than 2 s after the signal (the time its processes have to be gone)."""
    try:
        deadline = time.monotonic() + 90
        while True:
            tree.scan()
            if reached():
                tree.scan()  # whatever appeared while checking
                break
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, f"never reached {what}"
            time.sleep(0.01)
        os.kill(proc.pid, sig)
        t_signal = time.monotonic()
        out, err = proc.communicate(timeout=30)
    finally:
        tree.stop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    time.sleep(max(0.0, t_signal + 2.0 - time.monotonic()))
    return out, err


def _runs(db: Path) -> list[dict]:
    with Store(db) as store:
        return unit_runs(store)


def test_ctrl_c_stops_the_demo_as_documented(tmp_path):
    """README's exit-code table holds for `hilbench demo` too (its 180 units cannot finish in
    the moment between the first stored run and the signal)."""
    db = tmp_path / "demo.sqlite"
    proc = subprocess.Popen(hilbench_command("demo", "--db", db, "-q"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tree = Descendants(proc.pid)

    def stored_a_run() -> bool:
        return bool(_query(db, "SELECT 1 FROM runs WHERE exit_status IS NOT NULL"))

    _out, err = _signal_when(proc, tree, stored_a_run, signal.SIGINT, "a stored run")
    assert proc.returncode == 130, err
    assert "to resume: " + shlex.join(hilbench_command("demo", "--db", db)) in err
    assert tree.seen and tree.alive() == []
    with Store(db) as store:
        assert [c["status"] for c in store.campaigns()] == ["abort"]
        assert [r["status"] for r in unit_runs(store)
                if r["status"] not in ("success", "abort")] == []
