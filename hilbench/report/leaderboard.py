"""NeuroBench leaderboard rows from stored campaigns and a system description.

One row per entry a leaderboard lists: an ASC row per agent (accuracy, execution time and
dynamic energy per inference of pre-processing and inference, idle and dynamic power), a QUBO
row per solver and workload (time and energy to 90 / 95 / 99 % of the target — BKS-gap 0.1,
0.05, 0.01 — averaged over the seeds that reached it) with the solver's largest workload at 1 %
density and fully connected. Every row carries the system's fields (system.toml), the spec
version, whether any of its figures is simulated, and the 5-trial rule's outcome. Numbers are in
SI units without prefix (s, J, W; accuracy as a fraction); uncertainties are 95 % expanded
except execution times (standard error), as the tables say.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from typing import Any

from hilbench import __version__
from hilbench.power.instrument_agreement import disagreeing_instruments
from hilbench.power.provenance import origin_of
from hilbench.report.campaign_data import CampaignData
from hilbench.report.markup import md_text
from hilbench.report.system import SPEC_VERSION, SystemDescription
from hilbench.report.trials import check_trials
from hilbench.workloads.asc.report.closed import closed_fields, order_rows
from hilbench.workloads.asc.report.table import STAGES, AscGroup, asc_groups, combine
from hilbench.workloads.qubo.report.largest_table import largest_rows
from hilbench.workloads.qubo.report.tts_table import TtsRow, tts_rows

GAPS = ((0.1, 90), (0.05, 95), (0.01, 99))  # BKS-gap -> % of target optimality
LARGEST_DENSITIES = ((0.01, "1pct"), (1.0, "fully_connected"))

SYSTEM_FIELDS = ("spec_version", "system", "organisation", "date", "availability",
                 "power_measurement_category", "configuration", "software", "architecture",
                 "algorithm", "power_instrument", "included_power_domains",
                 "omitted_power_domains")
RUN_FIELDS = ("benchmark", "entry", "simulated", "trials", "trial_rule", "campaigns")
UNITS: dict[str, str] = {
    "asc_accuracy": "1", "asc_accuracy_u95": "1",
    **{f"asc_{what}_{stage}_{unit}": unit
       for stage in STAGES
       for what, unit in (("execution_time", "s"), ("execution_time_se", "s"),
                          ("energy_per_inference", "j"), ("energy_per_inference_u95", "j"),
                          ("active_power", "w"), ("dynamic_power", "w"))},
    "asc_idle_power_w": "w", "asc_power_stream_s": "s",
    "asc_modelled_energy_per_inference_j": "j", "asc_footprint_bytes": "B",
    **{f"qubo_{what}_{pct}pct_{unit}": unit for _, pct in GAPS
       for what, unit in (("time_to", "s"), ("energy_to", "j"), ("energy_to_u95", "j"))},
    **{f"qubo_largest_nodes_{label}": "1" for _, label in LARGEST_DENSITIES},
}


def system_fields(system: SystemDescription) -> dict[str, Any]:
    software = [f"{s.name} {s.version}" for s in system.software]
    if not any(s.name.lower() == "hilbench" for s in system.software):
        software.append(f"hilbench {__version__}")
    return {
        "spec_version": SPEC_VERSION,
        "system": system.name,
        "organisation": system.organisation,
        "date": system.date.isoformat(),
        "availability": system.availability,
        "power_measurement_category": system.power.category,
        "configuration": system.configuration,
        "software": "; ".join(software),
        "architecture": system.architecture,
        "algorithm": system.algorithm,
        "power_instrument": system.power.instrument,
        "included_power_domains": "; ".join(system.power.included_domains),
        "omitted_power_domains": "; ".join(system.power.omitted_domains),
    }


def leaderboard_rows(campaigns: Iterable[CampaignData],
                     system: SystemDescription) -> list[dict[str, Any]]:
    """Every leaderboard row the campaigns hold, each with the system's fields."""
    base = system_fields(system)
    rows: list[dict[str, Any]] = []
    for data in campaigns:
        ident = f"{data.name} ({data.uid[:8]})"
        for group in asc_groups(data):
            rows.append({**base, **_asc_row(group), "campaigns": ident})
        largest = largest_rows(data)
        for row in _qubo_rows(tts_rows(data), largest):
            rows.append({**base, **row, "campaigns": ident})
    return order_rows(rows)  # closed rows grouped by graph: devices on the same model


def _figure(runs: list[dict[str, Any]], name: str) -> tuple[float | None, float | None,
                                                             tuple[float, ...]]:
    fig = combine(runs, name)
    if fig is None or fig.value is None:
        return None, None, ()
    return fig.value, fig.uncertainty, fig.trials


def _asc_row(group: AscGroup) -> dict[str, Any]:
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
    row.update(_trial_fields(trials))
    return row


def _qubo_rows(tts: list[TtsRow], largest: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_solver: dict[str, dict[str, Any]] = {}
    for entry in largest:
        fields = by_solver.setdefault(entry["solver"], {})
        for density, label in LARGEST_DENSITIES:
            if abs(entry["density"] - density) < 1e-9:
                fields[f"qubo_largest_nodes_{label}"] = entry["nodes"]
                fields["_simulated"] = fields.get("_simulated", False) or entry["simulated"]
    workloads: dict[tuple[str, int, float], dict[float, TtsRow]] = {}
    for r in tts:
        workloads.setdefault((r.solver, r.nodes, r.density), {})[r.gap] = r
    rows = []
    seen: set[str] = set()
    for (solver, nodes, density), gaps in sorted(workloads.items()):
        row: dict[str, Any] = {"benchmark": "qubo", "entry": solver, "qubo_nodes": nodes,
                               "qubo_density": density}
        trials: list[tuple[float, ...]] = []
        simulated = False
        seeds = []
        sources = sorted({r.energy_source for r in gaps.values() if r.energy_source})
        row["qubo_energy_source"] = "; ".join(sources) or None
        for gap, pct in GAPS:
            hit = gaps.get(gap)
            row[f"qubo_time_to_{pct}pct_s"] = hit.mean_latency_s if hit else None
            row[f"qubo_energy_to_{pct}pct_j"] = hit.mean_energy_j if hit else None
            row[f"qubo_energy_to_u95_{pct}pct_j"] = hit.energy_uncertainty_j if hit else None
            if hit:
                seeds.append(f"{hit.reached}/{hit.runs}")
                trials += list(hit.trials.values())
                simulated = simulated or hit.simulated
        row["qubo_seeds_reached"] = " ".join(seeds)
        extra = by_solver.get(solver, {})
        row.update({k: v for k, v in extra.items() if not k.startswith("_")})
        row["simulated"] = simulated or extra.get("_simulated", False)
        row.update(_trial_fields(trials))
        rows.append(row)
        seen.add(solver)
    for solver, extra in sorted(by_solver.items()):
        if solver not in seen:
            rows.append({"benchmark": "qubo", "entry": solver,
                         **{k: v for k, v in extra.items() if not k.startswith("_")},
                         "simulated": extra.get("_simulated", False),
                         **_trial_fields([])})
    return rows


def _trial_fields(trials: list[tuple[float, ...]]) -> dict[str, Any]:
    """How many trials the row's figures average and what the 5-trial rule says of them."""
    sets = [t for t in trials if t]
    if not sets:
        return {"trials": 1, "trial_rule": "1 trial (NeuroBench asks for 5)"}
    checks = [check_trials(t) for t in sets]
    n = max(len(t) for t in sets)
    flagged = [c for c in checks if not c.ok]
    status = (f"mean of {n} trials reported; " +
              (f"{len(flagged)} figure(s) flagged not repeatable" if flagged
               else "every figure repeatable within 5 %"))
    return {"trials": n, "trial_rule": status}


def columns(rows: list[dict[str, Any]]) -> list[str]:
    """The rows' fields in a stable order: system, entry, then measured fields."""
    measured: dict[str, None] = {}
    for row in rows:
        for key in row:
            if key not in SYSTEM_FIELDS and key not in RUN_FIELDS:
                measured.setdefault(key, None)
    return [*SYSTEM_FIELDS, *RUN_FIELDS[:2], *measured, *RUN_FIELDS[2:]]


def render_leaderboard(rows: list[dict[str, Any]], fmt: str) -> str:
    """Rows as ``csv``, ``json`` (with the units of every field) or ``md``."""
    cols = columns(rows)
    if fmt == "json":
        return json.dumps({"spec_version": SPEC_VERSION, "generated_by": f"hilbench {__version__}",
                           "units": {c: _unit(c) for c in cols if _unit(c)},
                           "rows": [{c: row.get(c) for c in cols} for row in rows]},
                          indent=1, ensure_ascii=False) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(cols)
        for row in rows:
            writer.writerow(["" if row.get(c) is None else row.get(c) for c in cols])
        return buf.getvalue()
    if fmt == "md":
        out = [f"# NeuroBench leaderboard rows ({SPEC_VERSION})", ""]
        for row in rows:
            out += [f"## {_md(row['benchmark'])}: {_md(row['entry'])} on {_md(row['system'])}"
                    + (" (simulated)" if row.get("simulated") else "") + _category(row), "",
                    "| field | value | unit |", "|:---|---:|:---|"]
            for c in cols:
                if c in row and row[c] not in (None, ""):
                    out.append(f"| {c} | {_md(row[c])} | {_unit(c)} |")
            out.append("")
        return "\n".join(out)
    raise ValueError(f"unknown format {fmt!r} (csv, json, md)")


def _category(row: dict[str, Any]) -> str:
    category = row.get("asc_category")
    if category == "closed":
        return f" — closed, graph {_md(str(row.get('asc_graph_sha256'))[:12])}…"
    return f" — {_md(category)}" if category else ""


def _unit(column: str) -> str:
    unit = UNITS.get(column, "")
    return {"s": "s", "j": "J", "w": "W", "1": "1"}.get(unit, unit)


def _md(value: Any) -> str:
    return md_text(f"{value:.6g}" if isinstance(value, float) else value)
