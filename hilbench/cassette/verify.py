"""`hilbench audit verify BUNDLE`: every hash, then every figure of every run recomputed from
the raw samples and events by the procedure's own analysis code (the one a live run uses, see
:mod:`hilbench.cassette.analysis`), compared with the stored metric; the clock offsets, the
instrument settings the samples show, and NeuroBench's 5-trial rule on the recomputed figures.
One line per disagreement."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hilbench.bounded_parse import InputError
from hilbench.cassette.analysis import Comparison, compare_run
from hilbench.cassette.bundle import DATA, check_bag
from hilbench.cassette.runs import (
    CAMPAIGN_ROW,
    RecordedRun,
    Recording,
    campaign_row_instruments,
)
from hilbench.cassette.verify_markers import check_markers
from hilbench.confined_read import ConfinedFolder
from hilbench.orchestrator.instruments import InstrumentSpec
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
    """Every check of ``bundle``; :class:`~hilbench.cassette.bundle.NotABundle` when the folder
    is no bundle at all. Every read stays inside the bundle and is bounded: an entry that
    leaves it, or a file or line too large, is one more problem, never read."""
    outcome = Outcome(check_bag(bundle))
    try:
        recording = Recording(ConfinedFolder(bundle).sub(DATA))
        outcome.problems += recording.cassette.check_hashes()
        outcome.problems += _check_settings(recording)
    except ValueError as exc:  # a file or line that cannot be read as it should
        outcome.problems.append(str(exc))
        return _deduplicated(outcome)
    comparison = Comparison()
    for record in recording.runs.values():
        if record.status != "success":
            continue
        for problem in _check_offsets(record):
            outcome.problems.append(f"{record.label()}: {problem}")
        outcome.problems += check_markers(recording, record)
        compare_run(recording, record, comparison, REL_TOL)
    outcome.problems += comparison.differences
    outcome.checked = comparison.compared
    outcome.not_recomputed = comparison.not_recomputed
    _check_trial_rule(recording.runs, comparison, outcome)
    return _deduplicated(outcome)


def _deduplicated(outcome: Outcome) -> Outcome:
    """A file the bag check refused is refused again when the payload is read: said once."""
    outcome.problems = list(dict.fromkeys(outcome.problems))
    return outcome


def _check_trial_rule(runs: dict[str, RecordedRun], comparison: Comparison,
                      outcome: Outcome) -> None:
    """NeuroBench's rule as written, per replicate group (the runs a summary row averages) and
    recomputed figure: the mean of the recomputed trials within 5 % of the reported figure
    (the stored trials' mean, which the summary reports)."""
    groups: dict[tuple[str, str], list[tuple[float | None, float | None]]] = defaultdict(list)
    for (uid, name), pair in comparison.figures.items():
        unit_key = runs[uid].run.get("unit_key")
        groups[(replicate_key(unit_key if isinstance(unit_key, str) else None), name)].append(
            pair)
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


def _check_settings(recording: Recording) -> list[str]:
    """The instrument settings the samples themselves show agree with the campaign's: the
    supply voltage their watts were computed with, and the interval between their stamps."""
    cassette = recording.cassette
    try:
        settings = {spec.id: spec.settings for spec in _campaign_instruments(recording)}
    except ValueError as exc:
        return [str(exc)]
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
            if not isinstance(interval, (int, float)) \
                    or not math.isclose(step, interval, rel_tol=1e-6):
                problems.append(f"instrument {stream.source}: samples {stream.name} are "
                                f"{step!r} s apart, the campaign sets {interval!r} s")
    return problems


def _campaign_instruments(recording: Recording) -> list[InstrumentSpec]:
    """The instruments of the bundle's campaign row (its ``campaign.json``)."""
    if not recording.cassette.files.exists(CAMPAIGN_ROW):
        raise InputError(f"{recording.cassette.files.label(CAMPAIGN_ROW)}: missing")
    return campaign_row_instruments(recording.cassette.files)


def _check_offsets(record: RecordedRun) -> Iterator[str]:
    """Each phase's clock offset as the client measures it: from at least one probe, finite,
    and no more certain than half the best probe's round trip (the offset lies within ± that)."""
    for phase in record.phases:
        offsets = phase.get("clock_offsets") or {}
        if not isinstance(offsets, dict):
            yield f"clock offsets of phase {phase.get('name')}: not a table {offsets!r:.80}"
            continue
        for agent, offset in offsets.items():
            where = f"clock offset of {agent} in phase {phase.get('name')}"
            if not isinstance(offset, dict):
                yield f"{where}: not a table {offset!r:.80}"
                continue
            values = [offset.get(k) for k in ("offset_s", "uncertainty_s", "rtt_s")]
            if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in values):
                yield f"{where}: not finite numbers {offset}"
            elif not isinstance(offset.get("probes", 1), int) or offset.get("probes", 1) < 1 \
                    or values[2] <= 0:
                yield f"{where}: no probe behind it {offset}"
            elif values[1] < values[2] / 2 * (1 - 1e-9):
                yield (f"{where}: uncertainty {values[1]!r} s below half the round trip "
                       f"{values[2] / 2!r} s")
