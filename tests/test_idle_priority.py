"""The suite's idle priority beside the serial phase (tests/idle_priority.py): what a test
starts then inherits it, and the watcher gives the whole tree normal priority back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import idle_priority

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import os, subprocess, sys, threading
from tests import idle_priority as ip

ended = threading.Event()
ip.restore_when(ended.is_set, poll_s=0.01)
ip.lower()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
try:
    print(os.sched_getscheduler(0), os.sched_getscheduler(child.pid), flush=True)
    ended.set()
    for _ in range(500):
        if os.sched_getscheduler(child.pid) != os.SCHED_IDLE:
            break
        threading.Event().wait(0.01)
    print(os.sched_getscheduler(0), os.sched_getscheduler(child.pid), flush=True)
finally:
    child.kill()
"""


@pytest.mark.skipif(not idle_priority.available(), reason="needs root or RLIMIT_NICE >= 20")
def test_a_lowered_test_and_what_it_starts_are_idle_until_the_phase_ends():
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    during, after = (tuple(map(int, line.split())) for line in done.stdout.splitlines())
    assert during == (idle_priority.os.SCHED_IDLE,) * 2
    assert after == (idle_priority.os.SCHED_OTHER,) * 2


def test_one_worker_at_most_takes_the_seat_beside_the_serial_phase(tmp_path):
    """The first worker to ask sits beside the phase; the others wait for it to end, so one
    core stays mostly free for the serial tests' wake-ups."""
    from tests import alone

    taken = [alone._take_the_seat(str(tmp_path)) for _ in range(3)]  # one open file each
    try:
        assert taken == [True, False, False]
    finally:
        for fd in alone._seat:
            os.close(fd)
        alone._seat.clear()
