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
import selectors
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hilbench.lifeline import start_child, start_following_child, stop_process_group
from hilbench.orchestrator import tap
from hilbench.private_files import private_dir
from hilbench.safe_paths import safe_name
from hilbench.wire import keys

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
    client_key: keys.KeyPair | None = None  # the orchestrator's ephemeral pair for this agent
    agent_key: bytes | None = None  # the agent's ephemeral public key

    def client_keys(self) -> dict[str, Any]:
        """``AgentClient`` keyword arguments for this process's keys (none if unkeyed)."""
        if self.client_key is None:
            return {}
        return {"key": self.client_key, "agent_key": self.agent_key}

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the process (and its group); keep its log unless we were the ones to stop it.

        A process that had already exited, even with status 0, ended on its own (a crash, or a
        ``shutdown`` from someone): its log says why, so it stays.
        """
        exited = self.process.poll() is not None
        stop_process_group(self.process, timeout_s)
        if exited:
            log.warning("%s had exited on its own with status %s; its log is %s",
                        self.name, self.process.returncode, self.log_path)
        else:
            _remove_log(self.log_path)


def _remove_log(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()
    with contextlib.suppress(OSError):
        path.parent.rmdir()  # only when empty: other logs stay


def _open_log(log_dir: Path | None, name: str) -> tuple[int, Path]:
    if log_dir is None:
        log_dir = Path(tempfile.gettempdir()) / f"hilbench-{os.getuid()}"
    private_dir(log_dir, parents=True)
    fd, path = tempfile.mkstemp(prefix=f"spawn-{safe_name(name)}-", suffix=".log", dir=log_dir)
    return fd, Path(path)


def spawn_announcing(
    name: str,
    args: list[str],
    startup_timeout_s: float = 60.0,
    *,
    log_dir: Path | None = None,
    python: str | None = None,
    handover: tuple[keys.KeyPair, list[bytes]] | None = None,
) -> SpawnedProcess:
    """Run ``PYTHON -m hilbench ARGS --announce`` and wait for its ``READY <address>`` line.

    ``python`` is the interpreter to use (default: this one), for a driver whose vendor stack
    lives in another environment. The process dies with this one (see ``start_child``).
    ``handover`` (a key pair and the public keys it admits) goes down an inherited pipe whose
    descriptor replaces ``{key_fd}`` in ``args``.
    """
    recording = tap.active()
    if recording is not None:
        stand_in = recording.spawn(name, args, handover)  # a replay's stand-in, or None
        if stand_in is not None:
            return stand_in  # type: ignore[no-any-return]
    spawned = _spawn(name, ["-m", "hilbench", *args], startup_timeout_s, log_dir, python,
                     handover)
    if recording is not None:
        recording.spawned(name, spawned.address)
    return spawned


def spawn_own(name: str, module: str, startup_timeout_s: float = 30.0) -> SpawnedProcess:
    """Run ``python -m MODULE --key-fd N --parent PID --announce``, a helper the orchestrator
    runs for itself (its reference responder), and wait for its ``READY``: never a cassette's,
    so never tapped, and keyed like a spawned agent, so no other local process reaches it. It
    asks for its parent-death signal itself (:func:`hilbench.lifeline.start_following_child`): it is
    started from a thread of its own."""
    handover, client_key = _ephemeral_keys(name)
    spawned = _spawn(name, ["-m", module, "--key-fd", "{key_fd}", "--parent", str(os.getpid())],
                     startup_timeout_s, None, None, handover, start=start_following_child)
    spawned.client_key, spawned.agent_key = client_key, handover[0].public
    return spawned


def _ephemeral_keys(name: str) -> tuple[tuple[keys.KeyPair, list[bytes]], keys.KeyPair]:
    """A fresh pair for the process ``name`` and one for this orchestrator, the only key the
    process admits: (the handover to send it, the orchestrator's pair)."""
    agent_key = keys.ephemeral_pair(name)
    client_key = keys.ephemeral_pair("orchestrator (ephemeral)")
    return (agent_key, [client_key.public]), client_key


def _spawn(name: str, args: list[str], startup_timeout_s: float, log_dir: Path | None,
           python: str | None, handover: tuple[keys.KeyPair, list[bytes]] | None,
           start: Callable[..., subprocess.Popen] = start_child) -> SpawnedProcess:
    pass_fds: tuple[int, ...] = ()
    if handover is not None:
        read_fd, write_fd = os.pipe()
        keys.write_handover(write_fd, *handover)  # a few hundred bytes: the pipe holds them
        args = [a.replace("{key_fd}", str(read_fd)) for a in args]
        pass_fds = (read_fd,)
    cmd = [python or sys.executable, *args, "--announce"]
    log.info("starting %s: %s", name, " ".join(cmd))
    # stderr goes to a file, never an unread pipe that could fill and stall the process.
    log_fd, log_path = _open_log(log_dir, name)
    started = time.monotonic()
    try:
        proc = start(
            cmd,
            stdout=subprocess.PIPE,
            stderr=log_fd,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            pass_fds=pass_fds,
        )
    except OSError as exc:
        _remove_log(log_path)
        raise SpawnError(f"{name}: cannot start {cmd[0]}: {exc}") from exc
    finally:
        os.close(log_fd)
        for fd in pass_fds:
            os.close(fd)
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
    spec: AgentSpec,
    startup_timeout_s: float = 60.0,
    *,
    log_dir: Path | None = None,
    keyed: bool = True,
) -> SpawnedProcess:
    """Start ``hilbench agent`` bound to a free loopback port and wait until it serves.

    ``keyed``: the agent gets an ephemeral CurveZMQ pair and admits only the ephemeral public
    key made here for this orchestrator (``client_keys()``), so no other local process can
    talk to it, loopback or not.
    """
    args = ["agent", "--driver", spec.driver, "--bind", "tcp://127.0.0.1:*", "--id", spec.id]
    for key, value in spec.options.items():
        args += ["-o", f"{key}={value}"]
    handover = client_key = None
    if keyed:
        handover, client_key = _ephemeral_keys(f"spawned agent {spec.id}")
        args += ["--key-fd", "{key_fd}"]
    spawned = spawn_announcing(
        f"agent {spec.id} (driver {spec.driver})",
        args,
        startup_timeout_s,
        log_dir=log_dir,
        python=spec.python,
        handover=handover,
    )
    if handover is not None:
        spawned.client_key, spawned.agent_key = client_key, handover[0].public
    return spawned
