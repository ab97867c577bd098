"""The QUBO summary from stored runs only: per size × timeout × solver, the feasible fraction,
the BKS-gap over feasible answers (infeasible ones are counted, never averaged), actual against
requested time, power and energy. A run that overran its timeout is not an answer at that
timeout: it is counted in its own column with its actual times, and left out of every other."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.table import Table

from hilbench.simulation import mark
from hilbench.store import Store


@dataclass(frozen=True)
class GapRow:
    nodes: int
    density: float
    timeout_s: float
    solver: str
    runs: int
    feasible: int  # runs whose state is an independent set
    mean_gap: float | None  # over feasible runs only; None when there is none
    worst_gap: float | None
    mean_actual_s: float | None  # over the on-time runs (None: every run overran)
    max_actual_over_requested: float
    overruns: int  # runs flagged: actual > requested + max(5 %, 0.5 ms); in no other figure
    mean_power_w: float | None  # None: power was not measured (see power_note)
    mean_energy_j: float | None
    power_note: str
    simulated: bool = False  # a run of the row used a simulated device or instrument
    overrun_actual_s: tuple[float, ...] = ()  # the overrun runs' actual times

    @property
    def on_time(self) -> int:
        return self.runs - self.overruns

    @property
    def feasible_fraction(self) -> float:
        return self.feasible / self.runs if self.runs else 0.0


def _mean_or_none(values: list[float | None], runs: int) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.fmean(known) if known and len(known) == runs else None


def gap_rows(store_path: Path, campaign_uid: str) -> list[GapRow]:
    """One row per (nodes, density, timeout, solver) of the campaign's fixed-timeout runs."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    notes: dict[tuple, str] = {}
    simulated: set[tuple] = set()
    with Store(store_path) as store:
        for run in store.runs(campaign_uid):
            p = run["params"]
            if run["status"] != "success" or p.get("scenario") != "fixed_timeout":
                continue
            metrics = {m["name"]: m for m in store.metrics(run["uid"])}
            key = (p["nodes"], p["density"], p["timeout_s"], p["solver"])
            groups[key].append({name: m["value"] for name, m in metrics.items()})
            if run.get("simulated"):
                simulated.add(key)
            power_meta = metrics.get("avg_power_w", {}).get("meta") or {}
            if power_meta.get("reason") and not power_meta.get("excluded"):
                notes[key] = power_meta["reason"]
    rows = []
    for key in sorted(groups):
        late = [r for r in groups[key] if r.get("overrun") == 1.0]
        runs = [r for r in groups[key] if r.get("overrun") != 1.0]  # on time: the row's figures
        feasible = [r for r in groups[key] if r.get("feasible") == 1.0]  # a property of answers
        gaps = [r["bks_gap"] for r in feasible
                if r.get("bks_gap") is not None and r.get("overrun") != 1.0]
        ratios = [r["actual_s"] / r["requested_s"] for r in groups[key]]
        rows.append(
            GapRow(
                nodes=key[0],
                density=key[1],
                timeout_s=key[2],
                solver=key[3],
                runs=len(groups[key]),
                feasible=len(feasible),
                mean_gap=statistics.fmean(gaps) if gaps else None,
                worst_gap=max(gaps) if gaps else None,
                mean_actual_s=statistics.fmean(r["actual_s"] for r in runs) if runs else None,
                max_actual_over_requested=max(ratios),
                overruns=len(late),
                mean_power_w=_mean_or_none([r.get("avg_power_w") for r in runs], len(runs)),
                mean_energy_j=_mean_or_none([r.get("energy_j") for r in runs], len(runs)),
                power_note=notes.get(key, ""),
                simulated=key in simulated,
                overrun_actual_s=tuple(sorted(r["actual_s"] for r in late)),
            )
        )
    return rows


def _fmt(value: float | None, spec: str, missing: str = "n/m") -> str:
    return missing if value is None else format(value, spec)


def gap_table(rows: list[GapRow], title: str) -> Table:
    table = Table(title=title)
    for col in (
        "nodes",
        "dens.",
        "timeout s",
        "solver",
        "runs",
        "feasible",
        "gap mean",
        "gap max",
        "actual s",
        "overrun",
        "power W",
        "energy J",
    ):
        table.add_column(col, justify="left" if col == "solver" else "right", no_wrap=True)
    for r in rows:
        overrun = (
            f"{r.overruns}/{r.runs}: " + ", ".join(f"{t:.3g}" for t in r.overrun_actual_s) + " s"
            if r.overruns else "-"
        )
        table.add_row(
            str(r.nodes),
            f"{r.density:g}",
            f"{r.timeout_s:g}",
            r.solver,
            str(r.runs),
            f"{r.feasible}/{r.runs}",
            _fmt(r.mean_gap, ".4f", "infeasible" if r.on_time else "-"),
            _fmt(r.worst_gap, ".4f", "-"),
            _fmt(r.mean_actual_s, ".4f", "-"),
            overrun,
            mark(_fmt(r.mean_power_w, ".2f"), r.simulated),
            mark(_fmt(r.mean_energy_j, ".3g"), r.simulated),
        )
    return table
