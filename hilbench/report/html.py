"""The report as one self-contained HTML page (figures embedded as data URIs, no external
request, no script) and as Markdown beside its figure files, both from Jinja2 templates escaped
by construction (:mod:`hilbench.report.markup`).

Table cells carry their stored number (``data-value``, ``data-uncertainty``) beside the text
as printed, so a reader's tool (and the tests) can check each printed figure against the
store.
"""

from __future__ import annotations

import base64
import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hilbench.report.document import Report
from hilbench.report.figures.style import ratio_text, versus
from hilbench.report.markup import MdSafe, html_environment, markdown_environment
from hilbench.report.render import render_markdown
from hilbench.report.table import Cell, Table
from hilbench.safe_paths import open_inside, write_inside
from hilbench.simulation import LABEL


@dataclass(frozen=True)
class HtmlCell:
    text: str
    value: str  # repr of the stored number ('' for text and missing values)
    uncertainty: str
    note: int | None  # footnote number
    align: str


def _number(value: Any) -> str:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return ""
    return repr(float(value))


def _cell_note(cell: Cell) -> str:
    parts = [p for p in (cell.missing if cell.value is None else "", cell.note) if p]
    return "; ".join(parts)


def table_view(table: Table) -> dict[str, Any]:
    """What the template needs of one table: headings, cells with footnote numbers, notes."""
    notes: dict[str, int] = {}
    rows = []
    for row in table.rows:
        cells = []
        for i, cell in enumerate(row.cells):
            note = _cell_note(cell)
            number = notes.setdefault(note, len(notes) + 1) if note else None
            cells.append(HtmlCell(table.cell_text(i, cell), _number(cell.number),
                                  _number(cell.uncertainty), number, table.columns[i].align))
        rows.append({"cells": cells, "section": row.section})
    return {
        "key": table.key,
        "title": table.title,
        "headings": [table.heading(i) for i in range(len(table.columns))],
        "rows": rows,
        "footnotes": [(n, note) for note, n in notes.items()],
        "notes": list(table.notes),
        "simulated": table.simulated,
    }


def _data_uri(out: Path, rel: str) -> str:
    kind = "image/svg+xml" if rel.endswith(".svg") else "image/png"
    with open_inside(out, rel) as fh:
        return f"data:{kind};base64,{base64.b64encode(fh.read()).decode('ascii')}"


def render_html(report: Report, out: Path) -> str:
    """The page; images are read from ``out`` (where :func:`build_report` wrote them)."""
    env = html_environment()
    env.globals["ratio_text"] = ratio_text
    env.globals["versus"] = versus
    env.globals["data_uri"] = lambda rel: _data_uri(out, rel)
    env.globals["table_view"] = table_view
    return env.get_template("report.html.j2").render(report=report, simulated_label=LABEL)


def render_md(report: Report) -> str:
    env = markdown_environment()
    env.globals["ratio_text"] = ratio_text
    env.globals["versus"] = versus
    env.globals["table_md"] = lambda table: MdSafe(render_markdown(table))
    return env.get_template("report.md.j2").render(report=report, simulated_label=LABEL)


def write_report(report: Report, out: Path) -> tuple[Path, Path]:
    """``report.html`` and ``report.md`` in ``out``, plus ``runs.csv`` (every run id)."""
    html = write_inside(out, "report.html", render_html(report, out))
    md = write_inside(out, "report.md", render_md(report))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["campaign", "run", "unit_key", "status"])
    for campaign in report.campaigns:
        writer.writerows([campaign.uid, *run] for run in campaign.run_ids)
    write_inside(out, "runs.csv", buf.getvalue())
    return html, md
