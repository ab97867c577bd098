"""NeuroBench leaderboard rows from stored campaigns and a system description.

Each workload's registration says which rows and columns it adds (``WorkloadPlugin.leaderboard``:
a ``"module:attribute"``, a module will do, with ``rows(data) -> list[dict]`` — each row's
``benchmark`` its workload's name —, ``UNITS`` (column -> s, j, w, 1 or B), ``ORDER`` (where its
rows come among a campaign's), ``ENTRIES`` and ``NOTE`` (what the command says when no campaign
holds a row), and optionally ``order_rows(rows)`` (applied to every row) and ``md_heading(row)``
(the Markdown heading's tail, escaped). Every row carries the system's fields (system.toml), the
spec version, whether any of its figures is simulated, and the 5-trial rule's outcome. Numbers
are in SI units without prefix (s, J, W; accuracy as a fraction); uncertainties are 95 %
expanded except execution times (standard error), as the tables say.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from functools import cache
from typing import Any

from hilbench import __version__
from hilbench.contracts.registry import resolve, workloads
from hilbench.report.campaign_data import CampaignData
from hilbench.report.markup import md_text
from hilbench.report.system import SPEC_VERSION, SystemDescription

SYSTEM_FIELDS = ("spec_version", "system", "organisation", "date", "availability",
                 "power_measurement_category", "configuration", "software", "architecture",
                 "algorithm", "power_instrument", "included_power_domains",
                 "omitted_power_domains")
RUN_FIELDS = ("benchmark", "entry", "simulated", "trials", "trial_rule", "campaigns")


@cache
def _hooks() -> dict[str, Any]:
    """Each workload's leaderboard part by workload name, in the order its rows come."""
    found = {name: resolve(w.leaderboard) for name, w in workloads().items()
             if w.leaderboard is not None}
    return dict(sorted(found.items(), key=lambda item: getattr(item[1], "ORDER", 100)))


@cache
def _units() -> dict[str, str]:
    return {column: unit for hook in _hooks().values() for column, unit in hook.UNITS.items()}


def what_makes_a_row() -> str:
    """What a campaign must hold to give a row, for the message when none does."""
    hooks = _hooks().values()
    notes = "; ".join(h.NOTE for h in hooks if getattr(h, "NOTE", None))
    return (f"{' or '.join(h.ENTRIES for h in hooks) or 'leaderboard'} results"
            + (f" ({notes})" if notes else ""))


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
        for hook in _hooks().values():
            rows += [{**base, **row, "campaigns": ident} for row in hook.rows(data)]
    for hook in _hooks().values():
        order = getattr(hook, "order_rows", None)
        if order is not None:
            rows = order(rows)
    return rows


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
    heading = getattr(_hooks().get(row.get("benchmark")), "md_heading", None)
    return heading(row) if heading is not None else ""


def _unit(column: str) -> str:
    unit = _units().get(column, "")
    return {"s": "s", "j": "J", "w": "W", "1": "1"}.get(unit, unit)


def _md(value: Any) -> str:
    return md_text(f"{value:.6g}" if isinstance(value, float) else value)
