"""Checks that what a killed parent started is gone: a process counts as gone when it has
exited (a zombie waiting for a container's init to reap it has exited)."""

from __future__ import annotations

import time

import psutil


def alive(pids: list[int]) -> list[int]:
    """The processes among ``pids`` still running."""
    living = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                living.append(pid)
        except psutil.NoSuchProcess:
            continue
    return living


def alive_after(pids: list[int], seconds: float) -> list[int]:
    """Wait up to ``seconds`` for every one of ``pids`` to end; those still running then."""
    deadline = time.monotonic() + seconds
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.02)
    return alive(pids)
