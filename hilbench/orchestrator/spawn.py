"""Start helper processes on loopback: agents for campaigns that say ``spawn = true`` (and the
demo), and the simulated bench meter. Each prints ``READY <address>`` once it serves.

A process hilbench starts never outlives it. Each child runs in a process group of its own (a
Ctrl-C at the terminal reaches only the orchestrator, which stops its children in order) and
asks Linux for a parent-death signal, so it gets SIGTERM even when the orchestrator is killed
with SIGKILL. Its stderr goes to a log file in the given folder (beside the store during a
campaign); the file is removed when the process stopped cleanly and kept, and named, otherwise.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import os
import re
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hilbench.orchestrator.campaign import AgentSpec

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
DEATH_SIGNAL = signal.SIGTERM  # agents and the meter stop cleanly on SIGTERM


class SpawnError(RuntimeError):
    """A process did not come up; the message carries what it printed."""


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    return libc.prctl


_PRCTL = _load_prctl()  # looked up before any fork: the child only calls it


def dies_with_parent() -> dict[str, Any]:
    """``subprocess.Popen`` keyword arguments that make the child die with this process.

    The child leads a session and process group of its own (``killpg`` reaches whatever it
    starts; a Ctrl-C at the terminal reaches only hilbench) and, on Linux,
    a parent-death signal. Linux sends it when the *thread* that forked exits, so spawn from a
    thread that lives as long as the child (the main thread, in hilbench).
    """
    parent = os.getpid()
    prctl = _PRCTL

    def _in_child() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(DEATH_SIGNAL), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), DEATH_SIGNAL)

    return {"start_new_session": True, "preexec_fn": _in_child}


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


@dataclass
class SpawnedProcess:
    name: str
    process: subprocess.Popen
    address: str  # what it announced: an endpoint or host:port
    log_path: Path  # its stderr; removed after a clean stop, kept after a failure

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the process (and its group); keep its log only if it ended badly."""
        crashed = self.process.poll() not in (None, 0)
        stop_process_group(self.process, timeout_s)
        if crashed:
            log.warning("%s had exited with status %s; its log is %s",
                        self.name, self.process.returncode, self.log_path)
        else:
            _remove_log(self.log_path)


def _remove_log(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
    with contextlib.suppress(OSError):
        path.parent.rmdir()  # only when empty: other logs stay


def _open_log(log_dir: Path | None, name: str) -> tuple[int, Path]:
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-")
    if log_dir is None:
        log_dir = Path(tempfile.gettempdir()) / f"hilbench-{os.getuid()}"
    log_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix=f"spawn-{slug}-", suffix=".log", dir=log_dir)
    return fd, Path(path)


def spawn_announcing(
    name: str,
    args: list[str],
    startup_timeout_s: float = 60.0,
    *,
    log_dir: Path | None = None,
    python: str | None = None,
) -> SpawnedProcess:
    """Run ``PYTHON -m hilbench ARGS --announce`` and wait for its ``READY <address>`` line.

    ``python`` is the interpreter to use (default: this one), for a driver whose vendor stack
    lives in another environment. The process dies with this one (see ``dies_with_parent``).
    """
    cmd = [python or sys.executable, "-m", "hilbench", *args, "--announce"]
    log.info("starting %s: %s", name, " ".join(cmd))
    # stderr goes to a file, never an unread pipe that could fill and stall the process.
    log_fd, log_path = _open_log(log_dir, name)
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=log_fd,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            **dies_with_parent(),
        )
    except OSError as exc:
        _remove_log(log_path)
        raise SpawnError(f"{name}: cannot start {cmd[0]}: {exc}") from exc
    finally:
        os.close(log_fd)
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = started + startup_timeout_s
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                err = log_path.read_text(encoding="utf-8", errors="replace").strip()
                raise SpawnError(f"{name} exited at start-up: {err} (log kept: {log_path})")
            if sel.select(timeout=0.2):
                line = proc.stdout.readline()
                if line.startswith("READY "):
                    return SpawnedProcess(name, proc, line.split(maxsplit=1)[1].strip(), log_path)
    except BaseException:
        stop_process_group(proc, timeout_s=2.0)
        raise
    finally:
        sel.close()
    stop_process_group(proc, timeout_s=2.0)
    waited = time.monotonic() - started
    raise SpawnError(
        f"{name} did not report ready within {waited:.1f} s (log kept: {log_path})"
    )


def spawn_agent(
    spec: AgentSpec, startup_timeout_s: float = 60.0, *, log_dir: Path | None = None
) -> SpawnedProcess:
    """Start ``hilbench agent`` bound to a free loopback port and wait until it serves."""
    args = ["agent", "--driver", spec.driver, "--bind", "tcp://127.0.0.1:*", "--id", spec.id]
    for key, value in spec.options.items():
        args += ["-o", f"{key}={value}"]
    return spawn_announcing(
        f"agent {spec.id} (driver {spec.driver})",
        args,
        startup_timeout_s,
        log_dir=log_dir,
        python=spec.python,
    )
