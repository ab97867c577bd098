"""The QUBO summary: BKS-gap and power per size × timeout × solver, from stored runs only."""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from hilbench.store import Store


@dataclass(frozen=True)
class GapRow:
    nodes: int
    density: float
    timeout_s: float
    solver: str
    runs: int
    mean_gap: float
    worst_gap: float
    mean_run_time_s: float
    mean_power_w: float | None  # None: power was not measured (see power_note)
    power_note: str


def gap_rows(store_path: Path, campaign_uid: str) -> list[GapRow]:
    """Mean BKS-gap over seeds and repetitions for each (nodes, density, timeout, solver)."""
    groups: dict[tuple, list[dict[str, float | None]]] = defaultdict(list)
    notes: dict[tuple, str] = {}
    with Store(store_path) as store:
        for run in store.runs(campaign_uid):
            p = run["params"]
            if run["status"] != "success" or p.get("scenario") != "fixed_timeout":
                continue
            metrics = {m["name"]: m for m in store.metrics(run["uid"])}
            key = (p["nodes"], p["density"], p["timeout_s"], p["solver"])
            groups[key].append({name: m["value"] for name, m in metrics.items()})
            power_meta = metrics.get("avg_power_w", {}).get("meta") or {}
            if power_meta.get("reason"):
                notes[key] = power_meta["reason"]
    rows = []
    for key in sorted(groups):
        runs = groups[key]
        gaps = [r["bks_gap"] for r in runs if r.get("bks_gap") is not None]
        powers = [r["avg_power_w"] for r in runs if r.get("avg_power_w") is not None]
        rows.append(
            GapRow(
                nodes=key[0],
                density=key[1],
                timeout_s=key[2],
                solver=key[3],
                runs=len(runs),
                mean_gap=statistics.fmean(gaps),
                worst_gap=max(gaps),
                mean_run_time_s=statistics.fmean(r["run_time_s"] for r in runs),
                mean_power_w=statistics.fmean(powers) if len(powers) == len(runs) else None,
                power_note=notes.get(key, ""),
            )
        )
    return rows


def gap_table(rows: list[GapRow], title: str) -> Table:
    table = Table(title=title)
    for col in (
        "nodes",
        "dens.",
        "timeout s",
        "solver",
        "runs",
        "gap mean",
        "gap max",
        "time s",
        "power W",
    ):
        table.add_column(col, justify="left" if col == "solver" else "right", no_wrap=True)
    for r in rows:
        power = f"{r.mean_power_w:.2f}" if r.mean_power_w is not None else "n/m"
        table.add_row(
            str(r.nodes),
            f"{r.density:g}",
            f"{r.timeout_s:g}",
            r.solver,
            str(r.runs),
            f"{r.mean_gap:.4f}",
            f"{r.worst_gap:.4f}",
            f"{r.mean_run_time_s:.4f}",
            power,
        )
    return table
