"""The summary printed after a campaign: one table per procedure that has runs in it."""

from __future__ import annotations

import importlib
from pathlib import Path

from rich.console import Console

from hilbench.report.qubo_table import gap_rows, gap_table

# Further procedures add a module with print_summary(store_path, campaign_uid, console, title).
SUMMARY_MODULES = (
    "hilbench.report.qubo_tts_table",
    "hilbench.report.qubo_largest_table",
    "hilbench.report.asc_table",
)


def print_summary(store_path: Path, campaign_uid: str, console: Console, name: str) -> None:
    rows = gap_rows(store_path, campaign_uid)
    if rows:
        console.print(gap_table(rows, f"{name}: BKS-gap per size × timeout × solver"))
        notes = [r.power_note for r in rows if r.power_note]
        if notes:
            more = (
                f" (and {len(notes) - 1} similar; `hilbench results` has each)"
                if len(notes) > 1
                else ""
            )
            console.print(f"power n/m (not measured), e.g.: {notes[0]}{more}", highlight=False)
    for module_name in SUMMARY_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        module.print_summary(store_path, campaign_uid, console, name)
