"""Start helper processes on loopback: agents for campaigns that say ``spawn = true`` (and the
demo), and the simulated bench meter. Each prints ``READY <address>`` once it serves.

A process hilbench starts never outlives it (:mod:`hilbench.lifeline`: a process group of its
own and a parent-death signal, so it gets SIGTERM even when the orchestrator is SIGKILLed).
Its stderr goes to a log file in the given folder (beside the store during a campaign); the file
is removed when the process stopped cleanly and kept, and named, otherwise.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import selectors
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hilbench.lifeline import dies_with_parent, stop_process_group

if TYPE_CHECKING:
    from hilbench.orchestrator.campaign import AgentSpec

log = logging.getLogger(__name__)


class SpawnError(RuntimeError):
    """A process did not come up; the message carries what it printed."""


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
