"""Which contract a request body and its reply follow, and the checks a Struct alone cannot
make: payload frames, and the ranges a driver declares in its capabilities.

``WORKLOADS`` maps each workload name to its load and run body types; a new workload adds one
entry. The agent (:mod:`hilbench.agent.dispatch`) and the orchestrator's handles
(:mod:`hilbench.contracts.remote`) both use these tables, so the two sides cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hilbench.contracts import asc, qubo
from hilbench.contracts.base import ContractError, Reply, decode
from hilbench.contracts.capabilities import Capabilities, ConfigureReply, Settings


@dataclass(frozen=True)
class Workload:
    load: Any  # a Struct type or a tagged union of them
    run: Any
    replies: dict[type, type[Reply]]


WORKLOADS: dict[str, Workload] = {
    "qubo": Workload(
        load=qubo.QuboLoad,
        run=qubo.QuboRun,
        replies={
            qubo.QuboLoad: qubo.QuboLoadReply,
            qubo.FixedTimeout: qubo.QuboRunReply,
            qubo.TimeToSolution: qubo.QuboRunReply,
        },
    ),
    "asc": Workload(
        load=asc.AscLoad,
        run=asc.AscRun,
        replies={
            asc.AscLoadModel: asc.AscModelReply,
            asc.AscLoadSample: asc.AscHeldReply,
            asc.AscUnload: asc.AscHeldReply,
            asc.AscLoadStream: asc.AscStreamReply,
            asc.AscUnloadStream: asc.AscStreamReply,
            asc.AscLoadSampleList: asc.AscSampleListReply,
            asc.AscSingleStream: asc.AscSampleResult,
            asc.AscRepeat: asc.AscWindowResult,
            asc.AscStream: asc.AscWindowResult,
            asc.AscSamples: asc.AscSamplesResult,
        },
    ),
}


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


# isinstance against tuples built once (``A | B`` would build a union on every request).
_QUBO_RUNS = (qubo.FixedTimeout, qubo.TimeToSolution)
_ASC_RUNS = (asc.AscSingleStream, asc.AscRepeat, asc.AscStream, asc.AscSamples)
_ASC_SAMPLE_RUNS = (asc.AscSingleStream, asc.AscSamples)  # no stage, no duration
_ASC_LOADS = (asc.AscLoadModel, asc.AscLoadSample, asc.AscUnload, asc.AscLoadStream,
              asc.AscUnloadStream, asc.AscLoadSampleList)


# complexity: names each workload's limits; replaced by the workload registry (issue 32 item 3)
def check_declared(request: Any, caps: Capabilities) -> None:  # noqa: C901
    """What the driver's capabilities rule out: a solver, mode or range it does not offer."""
    if isinstance(request, _QUBO_RUNS):
        declared = caps.qubo
        if declared is None:
            raise ContractError("bad_arguments", "workload", "this driver serves no qubo")
        if request.solver not in declared.solvers:
            raise ContractError("bad_arguments", "solver",
                                f"unknown solver {request.solver!r} (this driver has "
                                f"{', '.join(declared.solvers)})")
        mode = type(request).__struct_config__.tag
        if mode not in declared.modes:
            raise ContractError("bad_arguments", "mode", f"{mode!r} is not one of {declared.modes}")
        if isinstance(request, qubo.FixedTimeout) and declared.timeout_range_s is not None:
            low, high = declared.timeout_range_s
            if not low <= request.timeout_s <= high:
                raise ContractError("bad_arguments", "timeout_s",
                                    f"{request.timeout_s} s is outside this driver's "
                                    f"{low:g} … {high:g} s")
    elif isinstance(request, qubo.QuboLoad):
        if caps.qubo is None:
            raise ContractError("bad_arguments", "workload", "this driver serves no qubo")
        unknown = [s for s in request.solvers or () if s not in caps.qubo.solvers]
        if unknown:
            raise ContractError("bad_arguments", "solvers",
                                f"unknown solver {', '.join(map(repr, unknown))} (this driver "
                                f"has {', '.join(caps.qubo.solvers)})")
    elif isinstance(request, _ASC_RUNS):
        declared_asc = caps.asc
        if declared_asc is None:
            raise ContractError("bad_arguments", "workload", "this driver serves no asc")
        mode = type(request).__struct_config__.tag
        if mode not in declared_asc.modes:
            raise ContractError("bad_arguments", "mode",
                                f"{mode!r} is not one of {declared_asc.modes}")
        if isinstance(request, asc.AscRepeat) and request.stage != "idle" \
                and request.index is None:
            raise ContractError("bad_arguments", "index",
                                f"a {request.stage} window repeats a held sample: give its index")
        if not isinstance(request, _ASC_SAMPLE_RUNS) and request.stage != "idle" \
                and request.stage not in declared_asc.timed_stages():
            raise ContractError("bad_arguments", "stage",
                                f"this device times {list(declared_asc.timed_stages())} windows "
                                "(capabilities asc.stages)")
        limit = declared_asc.max_repeat_s
        if not isinstance(request, _ASC_SAMPLE_RUNS) and limit is not None \
                and request.duration_s > limit:
            raise ContractError("bad_arguments", "duration_s",
                                f"{request.duration_s} s passes this device's {limit:g} s")
    elif isinstance(request, _ASC_LOADS):
        if caps.asc is None:
            raise ContractError("bad_arguments", "workload", "this driver serves no asc")
    elif isinstance(request, Settings) and request.sim_meter is not None and not caps.meter_link:
        raise ContractError("bad_arguments", "sim_meter",
                            "this driver cannot report its device's state to a simulated meter")
