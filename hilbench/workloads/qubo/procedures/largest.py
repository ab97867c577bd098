"""Largest workload supported: grow the QUBO graph until the system under test cannot go on.

The NeuroBench leaderboard asks for the largest graph a system solves at 1 % density and the
largest fully connected one. One unit per density: starting at ``start_nodes``, n grows by
``growth`` per step; each step generates the workload, loads it (untimed) and runs one fixed
timeout, and the orchestrator checks the returned state as in every QUBO run. The search stops
at the first of:

- ``refused``: the agent answered an error (``device_full``, ``bad_arguments``, …);
- ``failed``: the answer was infeasible, its claimed cost wrong or its reply broke the contract
  (``bad_reply``), or the agent was too slow to answer within ``time_limit_s``;
- ``time_limit``: a step (generation + load + solve) took longer than ``time_limit_s``;
- ``memory_limit``: the next workload's dense matrix would pass ``memory_limit_bytes`` or a
  limit the driver declares in ``capabilities()["qubo"]["limits"]`` (``max_nodes``, as a number
  or per solver, and ``max_bytes``);
- ``max_nodes``: the next size would pass the table's ``max_nodes``.

The run stores every attempt as a ``size_attempt`` event and the largest size that loaded and
returned a feasible answer as the metric ``largest_nodes`` with the stop reason.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import Field

from hilbench.contracts.base import to_wire
from hilbench.contracts.remote import RemoteDevice
from hilbench.documents import Event, Metric
from hilbench.sdk import CampaignTable, Instrument, Procedure, RunContext, UnitKey
from hilbench.wire.link import AgentError
from hilbench.workloads.qubo import edges_in_graph
from hilbench.workloads.qubo.check import SolutionError
from hilbench.workloads.qubo.procedures.solve import QuboWorkload, check_solution, load, run_body
from hilbench.workloads.qubo.remote import RemoteQuboSolver

if TYPE_CHECKING:
    from hilbench.sdk import Campaign


class LargestWorkloadTable(CampaignTable):
    """``[[largest_workload]]``: grow n per density until the agent refuses, fails or a limit
    is reached; stores the largest feasible size and why it stopped."""

    densities: list[Annotated[float, Field(gt=0, le=1)]] = Field(
        [0.01, 1.0], min_length=1, description="edge densities (leaderboard: 0.01 and 1.0)"
    )
    solver: str = Field("anytime", description="solver of the agent's driver")
    seed: Annotated[int, Field(ge=0)] = 0
    start_nodes: Annotated[int, Field(ge=2)] = 100
    growth: Annotated[float, Field(gt=1.0)] = 2.0
    max_nodes: Annotated[int, Field(ge=2)] = 1_000_000
    timeout_s: Annotated[float, Field(ge=1e-3, le=1e2)] = Field(
        1.0, description="fixed timeout of the run at each size"
    )
    time_limit_s: Annotated[float, Field(gt=0)] = Field(
        600.0, description="a step (generate + load + solve) longer than this stops the search"
    )
    memory_limit_bytes: Annotated[int, Field(gt=0)] | None = Field(
        None, description="stop before a dense int8 matrix (n² bytes) larger than this"
    )


StopReason = Literal["refused", "failed", "time_limit", "memory_limit", "max_nodes"]


def sizes(start: int, growth: float) -> Iterator[int]:
    """start, start·growth, … rounded and strictly increasing, without end."""
    n = start
    while True:
        yield n
        n = max(n + 1, round(n * growth))


@dataclass
class LargestUnit:
    agent: str
    density: float
    table: LargestWorkloadTable
    repetition: int

    @property
    def procedure(self) -> str:
        return "qubo.largest_workload"

    uses_instruments: ClassVar[bool] = True

    @property
    def key(self) -> UnitKey:
        return UnitKey(("qubo", "largest_workload", ("d", self.density), self.table.solver,
                        ("seed", self.table.seed), ("rep", self.repetition)))

    def params(self) -> dict[str, Any]:
        t = self.table
        return {
            "workload": "qubo",
            "scenario": "largest_workload",
            "density": self.density,
            "solver": t.solver,
            "seed": t.seed,
            "start_nodes": t.start_nodes,
            "growth": t.growth,
            "max_nodes": t.max_nodes,
            "timeout_s": t.timeout_s,
            "time_limit_s": t.time_limit_s,
            "memory_limit_bytes": t.memory_limit_bytes,
            "repetition": self.repetition,
        }

    def prepare(self) -> dict[str, Any]:
        return {}

    def run(self, ctx: RunContext, device: RemoteDevice, instruments: Sequence[Instrument]
            ) -> None:
        grow(ctx, self, device)


def _stop_before(unit: LargestUnit, device: RemoteDevice, n: int) -> tuple[str, str] | None:
    t = unit.table
    if n > t.max_nodes:
        return "max_nodes", f"the next size {n} passes max_nodes {t.max_nodes}"
    if t.memory_limit_bytes is not None and n * n > t.memory_limit_bytes:
        return "memory_limit", (
            f"a {n}² int8 matrix ({n * n} bytes) passes memory_limit_bytes {t.memory_limit_bytes}"
        )
    declared_caps = device.capabilities.qubo
    declared = declared_caps.declared_limit(t.solver, n) if declared_caps else None
    if declared:
        return "memory_limit", declared
    return None


def _attempt(ctx: RunContext, unit: LargestUnit, device: RemoteDevice, n: int
             ) -> dict[str, Any]:
    """Generate, load and solve size ``n``; the outcome, with ``stop`` set when it ends here."""
    t = unit.table
    started = time.monotonic()
    outcome: dict[str, Any] = {"nodes": n, "edges": edges_in_graph(n, unit.density)}
    workload = QuboWorkload.generate(n, unit.density, t.seed)
    outcome["generate_s"] = time.monotonic() - started
    solver = RemoteQuboSolver(device)
    try:
        with ctx.phase(f"load n={n}", [device]):
            left = t.time_limit_s - (time.monotonic() - started)
            with device.waiting(timeout_s=max(left, 1.0)):
                # the reply goes into the size_attempt event, stored as JSON
                outcome["load"] = to_wire(load(solver, workload, [t.solver]))
        with ctx.phase(f"solve n={n}", [device]):
            left = t.time_limit_s - (time.monotonic() - started)
            with device.waiting(timeout_s=max(left, t.timeout_s + 1.0)):
                solved = solver.solve(run_body("fixed_timeout", t.solver, t.seed,
                                               timeout_s=t.timeout_s))
        check = check_solution(workload, solved)
        outcome.update(check=check.to_dict(), actual_s=solved.reply.actual_s)
        if not check.feasible:
            outcome["stop"] = ("failed", f"infeasible answer at n={n}")
    except AgentError as exc:
        # an answer that breaks the reply contract is a failed answer, not a refusal
        outcome["stop"] = ("failed" if exc.code == "bad_reply" else "refused", str(exc))
    except SolutionError as exc:
        outcome["stop"] = ("failed", f"bad answer at n={n}: {exc}")
    except TimeoutError as exc:
        outcome["stop"] = ("failed", f"no answer at n={n} within the time limit: {exc}")
    outcome["step_s"] = time.monotonic() - started
    if "stop" not in outcome and outcome["step_s"] > t.time_limit_s:
        outcome["stop"] = (
            "time_limit",
            f"n={n} took {outcome['step_s']:.1f} s > time_limit_s {t.time_limit_s:g}",
        )
    return outcome


def grow(ctx: RunContext, unit: LargestUnit, device: RemoteDevice) -> None:
    """Try growing sizes; emit each attempt and, at the end, the largest feasible size."""
    t = unit.table
    largest: int | None = None
    reason: tuple[str, str]
    for n in sizes(t.start_nodes, t.growth):
        stop = _stop_before(unit, device, n)
        if stop:
            reason = stop
            break
        outcome = _attempt(ctx, unit, device, n)
        stop = outcome.pop("stop", None)
        ctx.emit(
            Event(
                ctx.run_uid,
                None,
                "size_attempt",
                ctx.now(),
                {**outcome, "outcome": stop[0] if stop else "feasible"},
            )
        )
        if stop:
            reason = stop
            break
        largest = n
    meta = {
        "density": unit.density,
        "solver": t.solver,
        "stop_reason": reason[0],
        "detail": reason[1],
    }
    ctx.emit(Metric(ctx.run_uid, "largest_nodes", largest, "", meta=meta))
    ctx.emit(
        Metric(
            ctx.run_uid,
            "largest_edges",
            edges_in_graph(largest, unit.density) if largest else None,
            "",
            meta=meta,
        )
    )


def expand_units(tables: Sequence[LargestWorkloadTable], campaign: Campaign) -> list[LargestUnit]:
    return [
        LargestUnit(table.agent, density, table, rep)
        for table in tables
        for density in table.densities
        for rep in range(campaign.repetitions)
    ]


PROCEDURE = Procedure(
    table=LargestWorkloadTable,
    expand=expand_units,
    summary="QUBO largest workload supported: grow n per density until refusal, failure or "
    "a limit",
)
