"""`hilbench audit verify BUNDLE`: every hash, then every figure recomputed from the raw samples
and events with the runner's own analysis (:func:`hilbench.cassette.figures.window_power_again`,
:func:`hilbench.orchestrator.timing_check.check_timed_region`, :func:`bks_gap`), compared with
the stored metric. One line per disagreement."""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hilbench.cassette.bundle import DATA, check_bag
from hilbench.cassette.figures import window_power_again
from hilbench.cassette.reader import Cassette, Stream
from hilbench.orchestrator.client import ClockOffset
from hilbench.orchestrator.timing_check import check_timed_region
from hilbench.report.trials import TRIALS, check_trials
from hilbench.store.groups import replicate_key
from hilbench.workloads.qubo import bks_gap

REL_TOL = 1e-9  # the same code on the same float64 data: only summation order may differ


@dataclass
class RunRecord:
    run: dict[str, Any]
    phases: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)

    def event(self, name: str, phase_uid: str | None = None) -> dict[str, Any] | None:
        return next((e for e in self.events if e["name"] == name
                     and (phase_uid is None or e["phase_uid"] == phase_uid)), None)


@dataclass
class Outcome:
    problems: list[str] = field(default_factory=list)
    checked: int = 0  # figures recomputed and compared
    not_recomputed: dict[str, int] = field(default_factory=dict)  # procedure -> runs
    # (run uid, metric) -> the figure recomputed from the raw data
    recomputed: dict[tuple[str, str], float | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # said, not mismatches


def verify_bundle(bundle: Path) -> Outcome:
    outcome = Outcome(check_bag(bundle))
    try:
        cassette = Cassette(bundle / DATA)
    except ValueError as exc:
        outcome.problems.append(str(exc))
        return outcome
    try:
        outcome.problems += cassette.check_hashes()
        runs = _runs(cassette)
        streams: dict[tuple[str | None, str], Stream] = {(s.phase_uid, s.source): s
                                                         for s in cassette.streams()}
    except (ValueError, KeyError, TypeError) as exc:
        outcome.problems.append(f"{bundle / DATA}: unreadable ({type(exc).__name__}: {exc})")
        return outcome
    outcome.problems += _check_settings(bundle, cassette)
    for record in runs.values():
        if record.run.get("status") != "success":
            continue
        for problem in _check_offsets(record):
            outcome.problems.append(f"run {record.run['uid'][:8]} "
                                    f"({record.run.get('unit_key')}): {problem}")
        procedure = str(record.run.get("procedure", ""))
        if not procedure.startswith("qubo."):
            outcome.not_recomputed[procedure] = outcome.not_recomputed.get(procedure, 0) + 1
        else:
            for problem in _check_qubo(record, cassette, streams, outcome):
                outcome.problems.append(f"run {record.run['uid'][:8]} "
                                        f"({record.run.get('unit_key')}): {problem}")
    _check_trial_rule(runs, outcome)
    return outcome


def _check_trial_rule(runs: dict[str, RunRecord], outcome: Outcome) -> None:
    """NeuroBench's rule as written, per replicate group (the runs a summary row averages) and
    recomputed figure: the mean of the recomputed trials within 5 % of the reported figure
    (the stored trials' mean, which the summary reports)."""
    groups: dict[tuple[str, str], list[tuple[float | None, float | None]]] = defaultdict(list)
    for (uid, name), again in outcome.recomputed.items():
        record = runs[uid]
        stored = _figure(record.metrics[name])
        groups[(replicate_key(record.run.get("unit_key")), name)].append((stored, again))
    short = 0
    for (group, name), pairs in sorted(groups.items()):
        stored = [s for s, _ in pairs if s is not None]
        trials = [a for _, a in pairs if a is not None]
        if not stored or not trials:
            continue
        short += len(trials) < TRIALS
        check = check_trials(trials, statistics.fmean(stored), "the stored trials' mean")
        if not check.passed:
            outcome.problems.append(
                f"{group}: {name}: mean of {len(trials)} recomputed trial(s) {check.mean!r} is "
                f"not within 5 % of the reported {check.reported!r}")
    if short:
        outcome.notes.append(f"{short} figure group(s) have fewer than {TRIALS} trials: the "
                             "5-trial rule was checked on the trials there are")


def _runs(cassette: Cassette) -> dict[str, RunRecord]:
    runs: dict[str, RunRecord] = {}
    lists: dict[str, Any] = defaultdict(list)
    for doc in cassette.documents():
        kind = doc["kind"]
        if kind == "run":
            runs[doc["uid"]] = RunRecord(doc)
        elif kind == "phase":
            runs[doc["run_uid"]].phases.append(doc)
        elif kind == "event":
            runs[doc["run_uid"]].events.append(doc)
        elif kind == "metric":
            runs[doc["run_uid"]].metrics[doc["name"]] = doc
        else:
            lists[kind].append(doc)
    return runs


def _check_settings(bundle: Path, cassette: Cassette) -> list[str]:
    """The instrument settings the samples themselves show agree with the campaign's: the
    supply voltage their watts were computed with, and the interval between their stamps."""
    path = bundle / DATA / "campaign.json"
    try:
        config = json.loads(path.read_text()).get("config") or {}
    except (OSError, ValueError) as exc:
        return [f"{path}: unreadable ({exc})"]
    settings = {i.get("id"): i.get("settings") or {} for i in config.get("instruments") or []}
    problems = []
    for stream in cassette.streams():
        wanted = settings.get(stream.source)
        if wanted is None:
            continue
        volts = wanted.get("supply_voltage_v")
        if volts is not None and stream.meta.get("supply_voltage_v") != volts:
            problems.append(f"instrument {stream.source}: samples {stream.name} taken at "
                            f"{stream.meta.get('supply_voltage_v')} V, the campaign sets "
                            f"{volts} V")
        interval = wanted.get("sample_interval_s")
        t, _ = cassette.read(stream)
        if interval and len(t) > 1:
            step = float(np.median(np.diff(t)))
            if not math.isclose(step, interval, rel_tol=1e-6):
                problems.append(f"instrument {stream.source}: samples {stream.name} are "
                                f"{step!r} s apart, the campaign sets {interval!r} s")
    return problems


def _check_offsets(record: RunRecord) -> Iterator[str]:
    """Each phase's clock offset as the client measures it: from at least one probe, finite,
    and no more certain than half the best probe's round trip (the offset lies within ± that)."""
    for phase in record.phases:
        for agent, offset in (phase.get("clock_offsets") or {}).items():
            values = [offset.get(k) for k in ("offset_s", "uncertainty_s", "rtt_s")]
            where = f"clock offset of {agent} in phase {phase.get('name')}"
            if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
                yield f"{where}: not finite numbers {offset}"
            elif offset.get("probes", 1) < 1 or values[2] <= 0:
                yield f"{where}: no probe behind it {offset}"
            elif values[1] < values[2] / 2 * (1 - 1e-9):
                yield (f"{where}: uncertainty {values[1]!r} s below half the round trip "
                       f"{values[2] / 2!r} s")


def _figure(metric: dict[str, Any]) -> float | None:
    """The value a metric stands for: an overrun's is kept in meta.measured."""
    if metric["value"] is not None:
        return float(metric["value"])
    measured = (metric.get("meta") or {}).get("measured")
    return None if measured is None else float(measured)


def _note(outcome: Outcome, record: RunRecord, name: str, again: float | None) -> None:
    outcome.recomputed[(record.run["uid"], name)] = again
    outcome.checked += 1


def _differs(stored: float | None, again: float | None) -> bool:
    if stored is None or again is None:
        return (stored is None) != (again is None)
    return not math.isclose(stored, again, rel_tol=REL_TOL, abs_tol=1e-15)


def _check_qubo(record: RunRecord, cassette: Cassette,
                streams: dict[tuple[str | None, str], Stream], outcome: Outcome) -> Iterator[str]:
    solve = next((p for p in record.phases if p["name"] == "solve"), None)
    result = record.event("solve_result", solve and solve["uid"])
    if solve is None or result is None:
        yield "no solve phase or solve_result event to recompute from"
        return
    data, metrics = result["data"], record.metrics
    agent = _agent(record, solve)
    offset_dict = (solve.get("clock_offsets") or {}).get(agent)
    timing = record.event("timing_check", solve["uid"])
    if offset_dict is None or timing is None:
        yield "no clock offset or timing_check to check the timed region against"
    else:
        offset = ClockOffset(**{k: offset_dict[k] for k in
                                ("offset_s", "uncertainty_s", "rtt_s", "probes")
                                if k in offset_dict} | {"probes": offset_dict.get("probes", 0)})
        sent, received = timing["data"]["orchestrator_window"]
        again = check_timed_region(data["t_start"], data["t_end"], data["actual_s"],
                                   data.get("untimed_s"), sent, received, offset)
        outcome.checked += 1
        if not again.consistent:
            yield f"clock-offset bound: {again.reason}"
        window = metrics.get("orchestrator_window_s")
        if window is not None and _differs(_figure(window), again.window_s):
            yield (f"metric orchestrator_window_s stored {_figure(window)!r}, "
                   f"recomputed {again.window_s!r}")
    power = metrics.get("avg_power_w")
    source = (power or {}).get("meta", {}).get("source")
    stream = streams.get((solve["uid"], source)) if source else None
    if power is not None and stream is not None:
        try:
            watts_again = _avg_power(record, solve, data, power, stream, cassette)
        except LookupError as exc:
            yield f"metric avg_power_w cannot be recomputed: {exc}"
            return
        _note(outcome, record, "avg_power_w", watts_again)
        if _differs(_figure(power), watts_again):
            yield f"metric avg_power_w stored {_figure(power)!r}, recomputed {watts_again!r}"
        energy = metrics.get("energy_j")
        if energy is not None:
            energy_again = None if watts_again is None else watts_again * data["actual_s"]
            _note(outcome, record, "energy_j", energy_again)
            if _differs(_figure(energy), energy_again):
                yield f"metric energy_j stored {_figure(energy)!r}, recomputed {energy_again!r}"
    yield from _check_tts(record, solve, data, stream, cassette, outcome)
    gap, cost = metrics.get("bks_gap"), metrics.get("cost")
    if gap is not None and cost is not None and (gap.get("meta") or {}).get("target") is not None:
        feasible = _figure(metrics["feasible"]) if "feasible" in metrics else 1.0
        again_gap = (bks_gap(int(_figure(cost) or 0), int(gap["meta"]["target"]))
                     if feasible else None)
        _note(outcome, record, "bks_gap", again_gap)
        if _differs(_figure(gap), again_gap):
            yield f"metric bks_gap stored {_figure(gap)!r}, recomputed {again_gap!r}"
    actual = metrics.get("actual_s")
    if actual is not None:
        outcome.checked += 1
        if _differs(_figure(actual), float(data["actual_s"])):
            yield f"metric actual_s stored {_figure(actual)!r}, recomputed {data['actual_s']!r}"


def _check_tts(record: RunRecord, solve: dict[str, Any], data: dict[str, Any],
               stream: Stream | None, cassette: Cassette, outcome: Outcome) -> Iterator[str]:
    """Time to each gap from the reply's ``reached`` list, and the energy to it: mean power
    from the start of solving to the reach time × that time (the procedure's rule)."""
    reached = {float(e["gap"]): float(e["t_s"]) for e in data.get("reached") or []}
    for name, metric in record.metrics.items():
        kind, _, gap_text = name.partition("@")
        if kind not in ("tts_s", "tts_energy_j"):
            continue
        latency = reached.get(float(gap_text))
        again: float | None = latency
        if kind == "tts_energy_j":
            if stream is None or latency is None:
                again = None
            else:
                try:
                    watts = _avg_power(record, solve, data, metric, stream, cassette, latency)
                except LookupError as exc:
                    yield f"metric {name} cannot be recomputed: {exc}"
                    continue
                again = None if watts is None else watts * latency
        _note(outcome, record, name, again)
        if _differs(_figure(metric), again):
            yield f"metric {name} stored {_figure(metric)!r}, recomputed {again!r}"


def _agent(record: RunRecord, solve: dict[str, Any]) -> str:
    """The run's agent: named in its parameters, else the one its solve phase probed."""
    named = record.run["params"].get("agent")
    offsets = solve.get("clock_offsets") or {}
    if named is None and len(offsets) == 1:
        return str(next(iter(offsets)))
    return str(named)


def _avg_power(record: RunRecord, solve: dict[str, Any], data: dict[str, Any],
               power: dict[str, Any], stream: Stream, cassette: Cassette,
               until_s: float | None = None) -> float | None:
    """The solve window's mean power, as the QUBO procedure takes it (``_window_power``)."""
    analysis = (power.get("meta") or {}).get("analysis")
    if not isinstance(analysis, dict):
        raise LookupError("its meta has no analysis inputs (aperture, timing uncertainty): "
                          "stored by a hilbench before the audit")
    t, values = cassette.read(stream)
    intervals = [e["data"] for e in record.events
                 if e["name"] == "instrument_interval" and e["phase_uid"] == solve["uid"]]
    offset = solve["clock_offsets"][_agent(record, solve)]["offset_s"]
    end = data["t_end"] if until_s is None else data["t_start"] + until_s
    try:
        estimate = window_power_again(t, values, stream.source, stream.unit, stream.meta,
                                      (data["t_start"], end), offset, intervals,
                                      analysis)
    except ValueError:
        return None
    return float(estimate.mean_w)
