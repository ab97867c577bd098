"""Daemon ↔ worker messages are typed: what the worker writes decodes to the same Structs on
the daemon's side, and a line that is not a report (garbage, an unknown event, a wrong type, a
runaway line) is logged and counted, never trusted and never fatal."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

from hilbench.daemon.messages import (
    MAX_LINE,
    CampaignStarted,
    Ended,
    Pause,
    ReportReader,
    RunItem,
    UnitEnded,
    decode_command,
    encode,
)
from hilbench.daemon.queue_db import Item
from hilbench.daemon.supervised import WorkerProcess
from hilbench.orchestrator.session import Outcome, SessionOutcome

GOOD = [
    CampaignStarted(uid="c1", total=3, done=1, plan=[("qubo", "g", 2, 0.5, 4)], message="m"),
    UnitEnded(key="k", procedure="qubo", run_uid="r", status="success", duration_s=0.1),
    Ended(session=SessionOutcome(Outcome.STORE_UNWRITABLE, "disk is full", "c1", completed=5)),
]
BAD = [
    "not json at all",
    '{"event": "launch_missiles", "t": 1}',
    '{"event": "unit", "t": 1, "key": "k", "procedure": "q", "run_uid": "r", '
    '"status": "success", "duration_s": "slow"}',
    '{"event": "end", "t": 1, "session": {"outcome": "exploded", "message": ""}}',
    '{"event": "campaign", "t": 1, "uid": "c", "total": 1, "done": 0, "plan": [], '
    '"message": "", "extra": 1}',
    "[" * 100,
    "x" * (MAX_LINE + 1),
]
RUNNING = Item(id=1, priority=0, position=1.0, state="running", name="n", source_path="p",
               content="", content_hash="h", trials=None, record=None, schedule_id=None,
               added_at=0.0, started_at=None, campaign_uid=None, attempts=0, not_before=0.0,
               message="")


def _worker_printing(lines: list[str], until: Path | None = None) -> subprocess.Popen:
    """A process in a worker's place on the daemon's pipe: prints ``lines``, then exits (or,
    with ``until``, once that file exists)."""
    script = ("import sys, time, pathlib\nfor line in sys.argv[2:]:\n    print(line, flush=True)\n"
              "while sys.argv[1] and not pathlib.Path(sys.argv[1]).exists():\n"
              "    time.sleep(0.01)\n")
    return subprocess.Popen([sys.executable, "-c", script, str(until or ""), *lines],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def test_reports_decode_to_what_was_sent_and_bad_lines_are_counted():
    reader = ReportReader(pid=1)
    assert [reader.decode(encode(m) + "\n") for m in GOOD] == GOOD
    assert [reader.decode(line) for line in BAD] == [None] * len(BAD)
    assert reader.rejected == len(BAD)
    assert reader.decode("\n") is None and reader.rejected == len(BAD)  # blank: nothing


def test_commands_round_trip_and_anything_else_is_ignored():
    assert decode_command(encode(RunItem(id=7))) == RunItem(id=7)
    assert decode_command(encode(Pause()) + "\n") == Pause()
    assert decode_command("pause") is None and decode_command('{"command": "rm"}') is None


def test_a_worker_writing_garbage_is_read_to_its_end_by_the_daemon():
    """A real process on the daemon's pipe: the garbage is counted, the reports and the end
    get through, the reader thread survives."""
    proc = _worker_printing([*BAD[:5], encode(GOOD[0]), encode(GOOD[2])])
    w = WorkerProcess(RUNNING, proc)
    deadline = time.monotonic() + 30
    while w.finished() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert (w.progress.campaign_uid, w.progress.total, w.progress.done) == ("c1", 3, 1)
    assert w.end == GOOD[2].session
    assert w.decoder.rejected == 5


def test_a_report_counts_in_the_status_the_moment_it_is_read(tmp_path):
    """`hilbench status` shows what the worker last said even while the daemon's loop is held
    up (by a busy queue database, say): the reader thread applies each report under the
    status lock, with no turn of the loop in between. Here no loop runs at all."""
    go = tmp_path / "go"
    proc = _worker_printing([encode(GOOD[0]), encode(GOOD[1])], until=go)
    lock = threading.Lock()
    w = WorkerProcess(RUNNING, proc, lock=lock)
    try:
        deadline = time.monotonic() + 30
        while True:
            with lock:
                done = w.progress.to_dict()["done"]
            if done == 2:
                break
            assert time.monotonic() < deadline, f"done stayed {done} while the worker ran"
            time.sleep(0.02)
        assert proc.poll() is None  # the worker still runs: nothing waited for its end
        assert w.progress.last_unit["run_uid"] == "r"
    finally:
        go.touch()
        proc.wait(30)
