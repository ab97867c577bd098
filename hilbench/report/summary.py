"""The summary printed after a campaign: one table per procedure that has runs in it."""

from __future__ import annotations

import importlib
from pathlib import Path

from rich.console import Console

from hilbench.report.qubo_table import gap_rows, gap_table
from hilbench.store import Store

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
    for note in unreadable_power_sources(store_path, campaign_uid):
        console.print(note, highlight=False, markup=False, soft_wrap=True)


def unreadable_power_sources(store_path: Path, campaign_uid: str) -> list[str]:
    """One line per power source an agent declared but could not read (e.g. RAPL in a VM, or
    root-only counters), with the agent's reason: a missing figure is explained, not silent.

    An agent declares its own power source in ``capabilities()["power"]`` as
    ``{"source", "available", "reason"}``; the handshake stores it with every run."""
    with Store(store_path) as store:
        runs = store.runs(campaign_uid)
    found: dict[tuple[str, str], str] = {}
    for run in runs:
        for agent_id, info in (run.get("agents") or {}).items():
            power = (info.get("capabilities") or {}).get("power") or {}
            if power and not power.get("available", True):
                source = str(power.get("source") or "internal power")
                found[(agent_id, source)] = str(power.get("reason") or "no reason given")
    return [
        f"power source {source} of agent {agent} could not be read: {reason}"
        for (agent, source), reason in sorted(found.items())
    ]
