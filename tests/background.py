"""Tests in the background of the serial phase: they run while a serial test measures, in
Linux's idle scheduling class (``SCHED_IDLE``), so they use only the CPU time the serial test
leaves and give way the moment one of its processes wakes.

The serial phase (tests/alone.py) leaves most of the two cores idle (0.68 of 2 busy on
average, README's test command, 2026-12-01), while the other workers used to wait for it. A
task of the idle class is preempted by any normal task that wakes, so the serial test's
processes still find a core at once; what the background takes is the time nobody else wants.

Everything a background test starts inherits the class. When the serial phase ends the
parallel phase fills both cores, and an idle-class task would starve there, so every task of
this session still in the class is raised back to normal then (:func:`raise_session`): by the
last serial test, and by a watcher thread in each worker running a background test.

Leaving the idle class needs ``CAP_SYS_NICE`` or an ``RLIMIT_NICE`` that allows nice 0 (Linux
treats the class as nice 20): root has it, most users do not. Without it (or off Linux)
:func:`available` is False and the other workers wait for the serial phase as before.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

_available: bool | None = None


def _set(tid: int, policy: int) -> None:
    os.sched_setscheduler(tid, policy, os.sched_param(0))


def available() -> bool:
    """Whether this process may enter the idle class and leave it again (tried once, on a
    thread of its own, so the caller's thread is never left in it)."""
    global _available
    if _available is None:
        if not hasattr(os, "SCHED_IDLE"):
            _available = False
            return False
        outcome: list[bool] = []

        def probe() -> None:
            tid = threading.get_native_id()
            try:
                _set(tid, os.SCHED_IDLE)
                _set(tid, os.SCHED_OTHER)
                outcome.append(True)
            except OSError:
                outcome.append(False)

        thread = threading.Thread(target=probe, name="sched-idle-probe")
        thread.start()
        thread.join()
        _available = bool(outcome and outcome[0])
    return _available


def _threads(pid: int | str = "self") -> list[int]:
    try:
        return [int(tid) for tid in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def _lower_threads(keep: set[int]) -> None:
    for tid in _threads():
        if tid not in keep:
            with contextlib.suppress(OSError):  # a thread that ended meanwhile
                _set(tid, os.SCHED_IDLE)


def _raise_idle_threads(pid: int | str) -> None:
    for tid in _threads(pid):
        with contextlib.suppress(OSError):
            if os.sched_getscheduler(tid) == os.SCHED_IDLE:
                _set(tid, os.SCHED_OTHER)


def _in_session(pid: str, marker: bytes) -> bool:
    """Whether the process carries this session's folder in its environment, or descends from
    one that does (a child started with an environment of its own)."""
    for _ in range(64):  # up the parent chain
        try:
            if marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                return True
            parent = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            return False
        if parent in ("0", "1", pid):
            return False
        pid = parent
    return False


def raise_session(env: str, folder: str) -> int:
    """Raise every idle-class thread of this session's processes back to the normal class;
    returns how many processes were looked at."""
    marker = f"{env}={folder}".encode()
    seen = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            idle = any(os.sched_getscheduler(tid) == os.SCHED_IDLE for tid in _threads(entry))
        except OSError:
            continue
        if idle and _in_session(entry, marker):
            _raise_idle_threads(entry)
            seen += 1
    return seen


@contextlib.contextmanager
def lowered(env: str, folder: str, phase_over: Callable[[], bool]) -> Iterator[None]:
    """Run the block in the idle class; a watcher thread (kept in the normal class) raises the
    whole session back the moment ``phase_over()`` says the serial phase has ended."""
    stop = threading.Event()
    started = threading.Event()
    watcher_tid: list[int] = []

    def watch() -> None:
        watcher_tid.append(threading.get_native_id())
        started.set()
        while not stop.wait(0.05):
            if phase_over():
                raise_session(env, folder)
                return

    watcher = threading.Thread(target=watch, name="background-watcher", daemon=True)
    watcher.start()
    started.wait()
    _lower_threads(keep=set(watcher_tid))
    try:
        yield
    finally:
        stop.set()
        _raise_idle_threads("self")
        watcher.join()
