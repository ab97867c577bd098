"""The ``[[maxcut]]`` campaign table and its procedure.

```toml
[[maxcut]]
agent = "cpu0"
nodes = [10, 16, 20, 50]
densities = [0.1, 0.3]
seeds = [0, 1, 2]
solvers = ["local_search"]
restarts = [1, 8]
```

One unit = one run: load the graph (untimed, phase ``load``), then cut it (phase ``cut``,
measured by the agent's instruments). The orchestrator re-scores the returned partition: a
claimed cut that is not the partition's fails the run (``bad_solution``). Figures: the cut, the
target (exact for n ≤ 20, a stated reference above) and the approximation ratio cut / target;
with an instrument, the mean power over the timed region and the energy.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

import numpy as np
from pydantic import Field

from hilbench.sdk import (
    AgentError,
    CampaignTable,
    Echo,
    Event,
    Instrument,
    Metric,
    Procedure,
    RemoteDevice,
    RunContext,
    UnitKey,
    UnitNeeds,
    instrument_power,
)
from hilbench_maxcut.contract import MaxCutLoad, MaxCutLoadReply, MaxCutRun, MaxCutRunReply
from hilbench_maxcut.solver import Target, cut_size, find_target, graph_edges

Solver = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.+-]+$")]
# A run's budget for `campaign check`: restarts at this rate. Measured on the 2-core test
# machine under load (examples/plugins/maxcut/maxcut.toml, 512 restarts): ~5 900/s at n = 10,
# ~3 400/s at n = 60; this is below both, so the estimate errs long.
RESTARTS_PER_SECOND = 2000.0


class MaxCutTable(CampaignTable):
    """One grid of MaxCut runs: nodes × densities × seeds × solvers × restarts, one unit each
    per repetition, on the QUBO workloads' graphs."""

    nodes: list[Annotated[int, Field(ge=2, le=4096)]] = Field(
        min_length=1, max_length=64, description="graph sizes (2 … 4096)")
    densities: list[Annotated[float, Field(gt=0, le=1)]] = Field(
        min_length=1, max_length=64, description="edge densities in (0, 1]")
    seeds: list[Annotated[int, Field(ge=0, le=2**31 - 1)]] = Field(
        min_length=1, max_length=1024, description="graph seeds")
    solvers: list[Solver] = Field(["local_search"], min_length=1, max_length=16,
                                  description="solvers of the agent's driver "
                                  "(maxcut-cpu: local_search)")
    restarts: list[Annotated[int, Field(ge=1, le=100_000)]] = Field(
        [8], min_length=1, max_length=16, description="local-search restarts per run")


@functools.lru_cache(maxsize=256)
def target_of(nodes: int, density: float, seed: int) -> Target:
    return find_target(nodes, density, seed)


@dataclass
class MaxCutUnit:
    agent: str
    nodes: int
    density: float
    seed: int
    solver: str
    restarts: int
    repetition: int
    uses_instruments: ClassVar[bool] = True

    @property
    def procedure(self) -> str:
        return "maxcut.cut"

    @property
    def key(self) -> UnitKey:
        return UnitKey(("maxcut", ("n", self.nodes), ("d", self.density), ("seed", self.seed),
                        self.solver, ("restarts", self.restarts), ("rep", self.repetition)))

    def params(self) -> dict[str, Any]:
        return {"workload": "maxcut", "nodes": self.nodes, "density": self.density,
                "seed": self.seed, "solver": self.solver, "restarts": self.restarts,
                "repetition": self.repetition}

    def prepare(self) -> dict[str, Any]:
        target = target_of(self.nodes, self.density, self.seed)
        return {"target": target.cut, "target_source": target.source,
                "target_detail": target.detail}

    def needs(self, limits: Mapping[str, Any] | None) -> UnitNeeds:
        """The edge list (two int32 per edge) and a budget from the restarts."""
        edges = int(0.5 * self.density * self.nodes**2)
        return UnitNeeds(8 * edges + self.nodes, self.restarts / RESTARTS_PER_SECOND, "nodes")

    def run(self, ctx: RunContext, device: RemoteDevice, instruments: Sequence[Instrument]
            ) -> None:
        target = target_of(self.nodes, self.density, self.seed)
        edges = graph_edges(self.nodes, self.density, self.seed)
        with ctx.phase("load", [device]) as phase:
            load = MaxCutLoad(workload="maxcut", nodes=self.nodes, edges=len(edges))
            loaded, _ = device.call("load", load, [edges], 120.0)
            assert isinstance(loaded, MaxCutLoadReply)
            ctx.emit(Event(ctx.run_uid, phase.uid, "loaded", ctx.now(),
                           {"nodes": loaded.nodes, "edges": loaded.edges}))
        body = MaxCutRun(workload="maxcut", solver=self.solver, restarts=self.restarts,
                         seed=self.seed)
        echo = Echo(self.nodes + 256, {"workload": "maxcut", "solver": self.solver,
                                       "restarts": self.restarts, "seed": self.seed})
        with ctx.phase("cut", [device], instruments, echo=echo) as phase:
            with device.waiting(phase.poll):
                reply, arrays = device.call("run", body, None, 60.0 + self.restarts)
            assert isinstance(reply, MaxCutRunReply)
            side = _checked_partition(device.name, arrays, self.nodes)
            rescored = cut_size(edges, side)
            ctx.emit(Event(ctx.run_uid, phase.uid, "cut_result", ctx.now(),
                           {"cut": reply.cut, "rescored": rescored,
                            "actual_s": reply.actual_s}))
            if rescored != reply.cut:
                raise AgentError(device.name, "bad_solution",
                                 f"the agent claims a cut of {reply.cut}, its partition cuts "
                                 f"{rescored} edges")
        _emit_metrics(ctx, phase, device.name, reply, rescored, target, instruments)


def _checked_partition(agent: str, arrays: list[np.ndarray], nodes: int) -> np.ndarray:
    if len(arrays) != 1:
        raise AgentError(agent, "bad_solution", f"expected one partition, got {len(arrays)}")
    side = np.asarray(arrays[0])
    if side.shape != (nodes,) or side.dtype != np.uint8 or (side > 1).any():
        raise AgentError(agent, "bad_solution", f"the partition is {side.dtype} "
                         f"{side.shape}, not 0/1 uint8 of ({nodes},)")
    return side


def _emit_metrics(ctx: RunContext, phase: Any, agent: str, reply: MaxCutRunReply, cut: int,
                  target: Target, instruments: Sequence[Instrument]) -> None:
    run = ctx.run_uid
    target_meta = {"target": target.cut, "target_source": target.source,
                   "target_detail": target.detail}
    ctx.emit(Metric(run, "cut", float(cut), ""))
    ctx.emit(Metric(run, "target_cut", float(target.cut), "", meta=target_meta))
    ratio = cut / target.cut if target.cut else 1.0
    ctx.emit(Metric(run, "approximation_ratio", ratio, "", meta=target_meta))
    ctx.emit(Metric(run, "actual_s", reply.actual_s, "s"))
    if not instruments:
        return
    start = phase.to_orchestrator_time(agent, reply.t_start)
    end = phase.to_orchestrator_time(agent, reply.t_end)
    power = instrument_power(phase, agent, instruments[0], start, end)
    ctx.emit(Metric(run, "avg_power_w", power.value, "W", power.uncertainty, meta=power.meta))
    energy = power.times(reply.actual_s, "average power × actual solving time")
    ctx.emit(Metric(run, "energy_j", energy.value, "J", energy.uncertainty, meta=energy.meta))


def expand_units(tables: Sequence[MaxCutTable], campaign: Any) -> list[MaxCutUnit]:
    """Every unit of the ``[[maxcut]]`` tables, the runs of one graph next to each other."""
    return [MaxCutUnit(t.agent, n, d, seed, solver, restarts, rep)
            for t in tables
            for n, d, seed, rep, solver, restarts in itertools.product(
                t.nodes, t.densities, t.seeds, range(campaign.repetitions), t.solvers,
                t.restarts)]


def count_units(table: MaxCutTable) -> int:
    return (len(table.nodes) * len(table.densities) * len(table.seeds) * len(table.solvers)
            * len(table.restarts))


PROCEDURE = Procedure(table=MaxCutTable, expand=expand_units, count=count_units,
                      summary="MaxCut on the QUBO workloads' graphs: cut, approximation ratio, "
                              "power")
