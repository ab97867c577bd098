"""Run a worker's tests at idle priority beside the serial phase, and give their processes
their normal priority back once it ends.

The serial phase (tests/alone.py) keeps about 1.3 of 2 cores idle for minutes: its tests wait
on real-time windows. A test started then runs with the calling thread under ``SCHED_IDLE``
and the idle I/O class, and every process it starts inherits both, so the kernel gives the
serial test the CPU the moment it wakes (a normal task preempts an idle one on wakeup) and
the disk before them. When the phase ends a watcher thread puts every thread of the worker's
process tree back to ``SCHED_OTHER`` and the best-effort I/O class, so a daemon started during
the phase is not starved by the other workers afterwards.

Going back from ``SCHED_IDLE`` needs ``CAP_SYS_NICE`` or an ``RLIMIT_NICE`` of 20 (Linux),
so without them nothing runs beside the serial phase (:func:`available` is False).
"""

from __future__ import annotations

import ctypes
import os
import resource
import threading
from collections.abc import Callable
from pathlib import Path

_IOPRIO_SET = 251  # x86_64 syscall number (asm/unistd_64.h)
_IOPRIO_WHO_PROCESS = 1
_IOPRIO_IDLE = 3 << 13
_IOPRIO_NONE = 0  # back to the default: best effort, from the CPU nice value


def available() -> bool:
    """True when this process may lower its priority and raise it again (Linux, x86_64, root
    or RLIMIT_NICE >= 20)."""
    if not hasattr(os, "SCHED_IDLE") or os.uname().machine != "x86_64":
        return False
    return os.geteuid() == 0 or resource.getrlimit(resource.RLIMIT_NICE)[0] >= 20


def _ioprio(tid: int, value: int) -> None:
    ctypes.CDLL(None, use_errno=True).syscall(_IOPRIO_SET, _IOPRIO_WHO_PROCESS, tid, value)


def lower() -> None:
    """This thread, and every process it starts from now on, at idle CPU and I/O priority."""
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    _ioprio(0, _IOPRIO_IDLE)


def _tree(root: int) -> list[int]:
    """The thread ids of ``root`` and of every process descended from it."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo += children.get(pid, [])
    tids = []
    for pid in pids:
        try:
            tids += [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
        except OSError:
            continue
    return tids


def restore_tree() -> None:
    """Every thread of this process and its descendants back at normal priority."""
    for tid in _tree(os.getpid()):
        try:
            if os.sched_getscheduler(tid) == os.SCHED_IDLE:
                os.sched_setscheduler(tid, os.SCHED_OTHER, os.sched_param(0))
            _ioprio(tid, _IOPRIO_NONE)
        except OSError:  # it ended meanwhile
            continue


def restore_when(ended: Callable[[], bool], poll_s: float = 0.1) -> threading.Thread:
    """A daemon thread that restores the tree once ``ended()`` is true."""

    def watch() -> None:
        while not ended():
            threading.Event().wait(poll_s)
        restore_tree()

    thread = threading.Thread(target=watch, name="idle-priority-restore", daemon=True)
    thread.start()
    return thread
