"""One campaign gate for `queue add`, `schedule add` and each schedule fire: what `hilbench
run` refuses is never queued (exit 2, one line naming the file and key, nothing stored), and a
scheduled snapshot that stopped being runnable is refused at the fire, with the reason in the
queue's history."""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from hilbench.daemon.config import DaemonConfig
from hilbench.daemon.manager import Daemon
from hilbench.daemon.queue_db import QueueDB
from tests.campaign_toml import agent, campaign, qubo, write_campaign
from tests.subprocesses import hilbench_here

REFUSED = {
    # name: (campaign text, words the one line says)
    "solver typo": (campaign(agent(), qubo(solvers=["sa", "anytme"])),
                    "unknown solver 'anytme' (the driver has sa, tabu, anytime)"),
    "nodes 1e9": (campaign(agent(), qubo(nodes=[1_000_000_000])),
                  "nodes: 1000000000 is too large"),
    "repetitions 1e12": (campaign(agent(), qubo(), repetitions=1_000_000_000_000),
                         "[campaign] repetitions: 1000000000000 × 1 unit(s)"),
    "nodes = 1e9 as written": (campaign(agent(), qubo()).replace("nodes = [10]", "nodes = [1e9]"),
                               "nodes[1]: 1000000000.0 is not an integer"),
    "5000-deep TOML": ("a = " + "[" * 5000 + "]" * 5000 + "\n",
                       "nested deeper than 64 levels"),
}


@pytest.mark.parametrize("name", list(REFUSED))
@pytest.mark.parametrize("command", [["queue", "add"],
                                     ["schedule", "add", "--cron", "0 22 * * *", "--tz", "UTC"]])
def test_queue_and_schedule_add_refuse_what_run_refuses(tmp_path, command, name):
    text, words = REFUSED[name]
    path = tmp_path / "c.toml"
    path.write_text(text)
    db = tmp_path / "q.sqlite"
    done = hilbench_here(*command, path, "--db", db)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and words in lines[0], lines
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert hilbench_here("run", path, "--db", tmp_path / "r.sqlite", "-q").stderr == done.stderr
    if db.exists():  # nothing queued nor scheduled
        listed = json.loads(hilbench_here("queue", "list", "--db", db, "--json").stdout)
        assert listed == []
        assert json.loads(hilbench_here("schedule", "list", "--db", db, "--json").stdout) == []


def _t(*args: int) -> float:
    return datetime(*args, tzinfo=ZoneInfo("UTC")).timestamp()


def test_a_schedule_whose_campaign_became_invalid_is_refused_at_the_fire(tmp_path):
    """The spawned agent's interpreter is gone by the fire (a venv removed): the fire's item
    goes to the history as failed, naming the interpreter; nothing runs."""
    python = tmp_path / "venv-python"
    os.symlink(sys.executable, python)
    path = write_campaign(tmp_path, campaign(agent(python=str(python)), qubo(), name="nightly"))
    db = tmp_path / "s.sqlite"
    added = hilbench_here("schedule", "add", path, "--cron", "0 22 * * *", "--tz", "UTC",
                     "--db", db)
    assert added.returncode == 0, added.stderr
    python.unlink()
    with QueueDB(db) as q:  # the schedule as added, its last fire moved before the test clock
        [s] = q.schedules()
        q.add_schedule(name=s["name"], source_path=s["source_path"], content=s["content"],
                       cron=s["cron"], tz=s["tz"], missed="skip", trials=None, record=None,
                       priority=0, now=_t(2026, 6, 1, 21, 59))
        q.remove_schedule(s["id"])
    clock = [_t(2026, 6, 1, 21, 59, 30)]
    daemon = Daemon(DaemonConfig(), db, clock=lambda: clock[0])
    try:
        daemon._tick_schedules(clock[0])
        clock[0] = _t(2026, 6, 1, 22, 0, 1)
        daemon._tick_schedules(clock[0])
    finally:
        daemon.control.close()
    with QueueDB(db) as q:
        assert q.items() == []
        [row] = q.history()
    assert row["exit_status"] == "failed" and row["outcome"] == "invalid campaign"
    assert row["message"].startswith("refused at the fire of schedule ")
    assert "no Python interpreter at" in row["message"] and str(python) in row["message"]
    shown = hilbench_here("queue", "history", "--db", db).stdout
    assert "(invalid campaign)  refused at the fire" in shown and "no Python interpreter" in shown
