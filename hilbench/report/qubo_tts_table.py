"""The QUBO time-to-solution summary: per size × solver × gap, how many seeds reached the gap,
and the mean latency and energy to reach it (from stored metrics only).

Means are over the seeds that reached the gap (the leaderboard averages 5 seeds); the count
beside them says how many did. Energy carries the root-sum-square of the runs' expanded
uncertainties divided by the number of runs (the uncertainty of a mean of independent runs).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from hilbench.store import Store


@dataclass(frozen=True)
class TtsRow:
    nodes: int
    density: float
    solver: str
    gap: float
    runs: int
    reached: int
    mean_latency_s: float | None
    mean_energy_j: float | None
    energy_uncertainty_j: float | None


def tts_rows(store_path: Path, campaign_uid: str) -> list[TtsRow]:
    groups: dict[tuple, list[tuple[float | None, float | None, float | None]]] = defaultdict(list)
    with Store(store_path) as store:
        for run in store.runs(campaign_uid):
            p = run["params"]
            if run["status"] != "success" or p.get("scenario") != "time_to_solution":
                continue
            metrics = {m["name"]: m for m in store.metrics(run["uid"])}
            for gap in p.get("gaps", []):
                latency = metrics.get(f"tts_s@{gap:g}", {})
                energy = metrics.get(f"tts_energy_j@{gap:g}", {})
                key = (p["nodes"], p["density"], p["solver"], float(gap))
                groups[key].append(
                    (latency.get("value"), energy.get("value"), energy.get("uncertainty"))
                )
    rows = []
    for key in sorted(groups, key=lambda k: (k[0], k[1], k[2], -k[3])):
        runs = groups[key]
        hit = [r for r in runs if r[0] is not None]
        energies = [r for r in hit if r[1] is not None]
        complete = bool(energies) and len(energies) == len(hit)
        rows.append(
            TtsRow(
                *key,
                runs=len(runs),
                reached=len(hit),
                mean_latency_s=statistics.fmean(r[0] for r in hit) if hit else None,
                mean_energy_j=statistics.fmean(r[1] for r in energies) if complete else None,
                energy_uncertainty_j=(
                    math.sqrt(sum((r[2] or 0.0) ** 2 for r in energies)) / len(energies)
                    if complete
                    else None
                ),
            )
        )
    return rows


def tts_table(rows: list[TtsRow], title: str) -> Table:
    table = Table(title=title)
    for col in ("nodes", "dens.", "solver", "gap", "reached", "latency s", "energy J"):
        table.add_column(col, justify="left" if col == "solver" else "right", no_wrap=True)
    for r in rows:
        energy = (
            "n/m"
            if r.mean_energy_j is None
            else f"{r.mean_energy_j:.4g} ± {r.energy_uncertainty_j:.2g}"
        )
        table.add_row(
            str(r.nodes),
            f"{r.density:g}",
            r.solver,
            f"{r.gap:g}",
            f"{r.reached}/{r.runs}",
            "-" if r.mean_latency_s is None else f"{r.mean_latency_s:.4g}",
            energy,
        )
    return table


def print_summary(store_path: Path, campaign_uid: str, console: Console, name: str) -> None:
    rows = tts_rows(store_path, campaign_uid)
    if rows:
        console.print(tts_table(rows, f"{name}: time and energy to solution, mean over seeds"))
