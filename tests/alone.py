"""Timing-sensitive tests run alone, first, while the rest of the suite runs in parallel after.

A readers-writer lock across the pytest-xdist workers of one session, made of two flock files
in a folder the controller creates (``$HILBENCH_TEST_SESSION``; the workers inherit it): a test
marked ``serial`` takes the turnstile and then the room exclusively; any other test passes
through the turnstile and takes the room shared. A waiting serial test holds the turnstile, so
no new test starts beside it, and it starts once the tests already running end: it never
starves. Without xdist there is one process, and the lock is never contended.

The serial tests are also a phase of their own: collection puts them first (:func:`order`),
so they land at the head of one worker's queue, and every other test waits before its turn
until all of them have ended (:func:`turn` counts them in ``serial-done``). Without that phase
a serial test waited for whatever ran beside it to end — up to a minute for the suite's
longest tests — while every other worker stood idle behind the turnstile.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ENV = "HILBENCH_TEST_SESSION"
# A serial test that never counts itself (its worker crashed, xdist rescheduled it behind
# tests that wait for it) must not hang the session: past this the others go on.
PHASE_WAIT_S = 900.0
_serial_total = 0


def start_session() -> str:
    """A fresh lock folder for this session (a nested pytest run gets its own); returns it."""
    folder = tempfile.mkdtemp(prefix="hilbench-test-session-")
    os.environ[ENV] = folder
    return folder


def is_serial(item: pytest.Item) -> bool:
    return item.get_closest_marker("serial") is not None


def order(items: list[pytest.Item], seconds: dict[str, float]) -> None:
    """Serial tests first, then each test file by its recorded time, longest first (a long
    file started last ends last, with the other workers idle); a file's tests stay together,
    in their own order, so their module fixtures are made once."""
    per_file: dict[str, float] = {}
    for item in items:
        per_file[item.nodeid.split("::")[0]] = (
            per_file.get(item.nodeid.split("::")[0], 0.0) + seconds.get(item.nodeid, 0.0))
    position = {item.nodeid: i for i, item in enumerate(items)}
    items.sort(key=lambda it: (not is_serial(it), -per_file[it.nodeid.split("::")[0]],
                               position[it.nodeid]))


def count_serial(items: list[pytest.Item]) -> None:
    """The serial phase's size, from this process's final selection (every worker collects the
    same items)."""
    global _serial_total
    _serial_total = sum(1 for item in items if is_serial(item))


@contextlib.contextmanager
def _flock(path: Path, mode: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _serial_done(folder: str) -> int:
    try:
        return Path(folder, "serial-done").stat().st_size
    except FileNotFoundError:
        return 0


def _wait_for_serial_phase(folder: str) -> None:
    deadline = time.monotonic() + PHASE_WAIT_S
    while _serial_done(folder) < _serial_total:
        if time.monotonic() > deadline:
            print(f"tests/alone.py: {_serial_done(folder)} of {_serial_total} serial tests "
                  f"counted after {PHASE_WAIT_S:.0f} s; going on", file=sys.stderr)
            return
        time.sleep(0.05)


@contextlib.contextmanager
def turn(serial: bool) -> Iterator[None]:
    """Hold the session's room: alone for a serial test, shared for any other (after the
    serial phase)."""
    folder = os.environ.get(ENV)
    if not folder:
        yield
        return
    turnstile, room = Path(folder, "turnstile"), Path(folder, "room")
    if serial:
        try:
            with _flock(turnstile, fcntl.LOCK_EX), _flock(room, fcntl.LOCK_EX):
                yield
        finally:
            fd = os.open(Path(folder, "serial-done"), os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                         0o600)
            try:
                os.write(fd, b".")
            finally:
                os.close(fd)
    else:
        _wait_for_serial_phase(folder)
        with _flock(turnstile, fcntl.LOCK_SH):
            pass
        with _flock(room, fcntl.LOCK_SH):
            yield
