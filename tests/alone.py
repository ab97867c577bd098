"""Timing-sensitive tests run alone while the rest of the suite runs in parallel.

A readers-writer lock across the pytest-xdist workers of one session, made of two flock files
in a folder the controller creates (``$HILBENCH_TEST_SESSION``; the workers inherit it): a test
marked ``serial`` takes the turnstile and then the room exclusively; any other test passes
through the turnstile and takes the room shared. A waiting serial test holds the turnstile, so
no new test starts beside it, and it starts once the tests already running end: it never
starves. Without xdist there is one process, and the lock is never contended.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

ENV = "HILBENCH_TEST_SESSION"


def start_session() -> str:
    """A fresh lock folder for this session (a nested pytest run gets its own); returns it."""
    folder = tempfile.mkdtemp(prefix="hilbench-test-session-")
    os.environ[ENV] = folder
    return folder


@contextlib.contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # closing releases the lock


@contextlib.contextmanager
def turn(serial: bool) -> Iterator[None]:
    """Hold the session's room: alone for a serial test, shared for any other."""
    folder = os.environ.get(ENV)
    if not folder:
        yield
        return
    turnstile, room = Path(folder, "turnstile"), Path(folder, "room")
    if serial:
        with _flock(turnstile, fcntl.LOCK_EX), _flock(room, fcntl.LOCK_EX):
            yield
    else:
        with _flock(turnstile, fcntl.LOCK_SH):
            pass
        with _flock(room, fcntl.LOCK_SH):
            yield
