"""A real daemon process on a real store file, driven through the CLI as a user drives it."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hilbench.cli.daemon import fetch_status
from hilbench.daemon.queue_db import QueueDB
from tests.campaign_toml import agent, campaign, qubo, write_campaign
from tests.subprocesses import hilbench_command


def qubo_campaign(directory: Path, name: str, seeds: int, timeout_s: float = 0.005,
                  file: str | None = None) -> Path:
    """A campaign of ``seeds`` QUBO units (10 nodes, SA) on a spawned CPU agent."""
    sweep = qubo(nodes=[10], seeds=list(range(seeds)), solvers=["sa"], timeouts_s=[timeout_s])
    return write_campaign(directory, campaign(agent(), sweep, name=name), file or f"{name}.toml")


class DaemonProcess:
    """`hilbench daemon` on ``db`` with a free loopback control port; restartable."""

    def __init__(self, db: Path, config: Path | None = None,
                 env: dict[str, str] | None = None, bench: str | None = None,
                 queue: str | None = None, push_to: str | None = None,
                 umask: int = -1) -> None:
        self.db = db
        self.umask = umask
        self.config = config
        self.env = env
        self.bench = bench
        self.queue = queue
        self.push_to = push_to
        self.proc: subprocess.Popen | None = None

    def start(self) -> DaemonProcess:
        args = ["daemon", "--db", str(self.db)]  # its own control socket, in the store's logs
        if self.config is not None:
            args += ["--config", str(self.config)]
        for flag, value in (("--bench", self.bench), ("--queue", self.queue),
                            ("--push-to", self.push_to)):
            if value is not None:
                args += [flag, value]
        self.proc = subprocess.Popen(hilbench_command(*args), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, umask=self.umask,
                                     env={**os.environ, **(self.env or {})})
        self.wait_until(lambda s: s["daemon"].get("pid") == self.proc.pid, "the daemon answers")
        return self

    def status(self) -> dict[str, Any]:
        """What `hilbench status --json` prints (asked in-process: polling stays cheap)."""
        return fetch_status(self.queue or self.db, None, None, None, bench=self.bench)

    def wait_until(self, check: Callable[[dict[str, Any]], bool], what: str,
                   timeout_s: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout_s
        while True:
            assert self.proc is None or self.proc.poll() is None, (
                f"the daemon exited {self.proc.returncode}: {self.proc.stderr.read()}")
            status = self.status()
            if check(status):
                return status
            assert time.monotonic() < deadline, f"not within {timeout_s} s: {what}; {status}"
            time.sleep(0.3)

    def kill(self) -> None:
        """SIGKILL, as a power cut or the OOM killer would."""
        assert self.proc is not None
        self.proc.kill()
        self.proc.wait(30)

    def signal(self, signum: int) -> int:
        assert self.proc is not None
        self.proc.send_signal(signum)
        return self.proc.wait(90)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.signal(signal.SIGTERM)


@pytest.fixture
def daemon_at(tmp_path: Path) -> Iterator[Callable[..., DaemonProcess]]:
    started: list[DaemonProcess] = []

    def make(db: Path | None = None, **kw: Any) -> DaemonProcess:
        d = DaemonProcess(db or tmp_path / "d.sqlite", **kw)
        started.append(d)
        return d

    yield make
    for d in started:
        d.stop()


def history(db: Path) -> list[dict[str, Any]]:
    """What `hilbench queue history --json` prints."""
    with QueueDB(db) as queue:
        return queue.history()



@pytest.fixture
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL database (skipped outside CI when no server answers)."""
    from tests.postgres import fresh_database

    with fresh_database("hb_pgqueue") as url:
        yield url
