"""Child processes that never outlive hilbench, SIGKILL included.

Every process hilbench starts — spawned agents, the simulated meter, Intel SoC Watch, the
Arduino host emulator (SIGKILL: a board frozen with SIGSTOP would hold a SIGTERM pending), the
loihi driver's Lava child — is started with :func:`start_child`: it leads a session and
process group of its own (``killpg`` reaches whatever it starts; a Ctrl-C at the terminal
reaches only hilbench, which stops its children in order) and asks Linux for a parent-death
signal, so it is told to stop even when its parent is killed with SIGKILL.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
DEATH_SIGNAL = signal.SIGTERM  # agents, the meter and SoC Watch stop cleanly on SIGTERM


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return libc.prctl


_PRCTL = _load_prctl()  # looked up before any fork: the child only calls it


def dies_with_parent(death_signal: signal.Signals = DEATH_SIGNAL) -> dict[str, Any]:
    """``subprocess.Popen`` keyword arguments that make the child die with this process.

    The child leads a session and process group of its own and, on Linux, gets
    ``death_signal`` when its parent dies. Linux sends it when the *thread* that forked exits,
    so spawn from a thread that lives as long as the child (the main thread, or the thread
    that waits for the child). The signal reaches the child only, not what it forks: a child
    with children of its own ends its group on that signal (see ``drivers/loihi``).
    """
    parent = os.getpid()
    return {"start_new_session": True,
            "preexec_fn": lambda: follow_parent(parent, death_signal)}


def follow_parent(parent: int, death_signal: signal.Signals = DEATH_SIGNAL) -> None:
    """In a child: ask Linux for ``death_signal`` when the thread that started it ends, and send
    it now if the parent (process ``parent``) has ended already, before the request took
    effect. Run before exec (:func:`dies_with_parent`), or by the child itself first thing
    (:func:`start_following_child`)."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, int(death_signal), 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), death_signal)


def start_following_child(args: Any, **popen_kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen`` for a child that calls :func:`follow_parent` itself (given this
    process's pid): no ``preexec_fn``, so no Python code, at-fork hooks or their locks, runs
    around the fork. For a child started from a thread other than the main one, which holds
    no stop signal (:func:`start_child`) and must not stall this process's stop."""
    return subprocess.Popen(args, start_new_session=True, **popen_kwargs)


HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def start_child(args: Any, *, death_signal: signal.Signals = DEATH_SIGNAL,
                **popen_kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen(args, **popen_kwargs)`` for a child that dies with this process
    (:func:`dies_with_parent`), with SIGINT and SIGTERM held while it is started.

    ``preexec_fn`` makes Python run its at-fork hooks in this process around the fork
    (logging's among them), and a stop signal whose handler raises there is printed as an
    ignored exception with a traceback and lost to the code that should stop (CI saw it on a
    campaign stopped 0.7 s into its start-up). Held, it reaches its handler once ``Popen``
    has returned, as ordinary code. Handlers run in the main thread only, so elsewhere
    nothing is held.
    """
    kwargs = {**popen_kwargs, **dies_with_parent(death_signal)}
    if threading.current_thread() is not threading.main_thread():
        return subprocess.Popen(args, **kwargs)
    arrived: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, _frame: arrived.append(signum))
                for sig in HELD_SIGNALS}
    process = None
    try:
        process = subprocess.Popen(args, **kwargs)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _deliver(arrived, previous, process)
    return process


def _deliver(arrived: list[int], handlers: dict[signal.Signals, Any],
             process: subprocess.Popen | None) -> None:
    """Run the handlers of the signals held while ``process`` started; one that raises (or a
    default action that ends this process) first stops the child, which the caller then never
    gets to stop."""
    for signum in arrived:
        handler = handlers[signal.Signals(signum)]
        try:
            if callable(handler):
                handler(signum, None)
            elif handler == signal.SIG_DFL:
                if process is not None:
                    stop_process_group(process)
                signal.raise_signal(signum)
        except BaseException:
            if process is not None:
                stop_process_group(process)
            raise


def stop_process_group(process: subprocess.Popen, timeout_s: float = 5.0) -> None:
    """SIGTERM the child's process group, then SIGKILL it if it has not ended in time."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout_s)
    except subprocess.TimeoutExpired:
        log.warning("process %d ignored SIGTERM for %.0f s; killing it", process.pid, timeout_s)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def call_on_signal(callback: Callable[[], None], signum: signal.Signals = DEATH_SIGNAL) -> None:
    """Have ``callback`` called, from a thread of its own, each time ``signum`` arrives.

    How a spawned process acts on its death signal. A Python signal handler runs in the main
    thread between two bytecodes, possibly while that thread holds a lock: a handler that calls
    ``threading.Event.set`` deadlocks when the signal lands inside the main thread's own
    ``set``/``wait`` of that event (an agent whose parent was SIGKILLed hung this way for good).
    The handler here takes no lock: it writes a byte to a pipe, and a daemon thread that reads
    the pipe calls ``callback`` as ordinary code. Install it from the main thread.
    """
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)

    def _handler(_signum: int, _frame: object) -> None:
        # A full pipe holds earlier signals the relay has still to see: nothing is lost.
        with contextlib.suppress(BlockingIOError):
            os.write(write_fd, b"\0")

    def _relay() -> None:
        while os.read(read_fd, 64):
            callback()

    threading.Thread(target=_relay, daemon=True, name=f"on-{signum.name}").start()
    signal.signal(signum, _handler)


def pid_alive(pid: int | None) -> bool:
    """Whether process ``pid`` of this host is alive (someone else's counts as alive)."""
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
