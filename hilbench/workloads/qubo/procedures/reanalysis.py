"""QUBO runs re-analysed from their recording: the solve reply, the timing check's window, the
orchestrator's state check and the solve phase's samples are rebuilt from the recorded events
and samples, and the functions the live run used
(:func:`~hilbench.workloads.qubo.procedures.power.run_power`,
:func:`~hilbench.workloads.qubo.procedures.run._emit_metrics`,
:func:`~hilbench.workloads.qubo.procedures.run._emit_time_to_solution`) compute every
figure again: fixed-timeout power over the fixed runtime from the same readings the live run
held for it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from hilbench.contracts.base import decode
from hilbench.contracts.capabilities import Capabilities
from hilbench.sdk import check_timed_region
from hilbench.workloads.qubo import Target
from hilbench.workloads.qubo.check import StateCheck
from hilbench.workloads.qubo.contract import QuboRunReply
from hilbench.workloads.qubo.procedures.power import run_power
from hilbench.workloads.qubo.procedures.run import (
    QuboUnit,
    _emit_metrics,
    _emit_time_to_solution,
    declared_untimed,
)

if TYPE_CHECKING:
    from hilbench.cassette.runs import RecordedRun, Recording
    from hilbench.documents import Metric


SCENARIOS = ("qubo.fixed_timeout", "qubo.time_to_solution")


def reanalyse(recording: Recording, run: RecordedRun) -> dict[str, Metric] | None:
    """The metrics of ``run`` computed again from its recording (None: a QUBO run of another
    procedure, e.g. the largest-workload search). A timed region the clock offset cannot place
    inside the orchestrator's window raises NotReanalysable naming the bound (the live run
    would have failed)."""
    from hilbench.cassette.runs import Collector, NotReanalysable

    if run.run.get("procedure") not in SCENARIOS:
        return None

    solve = run.phase("solve")
    result_event = run.event("solve_result", solve and solve["uid"])
    timing_event = run.event("timing_check", solve and solve["uid"])
    check_event = run.event("solution_check", solve and solve["uid"])
    if solve is None or result_event is None or timing_event is None or check_event is None:
        raise NotReanalysable(f"{run.label()}: no solve phase with solve_result, timing_check "
                              "and solution_check events to recompute from")
    p = run.params
    agent = run.agent()
    instruments = recording.instruments(agent)
    phase = recording.phase(run, solve, instruments)
    unit = QuboUnit(agent, str(p["scenario"]), int(p["nodes"]), float(p["density"]),
                    int(p["seed"]), str(p["solver"]), p.get("timeout_s"),
                    tuple(p.get("gaps") or ()), float(p["max_time_s"]),
                    int(p.get("repetition", 0)))
    target = Target(int(p["target"]), p["target_source"], p.get("target_detail") or {})
    result = msgspec.convert(result_event["data"], QuboRunReply)
    sent, received = timing_event["data"]["orchestrator_window"]
    # The rule the live run applied, from what it stored: the phase's clock offset and link
    # probe (a phase recorded before link probes: the legacy constant, which the figure names)
    # and the untimed work the agent declared at its handshake.
    caps = (run.run.get("agents") or {}).get(agent, {}).get("capabilities") or {}
    timing = check_timed_region(result.t_start, result.t_end, result.actual_s,
                                result.untimed_s, sent, received, phase.offsets[agent],
                                declared_untimed(decode(Capabilities, caps, "bad_reply")))
    if not timing.on_time:
        raise NotReanalysable(f"timing {timing.verdict}: {timing.reason}")
    d = check_event["data"]
    if "error" in d:
        raise NotReanalysable(f"{run.label()}: its state failed the check ({d['error']})")
    check = StateCheck(int(d["cost"]), int(d["set_size"]), int(d["violated_edges"]))
    out = Collector(run.uid)
    power = run_power(phase, agent, unit.scenario, unit.requested_s, result, instruments)
    _emit_metrics(out.context, unit, result, timing, check, target, power, p.get("best_known"))
    if unit.scenario == "time_to_solution":
        _emit_time_to_solution(out.context, phase, agent, unit, result, check, target,
                               instruments)
    return out.metrics
