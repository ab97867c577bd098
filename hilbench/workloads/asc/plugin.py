"""The ASC workload as the registry sees it (``hilbench.workloads`` entry point ``asc``): its
wire contract, what its declared capabilities rule out, which driver role serves which request,
the sample lists the agent runs itself, and where its procedures, tables and figures live."""

from __future__ import annotations

from typing import Any

from hilbench.contracts.base import ContractError
from hilbench.contracts.registry import Role, WorkloadPlugin
from hilbench.workloads.asc import contract as asc

_RUNS = (asc.AscSingleStream, asc.AscRepeat, asc.AscStream, asc.AscSamples)
_SAMPLE_RUNS = (asc.AscSingleStream, asc.AscSamples)  # no stage, no duration


def check_declared(request: Any, declared: asc.AscCapabilities) -> None:
    """A mode, stage or window length the device does not offer (bad_arguments)."""
    if not isinstance(request, _RUNS):
        return  # loads: serving asc at all is all they need
    mode = type(request).__struct_config__.tag
    if mode not in declared.modes:
        raise ContractError("bad_arguments", "mode", f"{mode!r} is not one of {declared.modes}")
    if isinstance(request, asc.AscRepeat) and request.stage != "idle" and request.index is None:
        raise ContractError("bad_arguments", "index",
                            f"a {request.stage} window repeats a held sample: give its index")
    if isinstance(request, _SAMPLE_RUNS):
        return
    if request.stage != "idle" and request.stage not in declared.timed_stages():
        raise ContractError("bad_arguments", "stage",
                            f"this device times {list(declared.timed_stages())} windows "
                            "(capabilities asc.stages)")
    limit = declared.max_repeat_s
    if limit is not None and request.duration_s > limit:
        raise ContractError("bad_arguments", "duration_s",
                            f"{request.duration_s} s passes this device's {limit:g} s")


def complete(declared: asc.AscCapabilities) -> None:
    """A device that runs ``single_stream`` also offers ``samples``: the agent runs sample
    lists itself, over the driver's own load, run and unload."""
    if "single_stream" in declared.modes and "samples" not in declared.modes:
        declared.modes.append("samples")


def for_version(declared: dict[str, Any], version: int) -> dict[str, Any]:
    """``samples`` came with protocol version 3, ``sample_untimed`` with version 4."""
    if version < 4:
        declared = {k: v for k, v in declared.items() if k != "sample_untimed"}
    if version < 3 and "samples" in declared.get("modes", ()):
        declared = {**declared, "modes": [m for m in declared["modes"] if m != "samples"]}
    return declared


def _method(driver: Any, name: str, request: Any) -> Any:
    """The driver's role method ``name``; a request it has none for is refused naming the
    request's tag (a device without streams need not write the stream methods)."""
    found = getattr(driver, name, None)
    if not callable(found):
        config = type(request).__struct_config__
        raise ContractError("bad_arguments", str(config.tag_field),
                            f"this driver does not serve asc {config.tag_field} "
                            f"{config.tag!r} (it has no {name} method)")
    return found


# Each message kind -> how it reaches its AscDevice method: (driver, request, payload arrays,
# stop event) -> (reply, reply arrays). The sample lists are the agent's (agent_side).
ROLES: dict[type, Role] = {
    asc.AscLoadModel: lambda d, r, a, s: (_method(d, "load_model", r)(r, a), []),
    asc.AscLoadSample: lambda d, r, a, s: (_method(d, "load_sample", r)(r, a[0]), []),
    asc.AscUnload: lambda d, r, a, s: (_method(d, "free_sample", r)(r), []),
    asc.AscLoadStream: lambda d, r, a, s: (_method(d, "load_stream", r)(r, a[0]), []),
    asc.AscUnloadStream: lambda d, r, a, s: (_method(d, "free_stream", r)(r), []),
    asc.AscSingleStream: lambda d, r, a, s: (_method(d, "run_sample", r)(r), []),
    asc.AscRepeat: lambda d, r, a, s: (_method(d, "run_repeat", r)(r, s), []),
    asc.AscStream: lambda d, r, a, s: (_method(d, "run_stream", r)(r, s), []),
}


WORKLOAD = WorkloadPlugin(
    name="asc",
    order=1,
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
    capabilities=asc.AscCapabilities,
    check=check_declared,
    roles=ROLES,
    agent_side="hilbench.workloads.asc.agent_samples:SampleLists",
    complete=complete,
    for_version=for_version,
    always_on_wire=True,
    spec_handshake=(asc.AscCapabilities,),
    spec=(("ASC", (asc.AscLoadModel, asc.AscModelReply, asc.AscLoadSample, asc.AscUnload,
                   asc.AscHeldReply, asc.AscLoadStream, asc.AscUnloadStream,
                   asc.AscStreamReply, asc.AscSingleStream, asc.AscSampleResult,
                   asc.AscRepeat, asc.AscStream, asc.AscWindowResult, asc.AscLoadSampleList,
                   asc.AscSampleListReply, asc.AscSamples, asc.AscSamplesResult)),),
    procedures={"asc": "hilbench.workloads.asc.procedures.run:PROCEDURE"},
    summary_tables=(
        # Table 6's layout first, each system's detail below
        "hilbench.workloads.asc.report.table6",
        "hilbench.workloads.asc.report.table",
        "hilbench.workloads.asc.report.closed",  # the closed category: one NIR graph, every device
    ),
    report_figures=("hilbench.workloads.asc.report.figures:report_figures",),
    trace_runs="hilbench.workloads.asc.report.figures:trace_runs",
    stage_plans="hilbench.workloads.asc.report.stages:STAGES",
    methodology="hilbench.workloads.asc.report.methodology:asc_methodology",
    conformance="hilbench.workloads.asc.conformance:check_asc",
    leaderboard="hilbench.workloads.asc.report.leaderboard",
    report_section="hilbench.workloads.asc.report.section:report_section",
)
