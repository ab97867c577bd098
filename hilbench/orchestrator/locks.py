"""Locks that the kernel releases however their holder dies: a campaign in a store, a bench,
a daemon.

A bench's agents and instruments belong to one campaign at a time, on this host.

Every campaign (``hilbench run``, the daemon's worker) takes an exclusive ``flock`` on each
thing it drives: each agent address (or, for agents it spawns and simulated meters, this host's
own CPU, "local"), each instrument resource, each listen address. The kernel releases the locks
when the process dies, however it dies. A second campaign wanting any of them is refused at once
with the holder's pid, command and campaign, instead of running beside the first and spoiling
both campaigns' timings.

Locks live in ``$HILBENCH_LOCK_DIR``, else ``$XDG_RUNTIME_DIR/hilbench-locks``, else
``/tmp/hilbench-locks-UID``: one folder per user and host.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import socket
import sys
import tempfile
from pathlib import Path
from typing import IO, TYPE_CHECKING

from hilbench.private_files import open_private

if TYPE_CHECKING:
    from hilbench.orchestrator.campaign import Campaign


class BenchBusy(RuntimeError):
    """Another campaign holds an agent or instrument this one needs; the message names it."""


class Held(Exception):
    """Another process holds the lock; ``holder`` is the line it wrote."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder


def hold(path: Path, who: str) -> IO[str]:
    """Open and flock ``path`` until the returned file is closed or this process dies, with
    ``who`` written in it for the next asker; raise Held with the holder's line if taken."""
    fh = open_private(path, "a+")  # held past this function; a new lock file is owner-only
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.seek(0)
        holder = fh.read().strip() or "another process"
        fh.close()
        raise Held(holder) from None
    fh.seek(0)
    fh.truncate()
    fh.write(who + "\n")
    fh.flush()
    return fh


def lock_dir() -> Path:
    configured = os.environ.get("HILBENCH_LOCK_DIR")
    if configured:
        return Path(configured)
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / "hilbench-locks"
    return Path(tempfile.gettempdir()) / f"hilbench-locks-{os.getuid()}"


def resources(campaign: Campaign) -> list[str]:
    """What the campaign drives, each named so that two campaigns naming it collide."""
    names: set[str] = set()
    for agent in campaign.agents:
        if agent.spawn:
            names.add("local host (spawned agents time on this machine's CPU)")
        elif agent.connects:
            names.add(f"agent {agent.id} dialling in to {campaign.listen}")
        elif agent.address:
            names.add(f"agent at {agent.address}")
    for inst in campaign.instruments:
        if inst.simulate is not None:
            names.add("local host (spawned agents time on this machine's CPU)")
        elif inst.resource:
            names.add(f"instrument {inst.resource}")
        else:
            names.add(f"instrument driver {inst.driver} on this host")
    if campaign.listen:
        names.add(f"listen address {campaign.listen}")
    return sorted(names)


def bench_lock(campaign: Campaign) -> contextlib.ExitStack:
    """Take every resource of ``campaign`` now, or raise BenchBusy naming the one held and by
    whom; release them by closing the returned stack (``with bench_lock(c): …``)."""
    folder = lock_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    command = " ".join([os.path.basename(sys.argv[0]), *sys.argv[1:]])
    who = f"pid {os.getpid()} on {socket.gethostname()} (`{command}`, campaign {campaign.name})"
    stack = contextlib.ExitStack()
    with contextlib.ExitStack() as taking:
        taking.enter_context(stack)  # closed (locks released) if one lock is refused
        for name in resources(campaign):
            path = folder / f"{hashlib.sha256(name.encode()).hexdigest()[:20]}.lock"
            try:
                stack.enter_context(hold(path, who))
            except Held as exc:
                raise BenchBusy(
                    f"{name} is in use by {exc.holder}; campaign {campaign.name} not started "
                    "(one campaign per bench at a time: wait for it, stop it, or queue this one "
                    "with `hilbench queue add`)"
                ) from None
        taking.pop_all()
    return stack
