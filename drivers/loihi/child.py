"""The Lava child process: started in a process group of its own that dies with the agent
(:func:`hilbench.lifeline.start_child`), watched against deadlines, and killed as a group
(Lava's own worker processes included) when it overruns or is stopped.

The child (``lava_runner.py``) prints one JSON event per line; this side reads them with a
deadline per stage: ``setup_timeout_s`` until it has started the timed region, then the run's
own budget until it has solved, then ``setup_timeout_s`` again for stopping Lava. Its stderr
goes to a log file in the job folder, quoted when it fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from hilbench.agent.driver import DriverError
from hilbench.lifeline import start_child

RUNNER = Path(__file__).resolve().parent / "lava_runner.py"


@dataclass
class ChildRun:
    """What one child reported, event by event."""

    events: dict[str, dict[str, Any]] = field(default_factory=dict)
    pid: int | None = None


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes in group ``pgid``. Killed Lava workers are reparented and
    stay zombies until reaped, which a container's init may never do: they no longer count."""
    members = []
    for proc in psutil.process_iter(["status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and os.getpgid(proc.pid) == pgid:
                members.append(proc.pid)
        except (psutil.Error, ProcessLookupError):
            continue
    return members


def group_alive(pgid: int) -> bool:
    return bool(group_members(pgid))


def _kill_group(proc: subprocess.Popen, settle_s: float = 2.0) -> None:
    """SIGKILL every process in the child's group, reap the child, wait until none is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    deadline = time.monotonic() + settle_s
    while group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.02)


def _stderr_tail(log_path: Path, limit: int = 1500) -> str:
    try:
        text = log_path.read_text(errors="replace").strip()
    except OSError:
        return ""
    return text[-limit:]


def _check_time(stop: threading.Event, stage: str, late: bool, limit: float, pid: int,
                log_path: Path) -> None:
    """Raise when a stop was asked or the stage is ``late`` (its ``limit`` passed)."""
    if stop.is_set():
        raise DriverError(f"stopped on request during {stage}", "stopped")
    if late:
        raise DriverError(
            f"Lava did not finish its {stage} within {limit:.3g} s: killed its process "
            f"group (pid {pid}); runner log: {_stderr_tail(log_path) or '(empty)'}",
            "timeout",
        )


def _check_result(result: ChildRun, status: int | None, stage: str, log_path: Path) -> None:
    """Raise unless the child reported its result (its error, or its exit without one)."""
    if "error" in result.events:
        raise DriverError(f"Lava failed: {result.events['error']['message']}", "driver_error")
    if "done" not in result.events:
        raise DriverError(
            f"the Lava process exited with status {status} during {stage} without a "
            f"result; runner log: {_stderr_tail(log_path) or '(empty)'}",
            "driver_error",
        )


def _take_event(event: dict[str, Any], result: ChildRun, marks: dict[str, float],
                deadline: float, stage: str, limits: tuple[float, float]) -> tuple[float, str]:
    """Record one event of the child; the deadline and stage it starts (``limits``: set-up's
    and the run's budget)."""
    setup_timeout_s, run_budget_s = limits
    result.events[event["event"]] = event
    marks[event["event"]] = time.monotonic()
    if event["event"] == "started":
        return time.monotonic() + run_budget_s, "run"
    if event["event"] == "solved":
        # Stopping Lava's runtime is teardown, not solving: it gets set-up's limit.
        return time.monotonic() + setup_timeout_s, "teardown (stopping Lava's runtime)"
    return deadline, stage


def run_child(
    python: str,
    job_dir: Path,
    job: dict[str, Any],
    setup_timeout_s: float,
    run_budget_s: float,
    stop: threading.Event,
    on_start: Callable[[int], None] | None = None,
    timeline: dict[str, float] | None = None,
) -> ChildRun:
    """Run one solve in a child; return its events or raise :class:`DriverError` saying why.

    ``run_budget_s`` counts from the child's ``started`` event: past it the whole process group
    is killed and the run fails with code ``timeout``. A ``stop`` request kills it the same way.
    ``on_start`` is told the child's pid, which is also its process-group id; ``timeline``, if
    given, gets the monotonic time of each event seen and of the end (``ended``, after any kill).
    """
    marks: dict[str, float] = timeline if timeline is not None else {}
    marks.clear()
    (job_dir / "job.json").write_text(json.dumps(job))
    log_path = job_dir / "runner.log"
    with open(log_path, "wb") as log:
        # Its own session and process group (killable as one), and a parent-death signal:
        # the runner ends its group on it, so a SIGKILLed agent leaves no Lava behind.
        proc = start_child(
            [python, str(RUNNER), str(job_dir)],
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    marks["spawned"] = time.monotonic()
    result = ChildRun(pid=proc.pid)
    if on_start is not None:
        on_start(proc.pid)
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + setup_timeout_s
    stage = "set-up (import, build, compile)"
    buffer = b""
    try:
        while True:
            now = time.monotonic()
            _check_time(stop, stage, now >= deadline,
                        run_budget_s if stage == "run" else setup_timeout_s, proc.pid, log_path)
            if not sel.select(timeout=min(0.05, deadline - now)):
                # Lava's workers inherit stdout, so a dead runner may never close it.
                if proc.poll() is not None:
                    break
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:  # the child closed stdout: it has exited
                proc.wait(timeout=5)
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if line.strip():
                    deadline, stage = _take_event(json.loads(line), result, marks, deadline,
                                                  stage, (setup_timeout_s, run_budget_s))
            if "done" in result.events or "error" in result.events:
                break
    except BaseException:
        _kill_group(proc)
        marks["ended"] = time.monotonic()
        raise
    finally:
        sel.close()
        proc.stdout.close()
    # Lava's own worker processes may linger after the runner returned: end them all.
    _kill_group(proc)
    marks["ended"] = time.monotonic()
    _check_result(result, proc.returncode, stage, log_path)
    return result
