"""The daemon's spare worker: started while the bench is idle, it runs the next queued item
without Python's start-up, and it never outlives the daemon."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil
import pytest

from hilbench.store.paths import logs_dir
from tests.daemon.conftest import history, qubo_campaign
from tests.subprocesses import hilbench, units_of


def _workers(pid: int) -> list[psutil.Process]:
    found = []
    for child in psutil.Process(pid).children():
        try:
            if "hilbench.daemon.worker" in child.cmdline():
                found.append(child)
        except psutil.Error:  # gone since it was listed
            continue
    return found


def _wait_for_workers(pid: int, other_than: int = 0) -> list[psutil.Process]:
    deadline = time.monotonic() + 60
    while True:
        workers = [w for w in _workers(pid) if w.pid != other_than]
        if workers:
            return workers
        assert time.monotonic() < deadline, "the idle daemon started no spare worker"
        time.sleep(0.1)


@pytest.mark.slow
def test_the_idle_daemons_spare_worker_runs_the_next_item_and_ends_with_the_daemon(
        tmp_path, daemon_at):
    db = tmp_path / "d.sqlite"
    d = daemon_at(db).start()
    [spare] = _wait_for_workers(d.proc.pid)
    path = qubo_campaign(tmp_path, "next", 2)
    assert hilbench("queue", "add", path, "--db", db).returncode == 0
    d.wait_until(lambda s: history(db) and s["daemon"]["state"] == "idle", "the item finished")
    [row] = history(db)
    assert row["exit_status"] == "completed" and units_of(db, row["run_uids"]) == 2
    log = (logs_dir(db) / "daemon.log").read_text()
    assert f"queue item {row['id']} (next) started: worker pid {spare.pid}" in log
    # idle again: another spare waits; stopping the daemon ends it
    waiting = _wait_for_workers(d.proc.pid, other_than=spare.pid)
    d.stop()
    _gone, alive = psutil.wait_procs(waiting, timeout=10)
    assert alive == []


def test_a_spare_whose_daemon_closes_its_input_ends_having_done_nothing(tmp_path):
    db = tmp_path / "never.sqlite"
    done = subprocess.run([sys.executable, "-m", "hilbench.daemon.worker", "--db", str(db)],
                          input="", capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and not db.exists()
