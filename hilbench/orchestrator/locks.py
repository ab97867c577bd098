"""Locks that the kernel releases however their holder dies: a campaign in a store, a bench,
a daemon.

A bench's agents and instruments belong to one campaign at a time, on this host, whoever runs
it: any user, any login session, the daemon's systemd unit.

Every campaign (``hilbench run``, the daemon's worker) takes an exclusive ``flock`` on each
thing it drives: each agent address (or, for agents it spawns and simulated meters, this host's
own CPU, "local"), each instrument resource, each listen address; and, for an instrument on a
serial port, the port's device node itself, as pyserial's ``exclusive=True`` does. The kernel
releases the locks when the process dies, however it dies. A second campaign wanting any of
them is refused at once, naming the holder's pid, command and campaign, instead of running
beside the first and spoiling both campaigns' timings.

The bench locks of a machine live in one folder, the same for every user: ``/run/lock/hilbench``
(where ``/run/lock`` is missing: ``/tmp/hilbench-locks``), mode 1777 like ``/run/lock`` itself,
so every user can take a lock and none can remove another's; ``$HILBENCH_LOCK_DIR`` overrides
it (tests give each session its own). The folder and its files are checked before use (see
:mod:`hilbench.orchestrator.lockfile`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from hilbench.orchestrator.lock_holder import printable
from hilbench.orchestrator.lockfile import Held, LockFile, LockRefused, hold, hold_device

if TYPE_CHECKING:
    from hilbench.orchestrator.campaign import Campaign

__all__ = ["BenchBusy", "Held", "LockFile", "LockRefused", "bench_lock", "hold", "lock_dir",
           "lock_path", "resources"]

SYSTEM_LOCK_ROOT = Path("/run/lock")
SYSTEM_LOCK_DIR = SYSTEM_LOCK_ROOT / "hilbench"
FALLBACK_LOCK_DIR = Path("/tmp/hilbench-locks")  # not $TMPDIR: one folder for every user
LOCAL_HOST = "local host (spawned agents time on this machine's CPU)"
_SERIAL_RESOURCE = re.compile(r"ASRL(/[^:]+)(::INSTR)?", re.IGNORECASE)


class BenchBusy(RuntimeError):
    """Another campaign holds an agent or instrument this one needs, or the bench's lock
    folder cannot be trusted; the message names it."""


def lock_dir() -> Path:
    """The bench lock folder: ``$HILBENCH_LOCK_DIR``, else the machine's (see above); never
    one that depends on the user or the session."""
    configured = os.environ.get("HILBENCH_LOCK_DIR")
    if configured:
        return Path(configured)
    return SYSTEM_LOCK_DIR if SYSTEM_LOCK_ROOT.is_dir() else FALLBACK_LOCK_DIR


def lock_path(resource: str, folder: Path | None = None) -> Path:
    """The lock file of ``resource`` (a name from :func:`resources`)."""
    digest = hashlib.sha256(resource.encode()).hexdigest()[:20]
    return (folder or lock_dir()) / f"{digest}.lock"


def device_node(resource: str) -> str | None:
    """The device node an instrument resource opens on this host: a VISA serial resource
    (``ASRL/dev/ttyUSB0::INSTR``) or a port's path (``/dev/ttyACM0``, as the LPM01A takes);
    None for anything else (a network address, a USB id)."""
    text = resource.strip()
    match = _SERIAL_RESOURCE.fullmatch(text)
    if match:
        return match.group(1)
    return text if text.startswith("/") else None


def resources(campaign: Campaign) -> list[str]:
    """What the campaign drives, each named so that two campaigns naming it collide."""
    names: set[str] = set()
    for agent in campaign.agents:
        if agent.spawn:
            names.add(LOCAL_HOST)
        elif agent.connects:
            names.add(f"agent {agent.id} dialling in to {campaign.listen}")
        elif agent.address:
            names.add(f"agent at {agent.address}")
    for inst in campaign.instruments:
        if inst.simulate is not None:
            names.add(LOCAL_HOST)
        elif inst.resource:
            names.add(f"instrument {inst.resource}")
        else:
            names.add(f"instrument driver {inst.driver} on this host")
    if campaign.listen:
        names.add(f"listen address {campaign.listen}")
    return sorted(names)


def _busy(name: str, holder: str, campaign: Campaign) -> BenchBusy:
    return BenchBusy(
        f"{name} is in use by {holder}; campaign {campaign.name} not started (one campaign per "
        "bench at a time: wait for it, stop it, or queue this one with `hilbench queue add`)")


def bench_lock(campaign: Campaign) -> contextlib.ExitStack:
    """Take every resource of ``campaign`` now, or raise BenchBusy naming the one held and by
    whom (or the lock folder or file that cannot be trusted); release them by closing the
    returned stack (``with bench_lock(c): …``)."""
    folder = lock_dir()
    # the command shortened, so the campaign's name after it always fits in the line
    command = printable(" ".join([os.path.basename(sys.argv[0]), *sys.argv[1:]]), 160)
    who = f"pid {os.getpid()} on {socket.gethostname()} (`{command}`, campaign {campaign.name})"
    stack = contextlib.ExitStack()
    with contextlib.ExitStack() as taking:
        taking.enter_context(stack)  # closed (locks released) if one lock is refused
        try:
            for name in resources(campaign):
                try:
                    stack.enter_context(hold(lock_path(name, folder), who, shared=True))
                except Held as exc:
                    raise _busy(name, exc.holder, campaign) from None
            for inst in campaign.instruments:
                node = device_node(inst.resource or "") if inst.simulate is None else None
                try:
                    device = hold_device(node) if node else None
                except Held as exc:
                    raise _busy(f"instrument {inst.id}'s port {node}", exc.holder,
                                campaign) from None
                if device is not None:
                    stack.enter_context(device)
        except LockRefused as exc:
            raise BenchBusy(f"{exc}; campaign {campaign.name} not started") from None
        taking.pop_all()
    return stack
