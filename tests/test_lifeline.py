"""A spawned process acts on its stop signal however busy its main thread is with locks.

An agent whose parent was SIGKILLed hung for good: its SIGTERM handler called
``threading.Event.set`` while the main thread was inside ``set`` of the same event (the handler
runs in the main thread, between two bytecodes, and the event's lock is not reentrant)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

# The main thread takes the semaphore's lock all the time, as a serving loop takes its events'
# locks; each SIGTERM releases the semaphore once. With ``hits.release`` as a plain handler this
# deadlocks within a few signals (the handler waits for a lock its own thread holds).
_CHILD = """
import os, sys, threading
from hilbench.lifeline import call_on_signal

hits = threading.Semaphore(0)
call_on_signal(hits.release)
print("ready", flush=True)
seen = 0
while not (seen and os.path.exists(sys.argv[1])):  # the test makes the file after its signals
    if hits.acquire(timeout=0.0):
        seen += 1
print(f"seen {seen}", flush=True)
"""


def _run(tmp_path: Path, signals: int) -> str:
    done = tmp_path / "signals-sent"
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(done)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        for _ in range(signals):
            child.send_signal(signal.SIGTERM)
            time.sleep(0.002)
        time.sleep(0.1)  # the last signal handled before the child may end (and drop its handler)
        done.touch()
        out, _ = child.communicate(timeout=20)  # hung: TimeoutExpired fails the test
        assert child.returncode == 0
        return out
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_a_storm_of_sigterm_while_the_main_thread_takes_the_lock_never_hangs_it(tmp_path):
    out = _run(tmp_path, signals=300)
    assert out.startswith("seen ") and int(out.split()[1]) >= 1


def test_one_sigterm_reaches_the_callback(tmp_path):
    assert _run(tmp_path, signals=1).strip() == "seen 1"
