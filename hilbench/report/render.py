"""Summary tables as text (a terminal or a log file), Markdown, CSV and JSON.

Text never cuts a figure: a table wider than the page is split into parts that repeat its key
columns, and where even that does not fit each row is printed as a block of ``heading: value``
lines. Headings wrap between words; cell notes become numbered footnotes under the table.
"""

from __future__ import annotations

import csv
import io
import json
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

from hilbench.report.markup import md_text
from hilbench.report.table import Cell, Table

GAP = 2  # spaces between columns
PAGE = 80


def render(tables: Sequence[Table], fmt: str, *, width: int = PAGE,
           extra: dict[str, Any] | None = None) -> str:
    """All tables in one format: ``text``, ``md``, ``csv`` or ``json`` (``extra``: top-level
    keys the JSON carries beside the tables, e.g. the campaign)."""
    if fmt == "text":
        return "\n".join(render_text(t, width) for t in tables)
    if fmt == "md":
        return "\n".join(render_markdown(t) for t in tables)
    if fmt == "csv":
        return render_csv(tables)
    if fmt == "json":
        return json.dumps({**(extra or {}), "tables": [t.to_dict() for t in tables]},
                          indent=1, ensure_ascii=False) + "\n"
    raise ValueError(f"unknown format {fmt!r} (text, md, csv, json)")


def _footnotes(table: Table) -> tuple[list[list[str]], list[str]]:
    """Cell texts with footnote markers, and the footnotes (identical notes share a number)."""
    notes: dict[str, int] = {}
    texts = table.texts()
    for row, line in zip(table.rows, texts, strict=True):
        for i, cell in enumerate(row.cells):
            note = _cell_note(cell)
            if note:
                number = notes.setdefault(note, len(notes) + 1)
                line[i] += f" [{number}]"
    return texts, [f"[{n}] {note}" for note, n in notes.items()]


def _cell_note(cell: Cell) -> str:
    parts = [p for p in (cell.missing if cell.value is None else "", cell.note) if p]
    return "; ".join(parts)


def render_text(table: Table, width: int = PAGE) -> str:
    """A table in at most ``width`` columns, every figure whole."""
    texts, footnotes = _footnotes(table)
    out = [*_wrap(table.title, width), ""]
    # a label row's text spans the table: it does not widen its column
    sized = [t for t, row in zip(texts, table.rows, strict=True) if not table.is_label(row)]
    keys = [i for i, c in enumerate(table.columns) if c.key]
    others = [i for i, c in enumerate(table.columns) if not c.key]
    cells = [max([0] + [len(r[i]) for r in sized]) for i in range(len(table.columns))]
    # headings on one line unless wrapping them (between words) saves a part or a stack
    widths = [max(cells[i], len(table.heading(i))) for i in range(len(table.columns))]
    parts = _split(widths, keys, others, width) if table.columns else []
    narrow = [max(cells[i], _longest_word(table.heading(i))) for i in range(len(table.columns))]
    fewer = _split(narrow, keys, others, width) if table.columns else []
    if fewer is not None and (parts is None or len(fewer) < len(parts)):
        widths, parts = narrow, fewer
    if parts is None:
        out += _stacked(table, texts, width)
    else:
        for n, part in enumerate(parts):
            if n:
                out.append("")
            out += _grid(table, texts, part, widths, width)
    notes = footnotes + list(table.notes)
    if notes:
        out.append("")
        for note in notes:
            out += _wrap(note, width, indent="  ", subsequent="    ")
    out.append("")
    return "\n".join(out)


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)


def _split(widths: list[int], keys: list[int], others: list[int],
           page: int) -> list[list[int]] | None:
    """Column groups that each fit ``page`` (key columns in every group); None: stack rows."""
    def span(cols: list[int]) -> int:
        return sum(widths[i] for i in cols) + GAP * (len(cols) - 1)

    if span(keys + others) <= page:
        return [keys + others]
    parts: list[list[int]] = []
    current: list[int] = []
    for i in others:
        if span(keys + current + [i]) <= page:
            current.append(i)
            continue
        if not current:
            return None
        parts.append(keys + current)
        current = [i]
        if span(keys + current) > page:
            return None
    if current:
        parts.append(keys + current)
    return parts


def _grid(table: Table, texts: list[list[str]], cols: list[int], widths: list[int],
          page: int) -> list[str]:
    headings = [textwrap.wrap(table.heading(i), widths[i]) or [""] for i in cols]
    depth = max(len(h) for h in headings)
    lines = []
    for level in range(depth):
        cells = []
        for h, i in zip(headings, cols, strict=True):
            # headings sit on the bottom line, like a spreadsheet's
            words = h[level - (depth - len(h))] if level >= depth - len(h) else ""
            cells.append(_align(words, widths[i], table.columns[i].align))
        lines.append((" " * GAP).join(cells).rstrip())
    rule = (" " * GAP).join("─" * widths[i] for i in cols)
    lines.append(rule)
    for row, text in zip(table.rows, texts, strict=True):
        if row.section and lines[-1] != rule:
            lines.append(rule)
        if table.is_label(row):
            label = "  ".join(text[i] for i in cols if table.columns[i].key and text[i])
            lines += _wrap(label, page)
            continue
        lines.append((" " * GAP).join(
            _align(text[i], widths[i], table.columns[i].align) for i in cols).rstrip())
    assert all(len(line) <= page for line in lines), "a table line is wider than the page"
    return lines


def _align(text: str, width: int, align: str) -> str:
    return text.rjust(width) if align == "right" else text.ljust(width)


def _stacked(table: Table, texts: list[list[str]], page: int) -> list[str]:
    """One block per row: the key columns as its heading, then ``heading: value`` lines."""
    keys = [i for i, c in enumerate(table.columns) if c.key]
    label = max((len(table.heading(i)) for i in range(len(table.columns))), default=0)
    label = min(label, page // 3)
    lines: list[str] = []
    for text in texts:
        if lines:
            lines.append("")
        if keys:
            head = ", ".join(f"{table.heading(i)} {text[i]}".strip() for i in keys)
            lines += _wrap(head, page)
        for i in range(len(table.columns)):
            if i in keys or not text[i]:
                continue
            start = f"  {table.heading(i).ljust(label)}  "
            if len(start) + len(text[i]) <= page:
                lines.append(start + text[i])
            else:  # the figure on its own line, whole (wrapped only where a note follows it)
                lines += _wrap(f"  {table.heading(i)}", page, subsequent="    ")
                lines.append(("    " if len(text[i]) + 4 <= page else "") + text[i])
    return lines


def _wrap(text: str, width: int, indent: str = "", subsequent: str | None = None) -> list[str]:
    """Wrap between words only: a figure is never broken (a word longer than the page stays
    whole on its own line)."""
    return textwrap.wrap(text, width, initial_indent=indent,
                         subsequent_indent=indent if subsequent is None else subsequent,
                         break_long_words=False, break_on_hyphens=False) or [""]


def render_markdown(table: Table) -> str:
    texts, footnotes = _footnotes(table)
    out = [f"### {md_text(table.title)}", ""]
    if table.columns:
        out.append("| " + " | ".join(md_text(table.heading(i)) for i in range(len(table.columns)))
                   + " |")
        out.append("|" + "|".join("---:" if c.align == "right" else ":---"
                                  for c in table.columns) + "|")
        for text in texts:
            out.append("| " + " | ".join(md_text(t) for t in text) + " |")
    notes = footnotes + list(table.notes)
    if notes:
        out.append("")
        out += [f"- {md_text(n)}" for n in notes]
    out.append("")
    return "\n".join(out)


CSV_COLUMNS = ("table", "row", "column", "value", "uncertainty", "unit", "text", "simulated",
               "trials", "note")


def render_csv(tables: Iterable[Table]) -> str:
    """Long form: one line per cell, the number unrounded beside the text as printed."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for table in tables:
        for row in table.rows:
            key = row.key(table.columns)
            if table.is_label(row):
                continue
            for col, cell in zip(table.columns, row.cells, strict=True):
                if col.key or (cell.kind == "text" and not cell.value):
                    continue
                writer.writerow([
                    table.key, key, col.heading,
                    "" if cell.value is None else cell.value,
                    "" if cell.uncertainty is None else cell.uncertainty,
                    cell.unit, cell.text(), int(cell.simulated),
                    " ".join(repr(t) for t in cell.trials), _cell_note(cell),
                ])
        for note in table.notes:
            writer.writerow([table.key, "", "note", "", "", "", note, "", "", ""])
    return buf.getvalue()
