"""The maxcut summary table (``hilbench summary``, the report): per agent, size, density,
solver and restarts, the mean approximation ratio over the seeds and repetitions, the mean
solving time, and the mean power and energy where an instrument measured them."""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from hilbench.report.campaign_data import CampaignData
from hilbench.report.table import Cell, Column, Table


def _value(run: dict[str, Any], name: str) -> float | None:
    metric = run["metrics"].get(name)
    return None if metric is None else metric["value"]


def _mean_cell(values: list[float | None], unit: str, simulated: bool) -> Cell:
    found = [v for v in values if v is not None]
    if not found:
        return Cell(None, unit=unit, missing="not measured")
    # Seeds are different graphs, not trials of one: the mean carries no trial spread.
    return Cell(statistics.fmean(found), unit=unit, simulated=simulated)


def tables(data: CampaignData) -> list[Table]:
    groups: dict[tuple[str, int, float, str, int], list[dict[str, Any]]] = defaultdict(list)
    for run in data.runs:
        if run["procedure"] != "maxcut.cut" or run["status"] != "success":
            continue
        p = run["params"]
        agent = next(iter(run["agents"]), "?")
        groups[(agent, p["nodes"], p["density"], p["solver"], p["restarts"])].append(run)
    if not groups:
        return []
    table = Table("maxcut.cut", f"{data.name}: MaxCut (cut / target, mean over seeds)", [
        Column("agent", key=True, align="left"), Column("n", key=True),
        Column("dens.", key=True), Column("solver", key=True, align="left"),
        Column("restarts", key=True), Column("ratio"), Column("target", align="left"),
        Column("time", "s"), Column("power", "W"), Column("energy", "J")])
    for (agent, n, d, solver, restarts), runs in sorted(groups.items()):
        simulated = any(r.get("simulated") for r in runs)
        sources = sorted({r["metrics"]["target_cut"]["meta"]["target_source"] for r in runs})
        table.add(Cell.of_text(agent), Cell(n, kind="count"), Cell.of_text(f"{d:g}"),
                  Cell.of_text(solver), Cell(restarts, kind="count"),
                  _mean_cell([_value(r, "approximation_ratio") for r in runs], "", False),
                  Cell.of_text(", ".join(sources)),
                  _mean_cell([_value(r, "actual_s") for r in runs], "s", False),
                  _mean_cell([_value(r, "avg_power_w") for r in runs], "W", simulated),
                  _mean_cell([_value(r, "energy_j") for r in runs], "J", simulated))
    table.notes.append("target: exact = the optimum (every partition tried, n ≤ 20); "
                       "reference = the best of 128 local-search restarts (a lower bound, "
                       "so a ratio may pass 1)")
    return [table]
