"""Start helper processes on loopback: agents for campaigns that say ``spawn = true`` (and the
demo), and the simulated bench meter. Each prints ``READY <address>`` once it serves."""

from __future__ import annotations

import logging
import os
import re
import selectors
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

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
    log_path: str  # its stderr, kept for the user to read after a failure

    def stop(self, timeout_s: float = 5.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def spawn_announcing(name: str, args: list[str], startup_timeout_s: float = 60.0,
                     python: str | None = None) -> SpawnedProcess:
    """Run ``python -m hilbench ARGS --announce`` and wait for its ``READY <address>`` line.

    ``python``: another environment's interpreter (a driver whose vendor stack conflicts with
    the orchestrator's, e.g. Rockpool's numpy < 2); default this one."""
    cmd = [python or sys.executable, "-m", "hilbench", *args, "--announce"]
    log.info("starting %s: %s", name, " ".join(cmd))
    # stderr goes to a file, never an unread pipe that could fill and stall the process.
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-")
    log_fd, log_path = tempfile.mkstemp(prefix=f"hilbench-{slug}-", suffix=".log")
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=log_fd,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    os.close(log_fd)
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + startup_timeout_s
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                with open(log_path, encoding="utf-8", errors="replace") as fh:
                    err = fh.read().strip()
                raise SpawnError(f"{name} exited at start-up: {err}")
            if sel.select(timeout=0.2):
                line = proc.stdout.readline()
                if line.startswith("READY "):
                    return SpawnedProcess(name, proc, line.split(maxsplit=1)[1].strip(), log_path)
    finally:
        sel.close()
    proc.kill()
    raise SpawnError(f"{name} did not report ready within {startup_timeout_s:.0f} s")


def spawn_agent(spec: AgentSpec, startup_timeout_s: float = 60.0) -> SpawnedProcess:
    """Start ``hilbench agent`` bound to a free loopback port and wait until it serves."""
    args = ["agent", "--driver", spec.driver, "--bind", "tcp://127.0.0.1:*", "--id", spec.id]
    for key, value in spec.options.items():
        args += ["-o", f"{key}={value}"]
    return spawn_announcing(
        f"agent {spec.id} (driver {spec.driver})", args, startup_timeout_s, python=spec.python
    )
