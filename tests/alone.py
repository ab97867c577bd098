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

Tests marked ``quiet`` wait nearly all their time (the Xylo chip AFE's real-time playback: 1.7 s
of CPU in 78 s) and take no lock: collection puts them at the head of the other workers' lanes,
so they run beside the serial phase, whose tests leave most of the machine idle (40 % of 2 cores,
sampled in CI). Quiet means a few per cent of a core: the 60 s push cut-off (19 s of CPU in
71 s) and the 60 s replay session (14 s in 76 s) beside the serial phase let three of its liars
and power checks fail in one run.
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


def is_quiet(item: pytest.Item) -> bool:
    return item.get_closest_marker("quiet") is not None and not is_serial(item)


def order(items: list[pytest.Item], seconds: dict[str, float], workers: int) -> None:
    """Serial tests first; then the rest dealt into one lane per worker, balanced by recorded
    time, each lane's files longest first (a long test started last ends last, with the other
    workers idle), a file's tests together so its module fixtures are made once.

    pytest-xdist's work stealing hands worker i the i-th equal-count slice of this order before
    any stealing, so the lanes are cut to those counts: without it, the longest files all fell
    into the first worker's slice, behind the serial phase, and ended last."""
    serial = [item for item in items if is_serial(item)]
    quiet = [item for item in items if is_quiet(item)]
    rest = [item for item in items if not is_serial(item) and not is_quiet(item)]
    files: dict[str, list[pytest.Item]] = {}
    for item in rest:
        files.setdefault(item.nodeid.split("::")[0], []).append(item)

    def cost(tests: list[pytest.Item]) -> float:
        return sum(seconds.get(t.nodeid, 0.5) for t in tests)

    capacities, left = [], len(items)
    for i in range(max(1, workers)):  # the slices work stealing cuts
        capacities.append(left // (max(1, workers) - i))
        left -= capacities[-1]
    lanes: list[list[list[pytest.Item]]] = [[] for _ in capacities]
    used = [0] * len(capacities)
    load = [0.0] * len(capacities)
    heads = [0] * len(capacities)  # groups at a lane's head: the serial phase, quiet tests
    if serial:
        lanes[0].append(serial)
        used[0], load[0], heads[0] = len(serial), cost(serial), 1
    beside = list(range(1, len(lanes))) or [0]  # lanes that run beside the serial phase
    for test in sorted(quiet, key=lambda t: cost([t]), reverse=True):
        lane = min(beside, key=lambda i: load[i])
        lanes[lane].insert(heads[lane], [test])
        heads[lane] += 1
        used[lane] += 1
        load[lane] += cost([test])
    for tests in sorted(files.values(), key=cost, reverse=True):
        while tests:
            open_lanes = [i for i in range(len(lanes)) if used[i] < capacities[i]] or [-1]
            lane = min(open_lanes, key=lambda i: load[i])
            room = capacities[lane] - used[lane] if lane >= 0 else len(tests)
            part, tests = tests[:room], tests[room:]
            lanes[lane].append(part)
            used[lane] += len(part)
            load[lane] += cost(part)
    ordered: list[pytest.Item] = []
    for lane, head in zip(lanes, heads, strict=True):
        ordered += [t for group in lane[:head] for t in group]
        ordered += [t for group in sorted(lane[head:], key=cost, reverse=True)
                    for t in group]
    items[:] = ordered


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
def turn(serial: bool, quiet: bool = False) -> Iterator[None]:
    """Hold the session's room: alone for a serial test, shared for any other (after the
    serial phase); a quiet test holds nothing and waits for nothing."""
    folder = os.environ.get(ENV)
    if not folder or quiet:
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
