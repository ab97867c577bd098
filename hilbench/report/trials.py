"""NeuroBench's replicability rule, as written: "an average over 5 trials must be within 5 % of
the reported results".

The reported figure is the trial mean itself (then the rule holds by construction, and says so)
or a figure reported earlier (``hilbench summary --reported FILE``: the auditor's case, new
trials against a published number). The check is ``|mean of trials − reported| ≤ 5 % of
|reported|``, for every metric. The per-trial spread is shown beside the check, not instead of
it: a trial far from the mean does not break the rule, but a spread so wide that a repeat of
the same number of trials would be expected to land more than 5 % away is flagged as not
repeatable (the standard deviation of the difference between two independent means of ``n``
trials, ``s·√(2/n)``, above 5 % of the mean).

One module for the rule: the summary tables, the leaderboard and the audit verifier use it.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hilbench.report.table import Table

TOLERANCE = 0.05  # NeuroBench: within 5 % of the reported result
TRIALS = 5  # NeuroBench: an average over 5 trials


@dataclass(frozen=True)
class TrialCheck:
    """The rule applied to one figure's trials."""

    trials: tuple[float, ...]
    mean: float
    reported: float
    reported_by: str  # "trial mean" or where the reported figure came from (a file)
    deviation: float | None  # |mean − reported| / |reported|; None when reported is 0
    spread: float | None  # largest |trial − mean| / |mean| (shown beside the check)
    repeat_sigma: float | None  # s·√(2/n) / |mean|: how far a repeat's mean would be expected

    @property
    def passed(self) -> bool:
        """|mean − reported| ≤ 5 % of |reported| (a reported 0 passes only an exact 0 mean)."""
        if self.deviation is None:
            return self.mean == self.reported
        return self.deviation <= TOLERANCE + 1e-12

    @property
    def repeatable(self) -> bool | None:
        """Whether a repeat of as many trials is expected within 5 % (None: one trial)."""
        if self.repeat_sigma is None:
            return None
        return self.repeat_sigma <= TOLERANCE

    @property
    def ok(self) -> bool:
        return self.passed and self.repeatable is not False

    @property
    def against_mean(self) -> bool:
        return self.reported_by == "trial mean"

    def note(self) -> str:
        """One line a table prints beside (under) the figure."""
        n = len(self.trials)
        spread = (f"trials {_pct(self.spread)} at most from their mean"
                  if self.spread is not None else "one trial")
        if self.against_mean:
            rule = f"{n} trial(s), reported figure = their mean (5 % rule met by construction)"
        elif self.passed:
            rule = (f"{n} trial(s): mean within 5 % of reported {self.reported:.6g} "
                    f"({self.reported_by}): {_pct(self.deviation)}")
        else:
            rule = (f"FLAG {n} trial(s): mean {self.mean:.6g} is {_pct(self.deviation)} from "
                    f"reported {self.reported:.6g} ({self.reported_by}), beyond 5 %")
        text = f"{rule}; {spread}"
        if self.repeatable is False:
            text += (f"; FLAG not repeatable: a repeat of {n} trials would be expected "
                     f"±{_pct(self.repeat_sigma)} away (the rule allows 5 %)")
        if n < TRIALS:
            text += f"; NeuroBench asks for {TRIALS} trials"
        return text


def check_trials(trials: Sequence[float], reported: float | None = None,
                 reported_by: str = "") -> TrialCheck:
    """Apply the rule to ``trials`` (one figure per trial) against ``reported`` (default: the
    trial mean). ``reported_by`` says where a reported figure came from."""
    if not trials:
        raise ValueError("no trials to check")
    values = tuple(float(v) for v in trials)
    mean = statistics.fmean(values)
    if reported is None:
        reported, reported_by = mean, "trial mean"
    deviation = abs(mean - reported) / abs(reported) if reported != 0 else None
    spread = sigma = None
    if len(values) > 1 and mean != 0:
        spread = max(abs(v - mean) for v in values) / abs(mean)
        sigma = statistics.stdev(values) * math.sqrt(2 / len(values)) / abs(mean)
    return TrialCheck(values, mean, float(reported), reported_by or "reported", deviation,
                      spread, sigma)


def trial_fields(trials: list[tuple[float, ...]]) -> dict[str, Any]:
    """A leaderboard row's trial fields: how many trials its figures average and what the
    5-trial rule says of them."""
    sets = [t for t in trials if t]
    if not sets:
        return {"trials": 1, "trial_rule": "1 trial (NeuroBench asks for 5)"}
    checks = [check_trials(t) for t in sets]
    n = max(len(t) for t in sets)
    flagged = [c for c in checks if not c.ok]
    status = (f"mean of {n} trials reported; " +
              (f"{len(flagged)} figure(s) flagged not repeatable" if flagged
               else "every figure repeatable within 5 %"))
    return {"trials": n, "trial_rule": status}


def _pct(fraction: float | None) -> str:
    return "n/a" if fraction is None else f"{100 * fraction:.1f} %"


class ReportedFileError(ValueError):
    """A ``--reported`` file that cannot be read; the message names the file and the entry."""


@dataclass
class ReportedFigures:
    """Figures reported earlier, keyed (table, row, column) as ``hilbench summary --format
    json|csv`` writes them: the figure each new trial set is checked against."""

    source: str
    figures: dict[tuple[str, str, str], float]

    def get(self, table: str, row: str, column: str) -> float | None:
        return self.figures.get((table, row, column))


def _reported_json(path: Path, text: str) -> dict[tuple[str, str, str], float]:
    """The numbers of `hilbench summary --format json`, by (table, row, column)."""
    figures: dict[tuple[str, str, str], float] = {}
    try:
        data = json.loads(text)
        for t in data["tables"]:
            for row in t["rows"]:
                for column, cell in row["cells"].items():
                    value = cell.get("value")
                    if isinstance(value, (int, float)) and not isinstance(value, bool):
                        figures[(t["key"], row["key"], column)] = float(value)
    except (ValueError, KeyError, TypeError) as exc:
        raise ReportedFileError(
            f"{path}: not the JSON of `hilbench summary --format json` ({exc})") from None
    return figures


def _reported_csv(path: Path, text: str) -> dict[tuple[str, str, str], float]:
    """The numbers of `hilbench summary --format csv`, by (table, row, column)."""
    figures: dict[tuple[str, str, str], float] = {}
    reader = csv.DictReader(io.StringIO(text))
    wanted = {"table", "row", "column", "value"}
    if not wanted <= set(reader.fieldnames or ()):
        raise ReportedFileError(
            f"{path}: a CSV needs the columns {', '.join(sorted(wanted))} (as `hilbench "
            "summary --format csv` writes them)")
    for line, entry in enumerate(reader, start=2):
        if not entry["value"]:
            continue
        try:
            figures[(entry["table"], entry["row"], entry["column"])] = float(entry["value"])
        except ValueError:
            raise ReportedFileError(
                f"{path} line {line}: value {entry['value']!r} is not a number") from None
    return figures


def load_reported(path: Path) -> ReportedFigures:
    """Read an earlier ``hilbench summary`` output (JSON or CSV) as reported figures."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportedFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    figures = (_reported_json(path, text) if text.lstrip().startswith("{")
               else _reported_csv(path, text))
    if not figures:
        raise ReportedFileError(f"{path}: holds no reported figure")
    return ReportedFigures(str(path), figures)


def apply_trial_rule(table: Table, reported: ReportedFigures | None = None) -> None:
    """Check every figure of ``table`` that has trials (or a reported counterpart): failures
    are noted on the cell, the outcome and the per-trial spread are added to the notes."""
    checks: list[tuple[str, TrialCheck]] = []
    unmatched = 0
    figures = 0
    for row in table.rows:
        key = row.key(table.columns)
        for i, (column, cell) in enumerate(zip(table.columns, row.cells, strict=True)):
            value = cell.number
            if column.key or value is None:
                continue
            figures += 1
            earlier = reported.get(table.key, key, column.heading) if reported else None
            if reported is not None and earlier is None:
                unmatched += 1
            if not cell.trials and earlier is None:
                continue
            check = check_trials(cell.trials or (value,), earlier,
                                 reported.source if reported and earlier is not None else "")
            checks.append((f"{key}, {column.heading}", check))
            flags = []
            if not check.passed:
                flags.append(f"FLAG: the mean of {len(check.trials)} trial(s) is "
                             f"{_pct(check.deviation)} from the reported {check.reported:.6g}")
            if check.repeatable is False:
                flags.append(f"FLAG: not repeatable (±{_pct(check.repeat_sigma)} for a repeat)")
            if flags:
                note = "; ".join([cell.note, *flags]) if cell.note else "; ".join(flags)
                row.cells[i] = replace(cell, note=note)
    if figures:
        table.notes += trial_notes(checks, reported, unmatched)


def trial_notes(checks: list[tuple[str, TrialCheck]], reported: ReportedFigures | None,
                unmatched: int = 0) -> list[str]:
    """The lines under a table that say how the 5-trial rule came out."""
    if not checks:
        return [f"trials: 1 (NeuroBench reports an average over {TRIALS} trials, within 5 % of "
                f"the reported result: hilbench run --trials {TRIALS})"]
    counts = sorted({len(c.trials) for _, c in checks})
    n = "/".join(str(c) for c in counts)
    lines = []
    against = [(label, c) for label, c in checks if not c.against_mean]
    if not against:
        lines.append(f"5-trial rule: {n} trial(s) per figure; the reported figure is their mean, "
                     "so it holds by construction (check new trials against these figures with "
                     "hilbench summary --reported FILE)")
    else:
        failed = [(label, c) for label, c in against if not c.passed]
        worst = max(against, key=lambda lc: lc[1].deviation or 0.0)
        lines.append(f"5-trial rule against {reported.source if reported else 'reported'}: "
                     f"{len(against) - len(failed)} of {len(against)} figure(s) within 5 % "
                     f"(largest deviation {_pct(worst[1].deviation)}, {worst[0]})")
        for label, c in failed:
            lines.append(f"FLAG 5-trial rule: {label}: mean of {len(c.trials)} trial(s) "
                         f"{c.mean:.6g} is {_pct(c.deviation)} from reported {c.reported:.6g}")
        if unmatched:
            source = reported.source if reported else "the file"
            lines.append(f"{unmatched} figure(s) have no counterpart in {source} and were "
                         "checked against their own mean")
    spread = [(label, c) for label, c in checks if c.spread is not None]
    if spread:
        label, c = max(spread, key=lambda lc: lc[1].spread or 0.0)
        lines.append(f"per-trial spread (beside the rule, not part of it): trials lie at most "
                     f"{_pct(c.spread)} from their mean ({label})")
    for label, c in checks:
        if c.repeatable is False:
            values = ", ".join(f"{v:.4g}" for v in c.trials)
            lines.append(f"FLAG not repeatable: {label}: trials {values} "
                         f"— a repeat of {len(c.trials)} trials would be expected ±"
                         f"{_pct(c.repeat_sigma)} from this mean, beyond the rule's 5 %")
    if counts[0] < TRIALS:
        lines.append(f"NeuroBench asks for {TRIALS} trials (hilbench run --trials {TRIALS})")
    return lines
