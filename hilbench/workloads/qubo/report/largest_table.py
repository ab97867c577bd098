"""The largest-workload summary: per agent, density and solver, the largest size that returned
a feasible answer and why the search stopped (from stored metrics only)."""

from __future__ import annotations

from pathlib import Path

from hilbench.report.campaign_data import CampaignData, load_campaign_data
from hilbench.report.table import Cell, Column, Table


def largest_rows(store_path: Path | CampaignData, campaign_uid: str = "") -> list[dict]:
    data = (store_path if isinstance(store_path, CampaignData)
            else load_campaign_data(store_path, campaign_uid))
    rows = []
    for run in data.runs:
        if run["params"].get("scenario") != "largest_workload":
            continue
        metrics = run["metrics"]
        largest = metrics.get("largest_nodes")
        if largest is None:
            continue
        rows.append(
            {
                "agent": next(iter(run["agents"]), "?"),
                "density": run["params"]["density"],
                "solver": run["params"]["solver"],
                "nodes": largest["value"],
                "edges": metrics.get("largest_edges", {}).get("value"),
                "reason": largest["meta"]["stop_reason"],
                "detail": largest["meta"]["detail"],
                "simulated": bool(run.get("simulated")),
            }
        )
    return rows


def largest_table(rows: list[dict], title: str) -> Table:
    table = Table("qubo.largest_workload", title, [
        Column("agent", key=True, align="left"), Column("dens.", key=True),
        Column("solver", key=True, align="left"), Column("largest n"), Column("edges"),
        Column("stopped", align="left"),
    ])
    for r in rows:
        table.add(
            Cell.of_text(r["agent"]), Cell.of_text(f"{r['density']:g}"),
            Cell.of_text(r["solver"]),
            Cell(r["nodes"], kind="count", simulated=r["simulated"],
                 missing="no size returned a feasible answer" if r["nodes"] is None else ""),
            Cell(r["edges"], kind="count") if r["edges"] is not None else Cell.of_text("-"),
            Cell.of_text(r["reason"], note=r["detail"]),
        )
    return table


def tables(data: CampaignData) -> list[Table]:
    rows = largest_rows(data)
    return [largest_table(rows, f"{data.name}: largest workload supported")] if rows else []
