"""QUBO power and energy, each figure with its source (:mod:`hilbench.power.provenance`).

- *Fixed timeout* (DESIGN.md, "The rules, precisely"): power is averaged over the fixed runtime
  [start, start + timeout] on the orchestrator's mapping of the run — a solver that returns
  early leaves its device in the system under test until the timeout — and energy = that power ×
  timeout. A run that ends before its timeout (by more than the overrun tolerance) is labelled
  ``stopped_early`` with its time.
- *Time to solution* keeps its own definition: power over the solving time, energy to each gap
  integrated from the start of solving to the reported reach time.

Only an instrument the orchestrator reads (or the simulated meter) gives ``avg_power_w`` and
``energy_j``. An agent's own report (``power`` in its reply) is stored apart, as
``agent_avg_power_w`` and ``agent_energy_j``, labelled as the agent's with the uncertainty
its source states; when an instrument measured the agent's window too, the two are compared by
E_n.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hilbench import clock
from hilbench.power.provenance import agreement
from hilbench.power.timing import aperture_s, timing_uncertainty_s
from hilbench.sdk import Instrument, Phase
from hilbench.sdk.power import PowerFigure, agent_power, instrument_power
from hilbench.workloads.qubo.check import overrun_tolerance_s
from hilbench.workloads.qubo.contract import QuboRunReply

POLL_S = 0.05
FIXED_RUNTIME = "average power over the fixed runtime [start, start + timeout]"


def stopped_early(requested_s: float, actual_s: float) -> bool:
    """A run that ended before its timeout by more than the overrun tolerance (the same
    max(5 %, 0.5 ms) on the other side of the deadline)."""
    return actual_s < requested_s - overrun_tolerance_s(requested_s)


@dataclass(frozen=True)
class RunPower:
    """A run's power figures: the orchestrator's (``headline``) and the agent's own report
    (``reported``), each with its energy."""

    headline: PowerFigure
    energy: PowerFigure
    reported: PowerFigure | None = None
    reported_energy: PowerFigure | None = None


def run_power(phase: Phase, agent: str, scenario: str, requested_s: float,
              result: QuboRunReply, instruments: Sequence[Instrument]) -> RunPower:
    """Power and energy of one run. Fixed timeout: over the fixed runtime, energy = power ×
    timeout. Time to solution: over the solving time, energy = power × actual time."""
    fixed = scenario == "fixed_timeout"
    start = phase.to_orchestrator_time(agent, result.t_start)
    solving_end = phase.to_orchestrator_time(agent, result.t_end)
    early = fixed and stopped_early(requested_s, result.actual_s)
    if fixed:
        duration, method = requested_s, f"{FIXED_RUNTIME} × timeout"
    else:
        duration, method = result.actual_s, "average power × actual solving time"
    reported = agent_power(agent, result.power)
    if instruments:
        inst = instruments[0]
        end = start + requested_s if fixed else solving_end
        headline = instrument_power(phase, agent, inst, start, end)
        if len(instruments) > 1:  # E_n between instruments: ASC figures only (issue 35)
            headline = PowerFigure(headline.value, headline.uncertainty, {
                **headline.meta, "note": f"{len(instruments)} instruments measure this agent; "
                                         f"figures are {inst.spec.id}'s, the others unused"})
        if fixed:
            headline = PowerFigure(headline.value, headline.uncertainty,
                                   {**headline.meta, "runtime": FIXED_RUNTIME,
                                    "timeout_s": requested_s})
        if reported is not None:
            reported = _compared(reported, instrument_power(phase, agent, inst, start,
                                                            solving_end))
    else:
        reason = "no instrument measured this run"
        if reported is not None:
            reason += (f": the agent's own report ({reported.meta['source']}) is "
                       "agent_avg_power_w"
                       + (f", over its {result.actual_s:.3g} s of solving, not the "
                          f"{requested_s:g} s fixed runtime" if early else ""))
        elif result.power is not None and result.power.reason:
            reason = result.power.reason
        headline = PowerFigure(None, None, {"reason": reason})
    reported_energy = None
    if reported is not None:
        if early:
            reported = PowerFigure(reported.value, reported.uncertainty, {
                **reported.meta, "covers": "solving only",
                "covers_runtime": False,
                "note": f"the agent's report covers its {result.actual_s:.3g} s of solving, "
                        f"not the {requested_s:g} s fixed runtime"})
            reported_energy = PowerFigure(None, None, {
                **reported.meta, "reason": reported.meta["note"]})
        else:
            reported = PowerFigure(reported.value, reported.uncertainty,
                                   {**reported.meta, "covers_runtime": True})
            reported_energy = reported.times(duration, method)
    return RunPower(headline, headline.times(duration, method), reported, reported_energy)


def _compared(reported: PowerFigure, measured: PowerFigure) -> PowerFigure:
    """The agent's report with its agreement with the instrument over the same window."""
    if measured.value is None:
        found: dict[str, Any] = {"en": None, "flagged": False,
                                 "reason": f"no instrument figure for the agent's window: "
                                           f"{measured.meta.get('reason')}"}
    else:
        assert reported.value is not None
        found = agreement(reported.value, reported.uncertainty, measured.value,
                          measured.uncertainty).to_dict()
        found.update(instrument=measured.meta.get("source"), instrument_w=measured.value,
                     instrument_uncertainty_w=measured.uncertainty,
                     window=measured.meta.get("window"))
    return PowerFigure(reported.value, reported.uncertainty,
                       {**reported.meta, "agreement": found})


def reach_power(phase: Phase, agent: str, result: QuboRunReply, until_s: float,
                instruments: Sequence[Instrument]) -> PowerFigure:
    """Average power from the start of solving to ``until_s`` after it (time to solution),
    from an instrument: an agent's report covers its whole run, not the time to each gap."""
    if not instruments:
        reported = agent_power(agent, result.power)
        reason = ("the agent's own report covers the whole run, not the time to each gap"
                  if reported is not None else
                  (result.power.reason if result.power is not None and result.power.reason
                   else "no instrument measured this run"))
        return PowerFigure(None, None, {"reason": reason})
    start = phase.to_orchestrator_time(agent, result.t_start)
    return instrument_power(phase, agent, instruments[0], start, start + until_s)


def hold_until_runtime_end(phase: Phase, agent: str, result: QuboRunReply, timeout_s: float,
                           instruments: Sequence[Instrument]) -> None:
    """Keep the instruments acquiring until the fixed runtime's readings are in: a solver that
    returned early is still the system under test until start + timeout (then a reading's
    interval and the window's timing uncertainty on top, so the window and its shifted copies
    are covered)."""
    if not instruments:
        return
    inst = instruments[0]
    offset = phase.offsets[agent]
    margin = (2 * inst.info.time_resolution_s + (aperture_s(inst) or 0.0)
              + timing_uncertainty_s(inst, offset.uncertainty_s))
    until = phase.to_orchestrator_time(agent, result.t_start) + timeout_s + margin
    while (remaining := until - clock.now()) > 0:
        phase.poll()
        clock.sleep(min(POLL_S, remaining))
