"""QUBO (maximum independent set) procedures: fixed timeout and time to solution.

One campaign unit = one run: load the workload (untimed, its own phase), then solve (the timed
phase). The target cost is looked up before the run starts and recorded in its parameters, so the
BKS-gap in the results traces back to a stated target and its provenance.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hilbench.documents import Event, Metric
from hilbench.orchestrator.campaign import Campaign
from hilbench.orchestrator.client import AgentClient
from hilbench.orchestrator.instruments import (
    Instrument,
    aperture_s,
    timing_uncertainty_s,
    to_watts,
)
from hilbench.orchestrator.phases import Phase, RunContext
from hilbench.power.metrics import PhaseWindow, phase_power
from hilbench.workloads.qubo import Target, bks_gap, find_target, generate_qubo

# Generous reply deadline on top of the solver's own time (set-up, cost check, transport).
REPLY_MARGIN_S = 120.0


@dataclass
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
    _target: Target | None = field(default=None, repr=False, compare=False)

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

    def prepare(self) -> dict[str, Any]:
        """Look up the target cost (exact, published or Tabu) before the run starts."""
        self._target = find_target(self.nodes, self.density, self.seed)
        return {
            "target": self._target.cost,
            "target_source": self._target.source,
            "target_detail": self._target.detail,
        }

    def run(self, ctx: RunContext, client: AgentClient, instruments: Sequence[Instrument]) -> None:
        run_unit(ctx, self, client, self._target, instruments)


def expand_units(campaign: Campaign) -> list[QuboUnit]:
    """Every unit of the campaign, with units of one workload next to each other."""
    units = []
    for spec in campaign.qubo:
        budgets: list[float | None] = (
            list(spec.timeouts_s) if spec.scenario == "fixed_timeout" else [None]
        )
        for n, d, seed, rep, solver, budget in itertools.product(
            spec.nodes,
            spec.densities,
            spec.seeds,
            range(campaign.repetitions),
            spec.solvers,
            budgets,
        ):
            units.append(
                QuboUnit(
                    spec.agent,
                    spec.scenario,
                    n,
                    d,
                    seed,
                    solver,
                    budget,
                    spec.gaps,
                    spec.max_time_s,
                    rep,
                )
            )
    return units


def run_unit(
    ctx: RunContext,
    unit: QuboUnit,
    client: AgentClient,
    target: Target,
    instruments: Sequence[Instrument] = (),
) -> None:
    """Load, then solve; emit the solver's result as an event and the metrics derived from it.

    Instruments that measure the agent's device acquire through the solve phase; the average
    power is taken over the device's own timed region, mapped onto the orchestrator timeline.
    """
    matrix = generate_qubo(unit.nodes, unit.density, unit.seed)
    with ctx.phase("load", [client]) as phase:
        reply = client.request(
            "load",
            {"workload": "qubo", "nodes": unit.nodes, "density": unit.density, "seed": unit.seed},
            [matrix],
            timeout_s=REPLY_MARGIN_S,
        )
        ctx.emit(Event(ctx.run_uid, phase.uid, "loaded", ctx.now(), reply.body))
    body: dict[str, Any] = {"mode": unit.scenario, "solver": unit.solver, "seed": unit.seed}
    if unit.scenario == "fixed_timeout":
        assert unit.timeout_s is not None
        body["timeout_s"] = unit.timeout_s
        budget = unit.timeout_s
    else:
        body.update(target=target.cost, gaps=list(unit.gaps), max_time_s=unit.max_time_s)
        budget = unit.max_time_s
    with ctx.phase("solve", [client], instruments) as phase:
        reply = client.request(
            "run", body, timeout_s=budget + REPLY_MARGIN_S, while_waiting=phase.poll
        )
        result = reply.body
        ctx.emit(Event(ctx.run_uid, phase.uid, "solve_result", ctx.now(), result))
    power = _run_power(phase, client.name, result, instruments)
    _emit_metrics(ctx, unit, result, target, power)


def _run_power(
    phase: Phase, agent: str, result: dict[str, Any], instruments: Sequence[Instrument]
) -> dict[str, Any]:
    """Average power over the timed region: from an external instrument when one measures the
    device, else from the agent's internal reading (RAPL); never a made-up number."""
    internal = result.get("power", {})
    if not instruments:
        if internal.get("measured"):
            return {
                "value": internal.get("avg_power_w"),
                "uncertainty": None,
                "meta": {"source": internal.get("source"), "domains": internal.get("domains")},
            }
        return {
            "value": None,
            "uncertainty": None,
            "meta": {
                "source": internal.get("source"),
                "reason": internal.get("reason", "no power source"),
            },
        }
    inst = instruments[0]
    offset = phase.offsets[agent]
    start = phase.to_orchestrator_time(agent, float(result["t_start"]))
    end = phase.to_orchestrator_time(agent, float(result["t_end"]))
    batch = phase.samples.get(inst.spec.id)
    meta: dict[str, Any] = {
        "source": inst.spec.id,
        "instrument": inst.info.name,
        "window": [start, end],
        "clock_offset": offset.to_dict(),
    }
    try:
        watts = to_watts(inst.info, batch.values)
        estimate = phase_power(
            batch.t,
            watts,
            PhaseWindow("active", start, end),
            inst.info,
            aperture_s=aperture_s(inst),
            timing_uncertainty_s=timing_uncertainty_s(inst, offset.uncertainty_s),
        )
    except ValueError as exc:
        return {"value": None, "uncertainty": None, "meta": {**meta, "reason": str(exc)}}
    meta["budget"] = estimate.to_dict()
    return {"value": estimate.mean_w, "uncertainty": estimate.uncertainty95, "meta": meta}


def _emit_metrics(
    ctx: RunContext,
    unit: QuboUnit,
    result: dict[str, Any],
    target: Target,
    power: dict[str, Any],
) -> None:
    run = ctx.run_uid
    run_s = float(result["run_s"])
    avg_w, avg_u, power_meta = power["value"], power["uncertainty"], power["meta"]
    ctx.emit(Metric(run, "run_time_s", run_s, "s"))
    ctx.emit(Metric(run, "setup_s", float(result.get("setup_s", 0.0)), "s"))
    ctx.emit(Metric(run, "avg_power_w", avg_w, "W", avg_u, meta=power_meta))
    energy = avg_w * run_s if avg_w is not None else None
    energy_u = avg_u * run_s if avg_u is not None else None
    ctx.emit(
        Metric(
            run,
            "energy_j",
            energy,
            "J",
            energy_u,
            meta={**power_meta, "method": "average power × run time"},
        )
    )
    internal = result.get("power", {})
    if internal.get("measured") and power_meta.get("source") != internal.get("source"):
        ctx.emit(
            Metric(
                run,
                "internal_avg_power_w",
                internal.get("avg_power_w"),
                "W",
                meta={"source": internal.get("source")},
            )
        )
    if unit.scenario == "fixed_timeout":
        cost = int(result["cost"])
        ctx.emit(Metric(run, "cost", float(cost), ""))
        gap_meta = {"target": target.cost, "target_source": target.source}
        ctx.emit(Metric(run, "bks_gap", bks_gap(cost, target.cost), "", meta=gap_meta))
        ctx.emit(Metric(run, "requested_timeout_s", float(result["requested_timeout_s"]), "s"))
        ctx.emit(Metric(run, "cost_check_s", float(result.get("cost_check_s", 0.0)), "s"))
        return
    for gap, hit in result.get("reached", {}).items():
        latency = hit["latency_s"] if hit else None
        meta = {"target": target.cost, "target_source": target.source, "gap": float(gap)}
        ctx.emit(Metric(run, f"tts_s@{gap}", latency, "s", meta=meta))
        tts_energy = avg_w * latency if (avg_w is not None and latency is not None) else None
        ctx.emit(
            Metric(
                run,
                f"tts_energy_j@{gap}",
                tts_energy,
                "J",
                meta={**meta, "method": "average run power × latency", **power_meta},
            )
        )
