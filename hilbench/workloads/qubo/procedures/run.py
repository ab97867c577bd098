"""QUBO (maximum independent set) procedures: fixed timeout and time to solution.

One campaign unit = one run: load the workload (untimed, its own phase), then solve (the timed
phase). The target cost is looked up before the run starts and recorded in its parameters, so the
BKS-gap in the results traces back to a stated target and its provenance.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import msgspec

from hilbench.contracts.base import UntimedWork, to_wire
from hilbench.contracts.capabilities import Capabilities
from hilbench.contracts.remote import RemoteDevice
from hilbench.documents import Event, Metric, flag
from hilbench.sdk import (
    Instrument,
    Phase,
    Procedure,
    RunContext,
    TimingCheck,
    UnitKey,
    UnitNeeds,
    check_timed_region,
    raise_unless_on_time,
)
from hilbench.wire.link import AgentError
from hilbench.wire.link_probe import Echo
from hilbench.workloads.qubo import Target, bks_gap, find_target
from hilbench.workloads.qubo.best_known import BestKnownStore
from hilbench.workloads.qubo.check import (
    SolutionError,
    StateCheck,
    is_overrun,
    overrun_tolerance_s,
)
from hilbench.workloads.qubo.contract import QuboCapabilities, QuboLimits, QuboRunReply
from hilbench.workloads.qubo.generator import edge_count
from hilbench.workloads.qubo.procedures.power import (
    RunPower,
    hold_until_runtime_end,
    reach_power,
    run_power,
    stopped_early,
)
from hilbench.workloads.qubo.procedures.solve import QuboWorkload, check_solution, load, run_body
from hilbench.workloads.qubo.procedures.table import QuboTable
from hilbench.workloads.qubo.remote import RemoteQuboSolver

if TYPE_CHECKING:
    from hilbench.sdk import Campaign

# A run reply's map without its state (costs, times, solver detail, power): what the echo
# before a solve phase adds to the state's bytes.
REPLY_MAP_BYTES = 2048


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
    _best_known: int | None = field(default=None, repr=False, compare=False)
    uses_instruments: ClassVar[bool] = True

    @property
    def procedure(self) -> str:
        return f"qubo.{self.scenario}"

    @property
    def requested_s(self) -> float:
        """What the orchestrator asked for (not what the agent says it was asked): the
        timeout, or the time-to-solution budget."""
        return self.timeout_s if self.timeout_s is not None else self.max_time_s

    @property
    def key(self) -> UnitKey:
        budget = ("timeout", self.timeout_s) if self.timeout_s is not None else "tts"
        return UnitKey(("qubo", self.scenario, ("n", self.nodes), ("d", self.density),
                        ("seed", self.seed), self.solver, budget, ("rep", self.repetition)))

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
        best = BestKnownStore().get(self.nodes, self.density, self.seed)
        self._best_known = None if best is None else best.cost
        return {
            "target": self._target.cost,
            "target_source": self._target.source,
            "target_detail": self._target.detail,
            "best_known": None if best is None else best.cost,
            "best_known_provenance": None if best is None else best.provenance,
        }

    def run(self, ctx: RunContext, device: RemoteDevice, instruments: Sequence[Instrument]
            ) -> None:
        assert self._target is not None, "prepare() looks the target up first"
        run_unit(ctx, self, device, self._target, instruments, self._best_known)

    def needs(self, limits: Mapping[str, Any] | None) -> UnitNeeds:
        """Before anything starts: the dense int8 matrix (n² bytes, held twice while it is
        sent) and the edge lists it is built from; the time budget; and whether the QUBO
        limits the agent's driver declares allow this size for this solver."""
        n = self.nodes
        memory = 2 * n * n + 32 * edge_count(n, self.density)
        refusal = None
        solvers = (limits or {}).get("qubo_solvers")
        budget = self.timeout_s if self.timeout_s is not None else self.max_time_s
        if solvers is not None and self.solver not in solvers:
            return UnitNeeds(memory, budget, "solvers",
                             f"unknown solver {self.solver!r} (the driver has "
                             f"{', '.join(solvers)})")
        declared = (limits or {}).get("qubo")
        if declared is not None:
            caps = QuboCapabilities(solvers=[self.solver],
                                    limits=msgspec.convert(declared, QuboLimits))
            why = caps.declared_limit(self.solver, n)
            if why:
                refusal = f"{n} is too large: {why}"
        return UnitNeeds(memory, budget, "nodes", refusal)


def expand_units(tables: Sequence[QuboTable], campaign: Campaign) -> list[QuboUnit]:
    """Every unit of the ``[[qubo]]`` tables, with units of one workload next to each other."""
    units = []
    for spec in tables:
        budgets: list[float | None] = (
            list(spec.timeouts_s or ()) if spec.scenario == "fixed_timeout" else [None]
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
                    tuple(spec.gaps),
                    spec.max_time_s,
                    rep,
                )
            )
    return units


def count_units(spec: QuboTable) -> int:
    """Units of one table per repetition: the product :func:`expand_units` makes."""
    budgets = len(spec.timeouts_s or ()) if spec.scenario == "fixed_timeout" else 1
    return len(spec.nodes) * len(spec.densities) * len(spec.seeds) * len(spec.solvers) * budgets


PROCEDURE = Procedure(
    table=QuboTable,
    expand=expand_units,
    summary="QUBO (maximum independent set): fixed timeout or time to solution",
    reanalysis="hilbench.workloads.qubo.procedures.reanalysis:reanalyse",
    count=count_units,
)


def run_unit(
    ctx: RunContext,
    unit: QuboUnit,
    device: RemoteDevice,
    target: Target,
    instruments: Sequence[Instrument] = (),
    best_known: int | None = None,
) -> None:
    """Load, then solve; check the returned state here; emit the result and derived metrics.

    Instruments that measure the agent's device acquire through the solve phase, which a fixed
    timeout holds open until its runtime's readings are in; power is taken over the fixed
    runtime from the device's own start (time to solution: its timed region, and up to each
    reach time), mapped onto the orchestrator timeline (:mod:`.qubo_power`). A reply whose
    claimed cost disagrees with the cost of the state it returned fails the run: the solver's
    own cost check is part of what is tested.
    A reply that breaks the contract (a field missing or of the wrong type) fails the run with
    ``bad_reply`` naming the field.
    """
    workload = QuboWorkload.generate(unit.nodes, unit.density, unit.seed)
    solver = RemoteQuboSolver(device)
    with ctx.phase("load", [device]) as phase:
        loaded = load(solver, workload, [unit.solver])  # prepare only what this run uses
        # the reply stored as JSON in the event
        ctx.emit(Event(ctx.run_uid, phase.uid, "loaded", ctx.now(), to_wire(loaded)))
    body = run_body(unit.scenario, unit.solver, unit.seed, timeout_s=unit.timeout_s,
                    target=target.cost, gaps=unit.gaps, max_time_s=unit.max_time_s)
    # The link is measured with requests of this run's shape: its body, and its reply's state
    # (one byte a node) with the reply's map, each after the link sat idle as it will while the
    # solver works.
    echo = Echo(unit.nodes + REPLY_MAP_BYTES, to_wire(body),  # its wire size
                work_s=unit.timeout_s or unit.max_time_s or 0.0)
    with ctx.phase("solve", [device], instruments, echo=echo) as phase:
        with device.waiting(phase.poll):
            solved = solver.solve(body)
        result = solved.reply
        # the reply stored as JSON in the event (reanalysis decodes it into QuboRunReply)
        ctx.emit(Event(ctx.run_uid, phase.uid, "solve_result", ctx.now(), to_wire(result)))
        assert device.window is not None
        timing = check_timed_region(result.t_start, result.t_end, result.actual_s,
                                    result.untimed_s, *device.window, phase.offsets[device.name],
                                    declared_untimed(device.capabilities),
                                    recheck=lambda: device.link_burst(echo))
        ctx.emit(Event(ctx.run_uid, phase.uid, "timing_check", ctx.now(), timing.to_dict()))
        if not timing.consistent:
            raise_unless_on_time(device.name, "", timing)
        try:
            check = check_solution(workload, solved)
        except SolutionError as exc:
            ctx.emit(
                Event(ctx.run_uid, phase.uid, "solution_check", ctx.now(), {"error": str(exc)})
            )
            raise AgentError(device.name, "bad_solution", str(exc)) from exc
        ctx.emit(Event(ctx.run_uid, phase.uid, "solution_check", ctx.now(), check.to_dict()))
        # a late reply is no answer (tried again), but a wrong one fails first, by name
        raise_unless_on_time(device.name, "", timing)
        if unit.scenario == "fixed_timeout":
            hold_until_runtime_end(phase, device.name, result, unit.requested_s, instruments)
    power = run_power(phase, device.name, unit.scenario, unit.requested_s, result,
                      instruments)
    _emit_metrics(ctx, unit, result, timing, check, target, power, best_known)
    if unit.scenario == "time_to_solution":
        _emit_time_to_solution(ctx, phase, device.name, unit, result, check, target, instruments)


def declared_untimed(caps: Capabilities) -> UntimedWork | None:
    """The per-run untimed work a QUBO driver declares (None: none)."""
    return caps.qubo.untimed if caps.qubo is not None else None


def _emit_metrics(
    ctx: RunContext,
    unit: QuboUnit,
    result: QuboRunReply,
    timing: TimingCheck,
    check: StateCheck,
    target: Target,
    power: RunPower,
    best_known: int | None = None,
) -> None:
    """The run's metrics. An overrun of a fixed timeout is not an answer at that timeout: its
    gap, power and energy are stored without a value (``meta.excluded = "overrun"``, the
    measured value beside it), so no table, summary or frame files them under the nominal
    timeout; ``overrun_actual_s`` holds its actual time."""
    run = ctx.run_uid
    requested_s = unit.requested_s
    actual_s = result.actual_s
    ctx.emit(Metric(run, "requested_s", requested_s, "s"))
    # The agent's claim, and beside it the orchestrator's bound (its request→reply window).
    ctx.emit(Metric(run, "actual_s", actual_s, "s"))
    ctx.emit(Metric(run, "orchestrator_window_s", timing.window_s, "s", meta=timing.to_dict()))
    overrun = is_overrun(requested_s, actual_s)
    ctx.emit(
        Metric(
            run,
            "overrun",
            flag(overrun),
            "",
            meta={
                "requested_s": requested_s,
                "actual_s": actual_s,
                "tolerance_s": overrun_tolerance_s(requested_s),
                "rule": "actual > requested + max(5 % of requested, 0.5 ms)",
            },
        )
    )
    late = overrun and unit.scenario == "fixed_timeout"
    if late:
        ctx.emit(Metric(run, "overrun_actual_s", actual_s, "s",
                        meta={"requested_s": requested_s, "ratio": actual_s / requested_s}))

    def figure(name: str, value: float | None, unit_: str, uncertainty: float | None = None,
               meta: dict[str, Any] | None = None) -> None:
        meta = dict(meta or {})
        if late and value is not None:
            meta.update(excluded="overrun", measured=value, measured_uncertainty=uncertainty,
                        reason=f"the run took {actual_s:.6g} s for a {requested_s:g} s timeout: "
                               "not filed under the nominal timeout")
            value = uncertainty = None
        ctx.emit(Metric(run, name, value, unit_, uncertainty, meta=meta))

    if unit.scenario == "fixed_timeout":
        early = stopped_early(requested_s, actual_s)
        ctx.emit(Metric(run, "stopped_early", flag(early), "", meta={
            "requested_s": requested_s, "actual_s": actual_s,
            "tolerance_s": overrun_tolerance_s(requested_s),
            "agent_says": result.stopped_early,
            "rule": "actual < requested - max(5 % of requested, 0.5 ms); power and energy "
                    "still cover the whole fixed runtime"}))
    ctx.emit(Metric(run, "setup_s", result.setup_s or 0.0, "s"))
    for name, found in (("avg_power_w", power.headline), ("energy_j", power.energy),
                        ("agent_avg_power_w", power.reported),
                        ("agent_energy_j", power.reported_energy)):
        if found is not None:
            figure(name, found.value, "W" if name.endswith("_w") else "J", found.uncertainty,
                   found.meta)
    check_meta = check.to_dict()
    ctx.emit(Metric(run, "feasible", flag(check.feasible), "", meta=check_meta))
    ctx.emit(Metric(run, "set_size", float(check.set_size), ""))
    ctx.emit(Metric(run, "violated_edges", float(check.violated_edges), ""))
    ctx.emit(Metric(run, "cost", float(check.cost), "", meta=check_meta))
    gap_meta: dict[str, Any] = {"target": target.cost, "target_source": target.source}
    if check.feasible:
        gap: float | None = bks_gap(check.cost, target.cost)
    else:  # an infeasible state has no gap: it must never be averaged with feasible ones
        gap = None
        gap_meta.update(status="infeasible", reason=f"{check.violated_edges} violated edges")
    figure("bks_gap", gap, "", meta=gap_meta)
    figure("best_known_gap", *_best_known_gap(check, best_known))
    if unit.scenario == "fixed_timeout":
        ctx.emit(Metric(run, "cost_check_s", result.cost_check_s or 0.0, "s"))


def _best_known_gap(check: StateCheck, best_known: int | None
                    ) -> tuple[float | None, str, None, dict[str, Any]]:
    """The gap to the best feasible cost any solver here recorded (None: nothing recorded yet,
    or an infeasible state), as (value, unit, uncertainty, meta)."""
    meta: dict[str, Any] = {"best_known": best_known}
    if best_known is None:
        meta["reason"] = "no best-known value recorded for this workload"
        return None, "", None, meta
    if not check.feasible:
        meta.update(status="infeasible")
        return None, "", None, meta
    return bks_gap(check.cost, best_known), "", None, meta


def reached_times(result: QuboRunReply, gaps: Sequence[float]) -> dict[float, float]:
    """The reply's ``reached`` list as {gap: seconds since t_start}, checked for sense."""
    wanted = {float(g) for g in gaps}
    times: dict[float, float] = {}
    for entry in result.reached or []:
        gap, t_s = entry.gap, entry.t_s
        if gap not in wanted:
            raise SolutionError(f"reached lists gap {gap:g}, which was not asked for")
        if not 0 <= t_s <= result.actual_s * 1.001 + 1e-6:
            raise SolutionError(f"gap {gap:g} reached at {t_s} s, outside the solving time")
        times[gap] = t_s
    return times


def _emit_time_to_solution(
    ctx: RunContext,
    phase: Phase,
    agent: str,
    unit: QuboUnit,
    result: QuboRunReply,
    check: StateCheck,
    target: Target,
    instruments: Sequence[Instrument],
) -> None:
    """Latency and energy to each gap; the energy is integrated from the instrument's samples
    between the start of solving and the moment the solver reported reaching that gap."""
    run = ctx.run_uid
    try:
        times = reached_times(result, unit.gaps)
        best_gap = bks_gap(check.cost, target.cost)
        for gap in times:
            if not check.feasible or best_gap > gap + 1e-12:
                raise SolutionError(
                    f"the agent says it reached gap {gap:g}, but its returned state "
                    f"({check.status}, cost {check.cost}) is at gap {best_gap:.4g}"
                )
    except (SolutionError, KeyError, TypeError, ValueError) as exc:
        raise AgentError(agent, "bad_solution", str(exc)) from exc
    for gap in sorted({float(g) for g in unit.gaps}, reverse=True):
        meta: dict[str, Any] = {"target": target.cost, "target_source": target.source, "gap": gap}
        latency = times.get(gap)
        ctx.emit(Metric(run, f"tts_s@{gap:g}", latency, "s", meta=meta))
        if latency is None:
            ctx.emit(Metric(run, f"tts_energy_j@{gap:g}", None, "J",
                            meta={**meta, "reason": "gap not reached"}))
            continue
        energy = reach_power(phase, agent, result, latency, instruments).times(
            latency, "instrument samples integrated from the start of solving to the "
                     "reported reach time (mean power × time)")
        ctx.emit(Metric(run, f"tts_energy_j@{gap:g}", energy.value, "J", energy.uncertainty,
                        meta={**meta, **energy.meta}))
