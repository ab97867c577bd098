"""The QUBO workload as the registry sees it (``hilbench.workloads`` entry point ``qubo``):
its wire contract, what its declared capabilities rule out, which driver role serves which
request, and where its procedures, tables and figures live."""

from __future__ import annotations

from typing import Any

import numpy as np

from hilbench.contracts.base import ContractError, Reply
from hilbench.contracts.registry import WorkloadPlugin
from hilbench.workloads.qubo import contract as qubo

_RUNS = (qubo.FixedTimeout, qubo.TimeToSolution)


def check_declared(request: Any, declared: qubo.QuboCapabilities) -> None:
    """A solver, mode or timeout the driver does not offer (bad_arguments)."""
    if isinstance(request, qubo.QuboLoad):
        unknown = [s for s in request.solvers or () if s not in declared.solvers]
        if unknown:
            raise ContractError("bad_arguments", "solvers",
                                f"unknown solver {', '.join(map(repr, unknown))} (this driver "
                                f"has {', '.join(declared.solvers)})")
        return
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


def _load(driver: Any, request: Any, arrays: list[np.ndarray], stop: Any
          ) -> tuple[Reply, list[np.ndarray]]:
    return driver.load_qubo(request, arrays[0]), []


def _solve(driver: Any, request: Any, arrays: list[np.ndarray], stop: Any
           ) -> tuple[Reply, list[np.ndarray]]:
    solved = driver.solve(request, stop)
    return solved.reply, [solved.state]


def for_version(declared: dict[str, Any], version: int) -> dict[str, Any]:
    """``untimed`` came with protocol version 4."""
    return declared if version >= 4 else {k: v for k, v in declared.items() if k != "untimed"}


WORKLOAD = WorkloadPlugin(
    name="qubo",
    order=0,
    load=qubo.QuboLoad,
    run=qubo.QuboRun,
    replies={
        qubo.QuboLoad: qubo.QuboLoadReply,
        qubo.FixedTimeout: qubo.QuboRunReply,
        qubo.TimeToSolution: qubo.QuboRunReply,
    },
    capabilities=qubo.QuboCapabilities,
    check=check_declared,
    roles={qubo.QuboLoad: _load, **dict.fromkeys(_RUNS, _solve)},
    for_version=for_version,
    always_on_wire=True,
    spec_handshake=(qubo.QuboCapabilities, qubo.QuboLimits),
    spec=(("QUBO", (qubo.QuboLoad, qubo.QuboLoadReply, qubo.FixedTimeout, qubo.TimeToSolution,
                    qubo.QuboRunReply, qubo.Reached)),),
    procedures={
        "qubo": "hilbench.workloads.qubo.procedures.run:PROCEDURE",
        "largest_workload": "hilbench.workloads.qubo.procedures.largest:PROCEDURE",
    },
    summary_tables=(
        "hilbench.workloads.qubo.report.table",
        "hilbench.workloads.qubo.report.tts_table",
        "hilbench.workloads.qubo.report.largest_table",
    ),
    report_figures=("hilbench.workloads.qubo.report.figures:report_figures",),
    trace_runs="hilbench.workloads.qubo.report.figures:trace_runs",
    stage_plans="hilbench.workloads.qubo.report.stages:STAGES",
    methodology="hilbench.workloads.qubo.report.methodology:qubo_methodology",
    conformance="hilbench.workloads.qubo.conformance:check_qubo",
    leaderboard="hilbench.workloads.qubo.report.leaderboard",
    bench_fixture="hilbench.workloads.qubo.bench_fixture",
)
