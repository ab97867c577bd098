"""Start agent processes on loopback for campaigns that say ``spawn = true`` (and the demo)."""

from __future__ import annotations

import logging
import os
import selectors
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from hilbench.orchestrator.campaign import AgentSpec

log = logging.getLogger(__name__)


class SpawnError(RuntimeError):
    """An agent process did not come up; the message carries what it printed."""


@dataclass
class SpawnedAgent:
    spec: AgentSpec
    process: subprocess.Popen
    address: str
    log_path: str

    def log_tail(self, lines: int = 20) -> str:
        """The end of the agent's stderr log, for error messages."""
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as fh:
                return "".join(fh.readlines()[-lines:]).strip()
        except OSError:
            return ""

    def stop(self, timeout_s: float = 5.0) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def spawn_agent(spec: AgentSpec, startup_timeout_s: float = 60.0) -> SpawnedAgent:
    """Start ``hilbench agent`` bound to a free loopback port and wait until it serves."""
    cmd = [
        sys.executable,
        "-m",
        "hilbench",
        "agent",
        "--driver",
        spec.driver,
        "--bind",
        "tcp://127.0.0.1:*",
        "--id",
        spec.id,
        "--announce",
    ]
    for key, value in spec.options.items():
        cmd += ["-o", f"{key}={value}"]
    log.info("starting agent %s: %s", spec.id, " ".join(cmd))
    # stderr goes to a file, never an unread pipe that could fill and stall the agent.
    log_fd, log_path = tempfile.mkstemp(prefix=f"hilbench-agent-{spec.id}-", suffix=".log")
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
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            with open(log_path, encoding="utf-8", errors="replace") as fh:
                err = fh.read().strip()
            raise SpawnError(f"agent {spec.id} (driver {spec.driver}) exited at start-up: {err}")
        if sel.select(timeout=0.2):
            line = proc.stdout.readline()
            if line.startswith("READY "):
                sel.close()
                return SpawnedAgent(spec, proc, line.split(maxsplit=1)[1].strip(), log_path)
    proc.kill()
    raise SpawnError(f"agent {spec.id} did not report ready within {startup_timeout_s:.0f} s")
