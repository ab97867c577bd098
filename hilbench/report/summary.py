"""A campaign's summary tables, from the store only: the same tables at the end of `hilbench
run` and from `hilbench summary` (text, Markdown, CSV, JSON) and in the report.

Each workload plugin names modules that give ``tables(data) -> list[Table]``
(``WorkloadPlugin.summary_tables``); this module reads the campaign
once, collects their tables, applies NeuroBench's 5-trial rule to every figure with trials
(:mod:`hilbench.report.trials`) and adds the campaign-wide notes (power sources that could not
be read).
"""

from __future__ import annotations

import importlib
from pathlib import Path

from rich.console import Console

from hilbench.contracts.registry import workloads
from hilbench.power.provenance import origin_of
from hilbench.report.campaign_data import CampaignData, load_campaign_data
from hilbench.report.render import PAGE, render_text
from hilbench.report.table import Table
from hilbench.report.trials import ReportedFigures, apply_trial_rule


def summary_modules() -> tuple[str, ...]:
    """Every installed workload's table modules, in the registry's order."""
    return tuple(m for w in workloads().values() for m in w.summary_tables)



def summary_tables(data: CampaignData, reported: ReportedFigures | None = None) -> list[Table]:
    """Every summary table of the campaign, the 5-trial rule applied, notes attached."""
    out: list[Table] = []
    for module_name in summary_modules():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            raise
        out += module.tables(data)
    for table in out:
        apply_trial_rule(table, reported)
    notes = unreadable_power_sources(data)
    if out and notes:
        out[-1].notes += notes
    elif notes:
        out.append(Table("notes", f"{data.name}: notes", [], notes=notes))
    return out


def print_tables(tables: list[Table], console: Console) -> None:
    """Tables as text: the terminal's width, 80 columns when not a terminal (a log file)."""
    width = console.width if console.is_terminal else PAGE
    for table in tables:
        console.print(render_text(table, width), markup=False, highlight=False, soft_wrap=True)


def print_summary(store_path: Path, campaign_uid: str, console: Console, name: str) -> None:
    """The summary printed after a campaign (one table per procedure that has runs in it)."""
    data = load_campaign_data(store_path, campaign_uid)
    data.name = name
    print_tables(summary_tables(data), console)


def unreadable_power_sources(data: CampaignData) -> list[str]:
    """One line per power source an agent declared but could not read (e.g. RAPL in a VM, or
    root-only counters), with the agent's reason: a missing figure is explained, not silent.

    An agent declares its own power source in ``capabilities()["power"]`` as
    ``{"source", "available", "reason"}``; the handshake stores it with every run. A device
    without a sensor of its own (``source = "external"``) is mentioned only when no instrument
    measured it: otherwise the instrument's figures are the power figures."""
    found: dict[tuple[str, str], str] = {}
    measured: set[str] | None = None  # read only when a device without a sensor appears
    for run in data.runs:
        for agent_id, info in (run.get("agents") or {}).items():
            power = (info.get("capabilities") or {}).get("power") or {}
            if not power or power.get("available", True):
                continue
            source = str(power.get("source") or "internal power")
            if source == "external":
                if measured is None:
                    measured = _agents_measured_by_instruments(data)
                if agent_id not in measured:
                    found[(agent_id, source)] = (
                        f"{power.get('reason') or 'the device has no power sensor'}; no "
                        "instrument measured it in this campaign, so its power is not measured")
                continue
            found[(agent_id, source)] = str(power.get("reason") or "no reason given")
    return [
        f"power source {source} of agent {agent} could not be read: {reason}"
        if source != "external" else f"agent {agent}: {reason}"
        for (agent, source), reason in sorted(found.items())
    ]


def _agents_measured_by_instruments(data: CampaignData) -> set[str]:
    """Agents with a power figure from an instrument in some run of the campaign."""
    measured: set[str] = set()
    for run in data.runs:
        agents = list(run.get("agents") or {})
        for name, metric in run["metrics"].items():
            if "power" not in name or metric.get("value") is None:
                continue
            meta = metric.get("meta") or {}
            origin = origin_of(meta)
            # an agent's own report is no instrument (stores from before origins: "instrument")
            if (origin.kind != "agent" if origin is not None else bool(meta.get("instrument"))):
                measured.update(agents)
                break
    return measured
