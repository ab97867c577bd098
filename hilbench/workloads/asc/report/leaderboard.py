"""The ASC workload's NeuroBench leaderboard rows (``WorkloadPlugin.leaderboard``; see
:mod:`hilbench.report.leaderboard`): one row per agent with the accuracy, the execution time
and dynamic energy per inference of pre-processing and inference, idle and dynamic power, and
the closed or open category."""

from __future__ import annotations

from typing import Any

from hilbench.power.instrument_agreement import disagreeing_instruments
from hilbench.power.provenance import origin_of
from hilbench.report.campaign_data import CampaignData
from hilbench.report.markup import md_text
from hilbench.report.trials import trial_fields
from hilbench.workloads.asc.report.closed import closed_fields, order_rows
from hilbench.workloads.asc.report.table import STAGES, AscGroup, asc_groups, combine

ORDER = 0  # a campaign's ASC rows come before its other rows
ENTRIES = "ASC"  # what the command's "no rows" message names
NOTE = None
UNITS: dict[str, str] = {
    "asc_accuracy": "1", "asc_accuracy_u95": "1",
    **{f"asc_{what}_{stage}_{unit}": unit
       for stage in STAGES
       for what, unit in (("execution_time", "s"), ("execution_time_se", "s"),
                          ("energy_per_inference", "j"), ("energy_per_inference_u95", "j"),
                          ("active_power", "w"), ("dynamic_power", "w"))},
    "asc_idle_power_w": "w", "asc_power_stream_s": "s",
    "asc_modelled_energy_per_inference_j": "j", "asc_footprint_bytes": "B",
}

__all__ = ["ENTRIES", "NOTE", "ORDER", "UNITS", "md_heading", "order_rows", "rows"]


def rows(data: CampaignData) -> list[dict[str, Any]]:
    """One row per agent that ran ASC in the campaign."""
    return [asc_row(group) for group in asc_groups(data)]


def md_heading(row: dict[str, Any]) -> str:
    """The Markdown heading's tail: the row's category (a closed row's graph)."""
    category = row.get("asc_category")
    if category == "closed":
        return f" — closed, graph {md_text(str(row.get('asc_graph_sha256'))[:12])}…"
    return f" — {md_text(category)}" if category else ""


def _figure(runs: list[dict[str, Any]], name: str) -> tuple[float | None, float | None,
                                                             tuple[float, ...]]:
    fig = combine(runs, name)
    if fig is None or fig.value is None:
        return None, None, ()
    return fig.value, fig.uncertainty, fig.trials


def asc_row(group: AscGroup) -> dict[str, Any]:
    row: dict[str, Any] = {"benchmark": "asc", "entry": group.agent}
    trials: list[tuple[float, ...]] = []
    value, u, t = _figure(group.single, "accuracy")
    row["asc_accuracy"], row["asc_accuracy_u95"] = value, u
    trials.append(t)
    for stage in STAGES:
        name = "preprocess_time_s" if stage == "preprocessing" else "inference_time_s"
        value, u, t = _figure(group.single, name)
        row[f"asc_execution_time_{stage}_s"], row[f"asc_execution_time_se_{stage}_s"] = value, u
        trials.append(t)
    stream = min(group.power) if group.power else None  # the un-amortised figures first
    row["asc_power_stream_s"] = stream
    runs = group.power.get(stream, []) if stream is not None else []
    origin = origin_of((runs[0].get("idle_power_w") or {}).get("meta")) if runs else None
    row["asc_power_source"] = origin.explain() if origin is not None else None
    if origin is not None and not origin.leaderboard_ok:
        # An agent's own report whose source states no uncertainty stays out of the row.
        row["asc_power_note"] = ("power figures left out: the agent's own report, "
                                 "uncertainty not stated")
        runs = []
    row["asc_idle_power_w"] = _figure(runs, "idle_power_w")[0]
    for stage in STAGES:
        value, u, t = _figure(runs, f"energy_per_inference_j.{stage}")
        row[f"asc_energy_per_inference_{stage}_j"] = value
        row[f"asc_energy_per_inference_u95_{stage}_j"] = u
        trials.append(t)
        row[f"asc_active_power_{stage}_w"] = _figure(runs, f"active_power_w.{stage}")[0]
        row[f"asc_dynamic_power_{stage}_w"] = _figure(runs, f"dynamic_power_w.{stage}")[0]
    # a further instrument on the device whose figures disagree (E_n > 1), by name
    disagree = disagreeing_instruments([m.get("meta") for r in runs for m in r.values()])
    row["asc_instruments_disagree"] = ", ".join(disagree) or None
    row["simulated"] = bool(group.simulation)
    row.update(closed_fields(group))  # asc_category: closed (a NIR graph) or open
    row.update(trial_fields(trials))
    return row
