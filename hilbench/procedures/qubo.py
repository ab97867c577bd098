"""QUBO (maximum independent set) procedures: fixed timeout and time to solution.

One campaign unit = one run: load the workload (untimed, its own phase), then solve (the timed
phase). The target cost is looked up before the run starts and recorded in its parameters, so the
BKS-gap in the results traces back to a stated target and its provenance.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from hilbench.documents import Event, Metric
from hilbench.orchestrator.campaign import Campaign
from hilbench.orchestrator.client import AgentClient
from hilbench.orchestrator.phases import RunContext
from hilbench.workloads.qubo import Target, bks_gap, find_target, generate_qubo

# Generous reply deadline on top of the solver's own time (set-up, cost check, transport).
REPLY_MARGIN_S = 120.0


@dataclass(frozen=True)
class QuboUnit:
    agent: str
    scenario: str
    nodes: int
    density: float
    seed: int
    solver: str
    timeout_s: float | None
    gaps: tuple[float, ...]
    max_time_s: float
    repetition: int

    @property
    def procedure(self) -> str:
        return f"qubo.{self.scenario}"

    @property
    def key(self) -> str:
        budget = f"timeout={self.timeout_s:g}" if self.timeout_s is not None else "tts"
        return (
            f"qubo/{self.scenario}/n={self.nodes}/d={self.density:g}/seed={self.seed}/"
            f"{self.solver}/{budget}/rep={self.repetition}"
        )

    def params(self) -> dict[str, Any]:
        return {
            "workload": "qubo",
            "scenario": self.scenario,
            "nodes": self.nodes,
            "density": self.density,
            "seed": self.seed,
            "solver": self.solver,
            "timeout_s": self.timeout_s,
            "gaps": list(self.gaps),
            "max_time_s": self.max_time_s,
            "repetition": self.repetition,
        }


def expand_units(campaign: Campaign) -> list[QuboUnit]:
    """Every unit of the campaign, with units of one workload next to each other."""
    units = []
    for spec in campaign.qubo:
        budgets: list[float | None] = (
            list(spec.timeouts_s) if spec.scenario == "fixed_timeout" else [None]
        )
        for n, d, seed, rep, solver, budget in itertools.product(
            spec.nodes, spec.densities, spec.seeds, range(campaign.repetitions), spec.solvers, budgets
        ):
            units.append(
                QuboUnit(spec.agent, spec.scenario, n, d, seed, solver, budget, spec.gaps,
                         spec.max_time_s, rep)
            )
    return units


def run_unit(ctx: RunContext, unit: QuboUnit, client: AgentClient, target: Target) -> None:
    """Load, then solve; emit the solver's result as an event and the metrics derived from it."""
    matrix = generate_qubo(unit.nodes, unit.density, unit.seed)
    with ctx.phase("load", [client]) as phase_uid:
        reply = client.request(
            "load",
            {"workload": "qubo", "nodes": unit.nodes, "density": unit.density, "seed": unit.seed},
            [matrix],
            timeout_s=REPLY_MARGIN_S,
        )
        ctx.emit(Event(ctx.run_uid, phase_uid, "loaded", ctx.now(), reply.body))
    body: dict[str, Any] = {"mode": unit.scenario, "solver": unit.solver, "seed": unit.seed}
    if unit.scenario == "fixed_timeout":
        assert unit.timeout_s is not None
        body["timeout_s"] = unit.timeout_s
        budget = unit.timeout_s
    else:
        body.update(target=target.cost, gaps=list(unit.gaps), max_time_s=unit.max_time_s)
        budget = unit.max_time_s
    with ctx.phase("solve", [client]) as phase_uid:
        reply = client.request("run", body, timeout_s=budget + REPLY_MARGIN_S)
        result = reply.body
        ctx.emit(Event(ctx.run_uid, phase_uid, "solve_result", ctx.now(), result))
    _emit_metrics(ctx, unit, result, target)


def _emit_metrics(ctx: RunContext, unit: QuboUnit, result: dict[str, Any], target: Target) -> None:
    run = ctx.run_uid
    power = result.get("power", {})
    power_meta = {"source": power.get("source")}
    if not power.get("measured"):
        power_meta["reason"] = power.get("reason", "no power source")
    avg_w = power.get("avg_power_w") if power.get("measured") else None
    ctx.emit(Metric(run, "run_time_s", float(result["run_s"]), "s"))
    ctx.emit(Metric(run, "setup_s", float(result.get("setup_s", 0.0)), "s"))
    ctx.emit(Metric(run, "avg_power_w", avg_w, "W", meta=power_meta))
    ctx.emit(
        Metric(run, "energy_j", power.get("energy_j") if power.get("measured") else None, "J",
               meta=power_meta)
    )
    if unit.scenario == "fixed_timeout":
        cost = int(result["cost"])
        ctx.emit(Metric(run, "cost", float(cost), ""))
        ctx.emit(Metric(run, "bks_gap", bks_gap(cost, target.cost), "",
                        meta={"target": target.cost, "target_source": target.source}))
        ctx.emit(Metric(run, "requested_timeout_s", float(result["requested_timeout_s"]), "s"))
        ctx.emit(Metric(run, "cost_check_s", float(result.get("cost_check_s", 0.0)), "s"))
        return
    for gap, hit in result.get("reached", {}).items():
        latency = hit["latency_s"] if hit else None
        meta = {"target": target.cost, "target_source": target.source, "gap": float(gap)}
        ctx.emit(Metric(run, f"tts_s@{gap}", latency, "s", meta=meta))
        energy = avg_w * latency if (avg_w is not None and latency is not None) else None
        ctx.emit(Metric(run, f"tts_energy_j@{gap}", energy, "J",
                        meta={**meta, "method": "average run power × latency", **power_meta}))


def lookup_target(unit: QuboUnit) -> Target:
    return find_target(unit.nodes, unit.density, unit.seed)
