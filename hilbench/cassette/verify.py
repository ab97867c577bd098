"""`hilbench audit verify BUNDLE`: every hash, then every figure of every run recomputed from
the raw samples and events by the procedure's own analysis code (the one a live run uses, see
:mod:`hilbench.cassette.analysis`), compared with the stored metric; the clock offsets, the
instrument settings the samples show, and NeuroBench's 5-trial rule on the recomputed figures.
One line per disagreement."""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hilbench.cassette.analysis import Comparison, compare_run
from hilbench.cassette.bundle import DATA, check_bag
from hilbench.cassette.reader import Cassette
from hilbench.cassette.runs import RecordedRun, Recording
from hilbench.report.trials import TRIALS, check_trials
from hilbench.store.groups import replicate_key

REL_TOL = 1e-9  # the same code on the same float64 data: only summation order may differ


@dataclass
class Outcome:
    problems: list[str] = field(default_factory=list)
    checked: int = 0  # figures recomputed and compared
    not_recomputed: dict[str, int] = field(default_factory=dict)  # procedure -> runs
    notes: list[str] = field(default_factory=list)  # said, not mismatches


def verify_bundle(bundle: Path) -> Outcome:
    outcome = Outcome(check_bag(bundle))
    try:
        recording = Recording(bundle / DATA)
        outcome.problems += recording.cassette.check_hashes()
    except ValueError as exc:
        outcome.problems.append(str(exc))
        return outcome
    except (KeyError, TypeError) as exc:
        outcome.problems.append(f"{bundle / DATA}: unreadable ({type(exc).__name__}: {exc})")
        return outcome
    outcome.problems += _check_settings(bundle, recording.cassette)
    comparison = Comparison()
    for record in recording.runs.values():
        if record.status != "success":
            continue
        for problem in _check_offsets(record):
            outcome.problems.append(f"{record.label()}: {problem}")
        compare_run(recording, record, comparison, REL_TOL)
    outcome.problems += comparison.differences
    outcome.checked = comparison.compared
    outcome.not_recomputed = comparison.not_recomputed
    _check_trial_rule(recording.runs, comparison, outcome)
    return outcome


def _check_trial_rule(runs: dict[str, RecordedRun], comparison: Comparison,
                      outcome: Outcome) -> None:
    """NeuroBench's rule as written, per replicate group (the runs a summary row averages) and
    recomputed figure: the mean of the recomputed trials within 5 % of the reported figure
    (the stored trials' mean, which the summary reports)."""
    groups: dict[tuple[str, str], list[tuple[float | None, float | None]]] = defaultdict(list)
    for (uid, name), pair in comparison.figures.items():
        groups[(replicate_key(runs[uid].run.get("unit_key")), name)].append(pair)
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


def _check_offsets(record: RecordedRun) -> Iterator[str]:
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
