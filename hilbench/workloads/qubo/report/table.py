"""The QUBO fixed-timeout summary from stored runs only: per size × timeout × solver, the
feasible fraction, the BKS-gap over feasible answers (infeasible ones are counted, never
averaged), actual against requested time, power and energy over the fixed runtime with their
source. A run that overran its timeout is not an answer at that timeout: it is counted in its
own column with its actual times, and left out of every other. A run that stopped before its
timeout is counted too (its power and energy still cover the whole runtime).

Power and energy come from an instrument the orchestrator read. Where none did, an agent's
own report fills the cell only when it covers the fixed runtime, and then says so beside the
figure (``agent report``, with ``uncertainty not stated`` when its source states none); where
both exist, the agent's report is shown beside the instrument's with their agreement (E_n).

With several trials (repetitions) a figure is the mean of the trials' figures (each the mean
over the row's seeds in that trial), checked by NeuroBench's 5-trial rule
(:mod:`hilbench.report.trials`).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hilbench.documents import is_set
from hilbench.power.provenance import origin_of, origins_text
from hilbench.report.campaign_data import CampaignData, load_campaign_data
from hilbench.report.table import Cell, Column, Table

TRIAL_METRICS = ("bks_gap", "actual_s", "avg_power_w", "energy_j")
FLAGS = ("feasible", "overrun", "stopped_early")  # yes/no figures, read as booleans


@dataclass(frozen=True)
class GapRow:
    nodes: int
    density: float
    timeout_s: float
    solver: str
    runs: int
    feasible: int  # runs whose state is an independent set (late ones too)
    mean_gap: float | None  # over feasible runs only; None when there is none
    worst_gap: float | None
    mean_actual_s: float | None  # over the on-time runs (None: every run overran)
    max_actual_over_requested: float
    overruns: int  # runs flagged: actual > requested + max(5 %, 0.5 ms); in no other figure
    mean_power_w: float | None  # None: power was not measured (see power_note)
    mean_energy_j: float | None
    power_note: str
    simulated: bool = False  # a run of the row used a simulated device or instrument
    power_uncertainty_w: float | None = None  # 95 %, of the mean
    energy_uncertainty_j: float | None = None
    mean_cost: float | None = None  # over feasible runs only
    # metric -> the per-trial figures the mean is made of (only with two trials or more)
    trials: dict[str, tuple[float, ...]] = field(default_factory=dict)
    gap_note: str = ""  # why a gap is below zero, when one is
    overrun_actual_s: tuple[float, ...] = ()  # the overrun runs' actual times
    unverified: int = 0  # runs whose timing could not be verified: counted, in no figure
    power_source: str = ""  # where the power figures come from (every source, once)
    power_label: str = ""  # the mark the power figures carry (an agent's report)
    power_label_note: str = ""  # that mark spelt out (whose report, uncertainty stated?)
    stopped_early_actual_s: tuple[float, ...] = ()  # on-time runs that ended before timeout
    # the agent's own report beside an instrument's figure: mean, its U95, and agreement
    reported_power_w: float | None = None
    reported_uncertainty_w: float | None = None
    reported_label: str = ""
    worst_en: float | None = None
    disagreeing: int = 0

    @property
    def on_time(self) -> int:
        return self.runs - self.overruns

    @property
    def feasible_fraction(self) -> float:
        """Of every run: feasibility is a property of the answer, late or not."""
        return self.feasible / self.runs if self.runs else 0.0


def _mean_or_none(values: list[float | None], runs: int) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.fmean(known) if known and len(known) == runs else None


def _rss_mean(values: list[float | None]) -> float | None:
    """The uncertainty of a mean of independent runs: root-sum-square over n."""
    if not values or any(v is None for v in values):
        return None
    return math.sqrt(sum(v * v for v in values if v is not None)) / len(values)


def gap_rows(store_path: Path | CampaignData, campaign_uid: str = "") -> list[GapRow]:
    """One row per (nodes, density, timeout, solver) of the campaign's fixed-timeout runs."""
    data = (store_path if isinstance(store_path, CampaignData)
            else load_campaign_data(store_path, campaign_uid))
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    notes: dict[tuple, str] = {}
    simulated: set[tuple] = set()
    beaten: dict[tuple, dict[int, tuple[int, Any]]] = defaultdict(dict)
    unverified: dict[tuple, int] = defaultdict(int)
    for run in data.runs:
        p = run["params"]
        if p.get("scenario") != "fixed_timeout":
            continue
        key = (p["nodes"], p["density"], p["timeout_s"], p["solver"])
        if run["status"] == "unverified":
            unverified[key] += 1
        if run["status"] != "success":
            continue
        metrics = run["metrics"]
        values: dict[str, Any] = {name: m.value for name, m in metrics.items()}
        for name in FLAGS:  # the stored 1.0 / 0.0 as the booleans they are
            values[name] = is_set(values.get(name))
        values["_rep"] = p.get("repetition", 0)
        power, energy = metrics.get("avg_power_w"), metrics.get("energy_j")
        values["_power_u"] = power.uncertainty if power is not None else None
        values["_energy_u"] = energy.uncertainty if energy is not None else None
        values["_metrics"] = metrics
        groups[key].append(values)
        if run.get("simulated"):
            simulated.add(key)
        if power is not None and power.value is None and key not in notes:
            meta = power.meta or {}
            if meta.get("reason") and not meta.get("excluded"):
                notes[key] = str(meta["reason"])
        gap = values.get("bks_gap")
        if gap is not None and gap < 0:
            beaten[key][int(p.get("seed", 0))] = (int(p.get("target", 0)),
                                                  p.get("target_detail") or {})
    return [dataclasses.replace(_row(key, groups[key], notes.get(key, ""), key in simulated,
                                     beaten.get(key, {})), unverified=unverified[key])
            for key in sorted(groups)]


def _row(key: tuple, every: list[dict[str, Any]], power_note: str, simulated: bool,
         beaten: dict[int, tuple[int, Any]]) -> GapRow:
    late = [r for r in every if r["overrun"]]
    runs = [r for r in every if not r["overrun"]]  # on time: the row's figures
    answers = sum(1 for r in every if r["feasible"])  # a property of the answer
    feasible = [r for r in runs if r["feasible"]]
    gaps = [r["bks_gap"] for r in feasible if r.get("bks_gap") is not None]
    costs = [r["cost"] for r in feasible if r.get("cost") is not None]
    ratios = [r["actual_s"] / r["requested_s"] for r in every]
    power = _mean_or_none([r.get("avg_power_w") for r in runs], len(runs))
    energy = _mean_or_none([r.get("energy_j") for r in runs], len(runs))
    power_u = None if power is None else _rss_mean([r["_power_u"] for r in runs])
    energy_u = None if energy is None else _rss_mean([r["_energy_u"] for r in runs])
    row_trials = _trials(runs)
    label, explain, reported = "", "", _reported(runs)
    if power is None and reported is not None and reported["covers"]:
        # no instrument: the agent's own report, where it covers the runtime, marked as such
        power, power_u, label = reported["power"], reported["power_u"], reported["label"]
        explain = reported["explain"]
        energy, energy_u = reported["energy"], reported["energy_u"]
        row_trials = {**row_trials, **reported["trials"]}
    beside = reported if power is not None and not label and reported is not None else None
    return GapRow(
        nodes=key[0],
        density=key[1],
        timeout_s=key[2],
        solver=key[3],
        runs=len(every),
        feasible=answers,
        mean_gap=_trial_mean(row_trials, "bks_gap", gaps),
        worst_gap=max(gaps) if gaps else None,
        mean_actual_s=_trial_mean(row_trials, "actual_s", [r["actual_s"] for r in runs]),
        max_actual_over_requested=max(ratios),
        overruns=len(late),
        mean_power_w=None if power is None else _trial_mean(row_trials, "avg_power_w", [power]),
        mean_energy_j=None if energy is None else _trial_mean(row_trials, "energy_j", [energy]),
        power_note=power_note,
        simulated=simulated,
        power_uncertainty_w=power_u,
        energy_uncertainty_j=energy_u,
        mean_cost=statistics.fmean(costs) if costs else None,
        trials=row_trials,
        gap_note=_gap_note(beaten),
        overrun_actual_s=tuple(sorted(r["actual_s"] for r in late)),
        power_source=origins_text(_first_meta(every, "agent_avg_power_w" if label
                                              else "avg_power_w")),
        power_label=label,
        power_label_note=explain,
        stopped_early_actual_s=tuple(sorted(r["actual_s"] for r in runs
                                            if r["stopped_early"])),
        reported_power_w=None if beside is None else beside["power"],
        reported_uncertainty_w=None if beside is None else beside["power_u"],
        reported_label=beside["explain"] if beside is not None else "",
        worst_en=None if beside is None else beside["worst_en"],
        disagreeing=0 if beside is None else beside["disagreeing"],
    )


def _first_meta(runs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    """The meta of the first run with a value of ``name`` (a row's runs share their source;
    reading one keeps a summary of 10 000 runs from decoding every meta)."""
    return next(([_meta(r, name)] for r in runs if r.get(name) is not None), [])


def _meta(run: dict[str, Any], name: str) -> dict[str, Any]:
    metric = run["_metrics"].get(name)
    return (metric.meta or {}) if metric is not None else {}


def _reported(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The agent's own reports of the row's on-time runs (every run must have one): mean
    power and energy with their uncertainty (None: some source states none), the mark they
    carry, whether every one covers the fixed runtime, and their agreement with the
    instrument (the largest E_n, how many runs disagree)."""
    values = [r.get("agent_avg_power_w") for r in runs]
    if not runs or any(v is None for v in values):
        return None
    metas = [_meta(r, "agent_avg_power_w") for r in runs]
    origins = [origin_of(m) for m in metas]
    stated = all(o is not None and o.uncertainty_stated for o in origins)
    energies = [r.get("agent_energy_j") for r in runs]
    covers = all(m.get("covers_runtime") for m in metas) and None not in energies
    ens = [(m.get("agreement") or {}) for m in metas]
    known = [a["en"] for a in ens if a.get("en") is not None]
    mark = next((o.mark() for o in origins if o is not None), "agent report")
    explain = next((o.explain() for o in origins if o is not None), "the agent's own report")
    return {
        "power": statistics.fmean(v for v in values if v is not None),
        "power_u": _rss_mean([r["_metrics"]["agent_avg_power_w"].uncertainty
                              for r in runs]) if stated else None,
        "energy": statistics.fmean(e for e in energies if e is not None) if covers else None,
        "energy_u": _rss_mean([r["_metrics"]["agent_energy_j"].uncertainty
                               for r in runs]) if stated and covers else None,
        "label": mark,
        "explain": explain,
        "covers": covers,
        "worst_en": max(known) if known else None,
        "disagreeing": sum(bool(a.get("flagged")) for a in ens),
        "trials": {k: v for k, v in _trials(runs, ("agent_avg_power_w",
                                                   "agent_energy_j")).items()},
    }


def _trials(runs: list[dict[str, Any]], names: tuple[str, ...] = TRIAL_METRICS
            ) -> dict[str, tuple[float, ...]]:
    """Per metric, one figure per trial (repetition): the mean over that trial's runs (over
    its feasible runs for the gap). Empty with a single trial. An agent's own report
    (``agent_*``) is keyed as the figure it stands in for."""
    by_rep: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in runs:
        by_rep[r["_rep"]].append(r)
    if len(by_rep) < 2:
        return {}
    out: dict[str, tuple[float, ...]] = {}
    for name in names:
        figures = []
        for rep in sorted(by_rep):
            values = [r.get(name) for r in by_rep[rep]
                      if name != "bks_gap" or r["feasible"]]
            if not values or None in values:
                break
            figures.append(math.fsum(values) / len(values))
        else:
            out[name.removeprefix("agent_")] = tuple(figures)
    return out


def _trial_mean(trials: dict[str, tuple[float, ...]], name: str,
                values: list[float]) -> float | None:
    if name in trials:
        return statistics.fmean(trials[name])
    return statistics.fmean(values) if values else None


def _gap_note(beaten: dict[int, tuple[int, Any]]) -> str:
    """Why a gap is negative: an answer better than the target, which is then not optimal."""
    if not beaten:
        return ""
    parts = []
    for seed, (target, detail) in sorted(beaten.items()):
        later = detail.get("later_optimum") if isinstance(detail, dict) else None
        parts.append(f"seed {seed}: target {target}"
                     + (f", an exact solver later found {later}" if later is not None else ""))
    return ("a gap below 0 is an answer better than the official target, which is then not "
            "optimal (" + "; ".join(parts) + "); the gap stays against the official target")


COLUMNS = [
    Column("nodes", key=True),
    Column("dens.", key=True),
    Column("timeout", unit="s", key=True),
    Column("solver", key=True, align="left"),
    Column("feasible"),
    Column("gap mean"),
    Column("gap max"),
    Column("actual", unit="s"),
    Column("overrun"),
    Column("early"),
    Column("power", unit="W"),
    Column("energy", unit="J"),
    Column("power source", align="left"),
]
REPORTED = Column("agent report", unit="W")


def gap_table(rows: list[GapRow], title: str) -> Table:
    """The fixed-timeout rows as a summary table."""
    beside = any(r.reported_power_w is not None for r in rows)
    sources = {r.power_source for r in rows if r.power_source}
    by_row = len(sources) > 1  # one source for every row: named once, under the table
    columns = [c for c in COLUMNS if by_row or c.name != "power source"]
    table = Table("qubo.fixed_timeout", title, columns + ([REPORTED] if beside else []))
    for r in rows:
        sim = r.simulated
        extra = [_reported_cell(r)] if beside else []
        table.add(
            Cell.of_text(str(r.nodes)),
            Cell.of_text(f"{r.density:g}"),
            Cell.of_text(f"{r.timeout_s:g}"),
            Cell.of_text(r.solver),
            Cell.of_text(f"{r.feasible}/{r.runs}" + (
                f", unverified {r.unverified}/{r.runs + r.unverified}" if r.unverified else "")),
            Cell(r.mean_gap, trials=r.trials.get("bks_gap", ()), note=r.gap_note
                 if r.mean_gap is not None and r.mean_gap < 0 else "",
                 missing="" if r.mean_gap is not None else
                 "no feasible answer" if r.on_time else "every run overran"),
            Cell(r.worst_gap, note=r.gap_note if r.worst_gap is not None and r.worst_gap < 0
                 and not (r.mean_gap is not None and r.mean_gap < 0) else ""),
            Cell(r.mean_actual_s, unit="s", prefix=False, trials=r.trials.get("actual_s", ())),
            Cell.of_text(_overrun_text(r)),
            Cell.of_text(_times_text(r.stopped_early_actual_s, r.runs)),
            Cell(r.mean_power_w, r.power_uncertainty_w, "W", simulated=sim, prefix=False,
                 trials=r.trials.get("avg_power_w", ()), label=r.power_label,
                 note=r.power_label_note,
                 missing=_power_missing(r) if r.mean_power_w is None else ""),
            Cell(r.mean_energy_j, r.energy_uncertainty_j, "J", simulated=sim, prefix=False,
                 trials=r.trials.get("energy_j", ()), label=r.power_label,
                 note=r.power_label_note,
                 missing=_power_missing(r) if r.mean_energy_j is None else ""),
            *([Cell.of_text(r.power_source or "-")] if by_row else []),
            *extra,
        )
    table.notes += [
        "gap = (cost − target) / |target| over the feasible on-time answers (infeasible ones "
        "are counted in 'feasible', never averaged); actual = solving time plus the cost check; "
        "overrun: runs past the requested time by more than max(5 %, 0.5 ms), with their "
        "actual times; an overrun run is not an answer at its timeout and is in no other "
        "figure of the row",
        "power: average over the fixed runtime [start, start + timeout] (a solver that stops "
        "early leaves its device in the system under test until the timeout); energy = that "
        "power × timeout; early: on-time runs that ended before the timeout by more than "
        "max(5 %, 0.5 ms) (stopped_early), with their actual times",
        "power and energy: mean over the row's runs ± 95 % expanded uncertainty of that mean; "
        "'agent report': the agent's own reading, shown only where no instrument measured the "
        "run, with the uncertainty its source states",
        *([f"power source: {sources.pop()}"] if len(sources) == 1 else []),
        *_power_example(rows),
        *(["unverified: runs whose reply came later than the link's measured bound allows (a "
           "loaded host): no answer, tried again, counted and in no figure"]
          if any(r.unverified for r in rows) else []),
        *(["agent report: the agent's own reading of its solving time beside the instrument's "
           "figure over the same window; E_n = |x1 − x2| / √(U1² + U2²) (ISO 13528), flagged "
           "above 1"] if beside else []),
    ]
    return table


def _reported_cell(row: GapRow) -> Cell:
    """The agent's own report beside the instrument's figure, with their agreement."""
    if row.reported_power_w is None:
        return Cell(None)
    if row.worst_en is None:
        note = "no E_n: the agent's source states no uncertainty"
    elif row.disagreeing:
        note = (f"DISAGREES with the instrument: E_n up to {row.worst_en:.2g} "
                f"({row.disagreeing}/{row.runs} runs above 1)")
    else:
        note = f"agrees with the instrument: E_n ≤ {row.worst_en:.2g}"
    return Cell(row.reported_power_w, row.reported_uncertainty_w, "W", prefix=False,
                label=row.reported_label, note=note)


def _overrun_text(row: GapRow) -> str:
    """``2/4: 0.106, 1 s``: how many runs overran and their actual times (a range past 3)."""
    return _times_text(row.overrun_actual_s, row.runs)


def _times_text(times: tuple[float, ...], runs: int) -> str:
    """``2/4: 0.106, 1 s``: how many runs and their actual times (a range past 3)."""
    if not times:
        return "-"
    shown = (", ".join(f"{t:.3g}" for t in times) if len(times) <= 3
             else f"{times[0]:.3g}–{times[-1]:.3g}")
    return f"{len(times)}/{runs}: {shown} s"


def _power_missing(row: GapRow) -> str:
    """The cause, short enough that rows with the same cause share one footnote (the full
    reason of one row is a note under the table)."""
    if not row.on_time:
        return "every run overran"
    if not row.power_note:
        return "power not measured"
    return f"power not measured: {row.power_note.split(': ', 1)[0]}"


def _power_example(rows: list[GapRow]) -> list[str]:
    missing = [r for r in rows if r.mean_power_w is None and r.power_note]
    if not missing:
        return []
    r = missing[0]
    return [f"power n/m, e.g. n={r.nodes} {r.solver} timeout {r.timeout_s:g} s: {r.power_note}"]


def tables(data: CampaignData) -> list[Table]:
    rows = gap_rows(data)
    return [gap_table(rows, f"{data.name}: BKS-gap per size × timeout × solver")] if rows else []
