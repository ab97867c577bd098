"""`hilbench` run as a user runs it, in a child process: one command, a campaign, or an agent
that announces its endpoint. Tests share these so that each file keeps only what it checks."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hilbench.store import Store, StoreError


def unit_runs(store: Store, campaign_uid: str | None = None) -> list[dict[str, Any]]:
    """The runs a campaign's units ended with, without the unverified attempts before them: on a
    loaded host a run whose timing is outside its link's measured bound is tried again
    (hilbench/orchestrator/timing_check.py), and its attempts are runs of their own."""
    return [r for r in store.runs(campaign_uid) if r["status"] != "unverified"]


def units_of(db: str | Path, run_uids: list[str]) -> int:
    """How many units ``run_uids`` (a daemon history row's, say) ran: a unit's unverified
    attempts are runs of their own."""
    with Store(db) as store:
        return len({store.run(uid)["unit_key"] for uid in run_uids})


def hilbench_command(*args: str | Path, python: str | Path = sys.executable) -> list[str]:
    """The argument list that runs ``hilbench ARGS`` with ``python`` (default: this one)."""
    return [str(python), "-m", "hilbench", *map(str, args)]


def hilbench(*args: str | Path, timeout: float = 300, **kw: Any) -> subprocess.CompletedProcess:
    """Run ``hilbench ARGS`` to the end, capturing its output as text."""
    return subprocess.run(
        hilbench_command(*args), capture_output=True, text=True, timeout=timeout, **kw
    )


def hilbench_here(*args: str | Path) -> subprocess.CompletedProcess:
    """``hilbench ARGS`` run in this process (click's CliRunner), as :func:`hilbench` returns
    it: for commands that are not the test's subject (a `queue add` feeding a daemon under
    test, a report whose page is checked). A subprocess costs ~0.7 s of CPU in start-up a
    command; commands whose process is the subject (exit codes, signals, locks) stay
    subprocesses."""
    from click.testing import CliRunner

    from hilbench.cli import cli

    argv = [str(a) for a in args]
    result = CliRunner().invoke(cli, argv)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # a bug: its traceback, not an exit code
    return subprocess.CompletedProcess(argv, result.exit_code, result.stdout, result.stderr)


def run_campaign(
    path: str | Path,
    db: str | Path,
    *args: str,
    timeout: float = 300,
    extra_env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """``hilbench run PATH --db DB -q ARGS`` to the end, with ``extra_env`` added to this
    process's environment."""
    env = None if extra_env is None else {**os.environ, **extra_env}
    return hilbench("run", path, "--db", db, "-q", *args, timeout=timeout, env=env)


def start_campaign(path: str | Path, db: str | Path, **kw: Any) -> subprocess.Popen:
    """``hilbench run PATH --db DB -q`` in the background, stdout and stderr piped as text
    unless ``kw`` says otherwise."""
    options: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    return subprocess.Popen(hilbench_command("run", path, "--db", db, "-q"), **options | kw)


def wait_for_run(
    db: Path,
    proc: subprocess.Popen | None = None,
    *,
    status: str | None = "success",
    timeout_s: float = 120,
) -> None:
    """Wait until the store ``db`` holds a run with ``status`` (None: any run), i.e. the
    campaign is under way; fail if ``proc`` ends first or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while not _has_run(db, status):
        assert time.monotonic() < deadline, f"no {status or ''} run within {timeout_s} s"
        assert proc is None or proc.poll() is None, f"the campaign ended before a {status} run"
        time.sleep(0.1)


def _has_run(db: Path, status: str | None) -> bool:
    try:
        with Store(db) as store:
            return any(status is None or r["status"] == status for r in store.runs())
    except StoreError:  # not created yet
        return False


@contextmanager
def announced_agent(
    *args: str | Path, python: str | Path = sys.executable
) -> Iterator[tuple[subprocess.Popen, str]]:
    """An agent process started with ``hilbench agent ARGS --announce``: yields the process and
    the endpoint from its ``READY`` line; stops it afterwards (SIGTERM, then SIGKILL)."""
    proc = subprocess.Popen(
        hilbench_command("agent", *args, "--announce", python=python),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("READY "), line
        yield proc, line.split()[1]
    finally:
        stop(proc)


@contextmanager
def script_agent(script: str | Path, *args: str) -> Iterator[str]:
    """An agent script of the tests (``python SCRIPT ARGS``, e.g. tests/spec_agent.py) in its
    own process: yields the endpoint from its ``ENDPOINT`` line; kills it afterwards."""
    proc = subprocess.Popen([sys.executable, str(script), *args], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("ENDPOINT "), line
        yield line.split()[1]
    finally:
        proc.kill()
        proc.wait(10)


def stop(proc: subprocess.Popen, grace_s: float = 10) -> None:
    """End a child process: SIGTERM, and SIGKILL if it is still there after ``grace_s``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
