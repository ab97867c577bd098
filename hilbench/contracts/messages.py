"""Which contract a request body and its reply follow, and the checks a Struct alone cannot
make: payload frames, and the ranges a driver declares in its capabilities.

``WORKLOADS`` maps each workload name to its load and run body types, read from the workload
registry (:mod:`hilbench.contracts.registry`). The agent (:mod:`hilbench.agent.dispatch`) and
the orchestrator's handles (:mod:`hilbench.contracts.remote`) both use these tables, so the two
sides cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hilbench.contracts.base import ContractError, Reply, decode
from hilbench.contracts.capabilities import Capabilities, ConfigureReply, Settings
from hilbench.contracts.registry import for_request, workloads


@dataclass(frozen=True)
class Workload:
    load: Any  # a Struct type or a tagged union of them
    run: Any
    replies: dict[type, type[Reply]]


WORKLOADS: dict[str, Workload] = {
    name: Workload(load=w.load, run=w.run, replies=dict(w.replies))
    for name, w in workloads().items()}


# Request type -> reply type, over every workload: one lookup on the hot path.
_REPLIES: dict[type, type[Reply]] = {
    request: reply for w in WORKLOADS.values() for request, reply in w.replies.items()}


def decode_request(cmd: str, body: Any, settings: type[Settings] = Settings) -> Any:
    """The typed body of a ``configure``, ``load`` or ``run`` request (bad_arguments else)."""
    if cmd == "configure":
        return decode(settings, body)
    if not isinstance(body, dict):
        raise ContractError("bad_arguments", "", "the body must be a map")
    name = body.get("workload")
    workload = WORKLOADS.get(name) if isinstance(name, str) else None
    if workload is None:
        raise ContractError("bad_arguments", "workload",
                            f"must be one of {sorted(WORKLOADS)}, got {name!r}")
    return decode(workload.load if cmd == "load" else workload.run, body)


def reply_type(request: Any) -> type[Reply]:
    """The reply Struct of a typed request."""
    if isinstance(request, Settings):
        return ConfigureReply
    found = _REPLIES.get(type(request))
    if found is None:  # a workload registered since, or a subclass
        for workload in WORKLOADS.values():
            found = workload.replies.get(type(request))
            if found is not None:
                _REPLIES[type(request)] = found
                return found
    else:
        return found
    raise TypeError(f"no reply contract for {type(request).__name__}")


def check_payloads(request: Any, arrays: list[np.ndarray]) -> None:
    """The payload frames a request must carry: its Struct's ``check_payloads`` (none by
    default)."""
    request.check_payloads(arrays)


def register_workload(name: str, workload: Workload) -> None:
    """Add a workload's contract (a plugin's, or a test's)."""
    WORKLOADS[name] = workload


def check_declared(request: Any, caps: Capabilities) -> None:
    """What the driver's capabilities rule out: a workload it does not serve, or a solver,
    mode or range it does not offer (the workload plugin's own check)."""
    if isinstance(request, Settings):
        if request.sim_meter is not None and not caps.meter_link:
            raise ContractError("bad_arguments", "sim_meter", "this driver cannot report its "
                                "device's state to a simulated meter")
        return
    plugin = for_request(type(request))
    if plugin is None or plugin.capabilities is None:
        return  # a workload registered at run time (a test's) declares nothing to check
    declared = caps.workload(plugin.name)
    if declared is None:
        raise ContractError("bad_arguments", "workload", f"this driver serves no {plugin.name}")
    if plugin.check is not None:
        plugin.check(request, declared)
