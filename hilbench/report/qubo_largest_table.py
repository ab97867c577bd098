"""The largest-workload summary: per agent, density and solver, the largest size that returned
a feasible answer and why the search stopped (from stored metrics only)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from hilbench.store import Store


def largest_rows(store_path: Path, campaign_uid: str) -> list[dict]:
    rows = []
    with Store(store_path) as store:
        for run in store.runs(campaign_uid):
            if run["params"].get("scenario") != "largest_workload":
                continue
            metrics = {m["name"]: m for m in store.metrics(run["uid"])}
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
                }
            )
    return rows


def print_summary(store_path: Path, campaign_uid: str, console: Console, name: str) -> None:
    rows = largest_rows(store_path, campaign_uid)
    if not rows:
        return
    table = Table(title=f"{name}: largest workload supported")
    for col in ("agent", "dens.", "solver", "largest n", "edges", "stopped", "why"):
        table.add_column(col, justify="right" if col in ("largest n", "edges") else "left")
    for r in rows:
        table.add_row(
            r["agent"],
            f"{r['density']:g}",
            r["solver"],
            "none" if r["nodes"] is None else f"{int(r['nodes'])}",
            "-" if r["edges"] is None else f"{int(r['edges'])}",
            r["reason"],
            r["detail"],
        )
    console.print(table)
