"""The serial phase's background (tests/background.py): a test run there is in the idle class
with everything it starts, and the session's tasks leave the class when the phase ends."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests import background

# Run in a process of its own: a worker running this test may itself be in the background,
# and leaving the block raises every thread of the process that runs it.
SCRIPT = textwrap.dedent("""
    import os, subprocess, sys, threading, time
    from tests import background

    over = threading.Event()
    env = {**os.environ, "HILBENCH_BACKGROUND_PROBE": sys.argv[1]}
    with background.lowered("HILBENCH_BACKGROUND_PROBE", sys.argv[1], over.is_set):
        inside = os.sched_getscheduler(0)
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], env=env)
        child_inside = os.sched_getscheduler(child.pid)
        over.set()
        deadline = time.monotonic() + 10
        while os.sched_getscheduler(child.pid) != os.SCHED_OTHER and time.monotonic() < deadline:
            time.sleep(0.01)
        child_after = os.sched_getscheduler(child.pid)
    child.kill()
    child.wait()
    print(inside == os.SCHED_IDLE, child_inside == os.SCHED_IDLE, child_after == os.SCHED_OTHER,
          os.sched_getscheduler(0) == os.SCHED_OTHER)
""")


def test_a_background_test_and_its_children_leave_the_idle_class_when_the_phase_ends(tmp_path):
    if not background.available():
        pytest.skip("this user may not leave Linux's idle scheduling class (needs CAP_SYS_NICE "
                    "or RLIMIT_NICE); the other workers wait for the serial phase instead")
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    inside, child_inside, child_after, after = done.stdout.split()
    assert inside == "True" and child_inside == "True"  # the test and what it starts
    assert child_after == "True"  # raised back by the watcher, by its session's environment
    assert after == "True"  # and the test's own threads when it ends
