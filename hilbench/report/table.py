"""The summary table model: what every report surface (terminal, Markdown, CSV, JSON, the HTML
report) draws from, so that a figure reads the same everywhere.

A :class:`Table` has columns and rows of :class:`Cell`; a cell keeps its number in SI units
(no prefix) with its uncertainty, unit, whether it rests on a simulation, the trial values it is
the mean of, and a short note. :meth:`Cell.text` writes the number with the digits its
uncertainty supports (two significant digits of the uncertainty), so every renderer prints the
same string and none needs to know how to round. Lines under a table (how it was measured,
flags) are :attr:`Table.notes`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from hilbench.simulation import LABEL as SIMULATED

Kind = Literal["number", "percent", "count", "text"]
_PREFIXES = ((1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"))
SIG_DIGITS = 4  # a number without an uncertainty: this many significant digits
MAX_DECIMALS = 12


@dataclass(frozen=True)
class Cell:
    """One table entry. ``value`` is a number in SI units (``unit`` without prefix) or text.

    ``uncertainty`` is in the value's unit (95 % expanded, or a standard error where the
    column says so); ``trials`` the per-trial figures the value is the mean of (empty: a
    single trial); ``note`` a short remark the renderers show beside or under the cell;
    ``missing`` why there is no value (shown as ``n/m`` with the reason as a note)."""

    value: float | int | str | None
    uncertainty: float | None = None
    unit: str = ""
    kind: Kind = "number"
    simulated: bool = False
    note: str = ""
    trials: tuple[float, ...] = ()
    missing: str = ""
    prefix: bool = True  # choose an SI prefix for the value (else: plain SI unit)
    # an asymmetric 95 % interval (low, high) shown instead of ± (e.g. an accuracy near 100 %)
    interval: tuple[float, float] | None = None
    # what the figure must never be shown without, e.g. "agent report, uncertainty not
    # stated" (:meth:`hilbench.power.provenance.PowerOrigin.mark`)
    label: str = ""
    # a prefixed unit the figure is always printed in ("ms", "mW", "mJ"), as a paper's table
    # prints a row; ``value`` stays in SI units
    fixed_unit: str = ""

    @classmethod
    def of_text(cls, text: str, note: str = "") -> Cell:
        return cls(text, kind="text", note=note)

    @property
    def number(self) -> float | None:
        """The value as a float (None for text and missing values)."""
        if self.kind == "text" or self.value is None or isinstance(self.value, str):
            return None
        return float(self.value)

    def figure(self, *, unit: bool = True) -> str:
        """The value and uncertainty as printed, without the simulated mark or note."""
        if self.value is None:
            return "n/m" if self.missing else "—"
        if self.kind == "text" or isinstance(self.value, str):
            return str(self.value)
        if self.kind == "count":
            return f"{int(self.value)}"
        if self.kind == "percent":
            if self.interval is not None:
                return format_interval(100 * float(self.value), 100 * self.interval[0],
                                       100 * self.interval[1], " %" if unit else "")
            else:
                text = format_value(100 * float(self.value),
                                    None if self.uncertainty is None else 100 * self.uncertainty)
            return f"{text} %" if unit else text
        if self.fixed_unit and self.unit and unit:
            return format_fixed(float(self.value), self.uncertainty, self.fixed_unit)
        return format_quantity(float(self.value), self.uncertainty,
                               self.unit if unit else "", prefix=self.prefix and unit)

    def text(self, *, unit: bool = True) -> str:
        """The figure as a table shows it: ``12.0 ± 1.1 mW (simulated)``."""
        text = self.figure(unit=unit) + self.label_text()
        if self.simulated and self.value is not None:
            text += f" ({SIMULATED})"
        return text

    def label_text(self) -> str:
        """`` (label)`` after a figure that carries one, else nothing."""
        return f" ({self.label})" if self.label and self.value is not None else ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "text": self.text()}
        if self.uncertainty is not None:
            out["uncertainty"] = self.uncertainty
        if self.unit:
            out["unit"] = self.unit
        if self.kind != "number":
            out["kind"] = self.kind
        if self.simulated:
            out["simulated"] = True
        if self.note:
            out["note"] = self.note
        if self.trials:
            out["trials"] = list(self.trials)
        if self.interval is not None:
            out["interval95"] = list(self.interval)
        if self.label:
            out["label"] = self.label
        if self.missing:
            out["missing"] = self.missing
        return out


EMPTY = Cell(None)


@dataclass(frozen=True)
class Column:
    """A column: its heading, and the unit its bare numbers are in (then the heading says it
    and cells omit it). ``key`` columns identify a row and are repeated when a wide table is
    split into parts."""

    name: str
    unit: str = ""
    key: bool = False
    align: Literal["left", "right"] = "right"

    @property
    def heading(self) -> str:
        return f"{self.name} {self.unit}".strip() if self.unit else self.name


@dataclass
class Row:
    """A row: one cell per column; ``section`` starts a new group of rows (a rule above it)."""

    cells: list[Cell]
    section: bool = False
    ident: str = ""  # the row's identity when its key columns do not make one

    def key(self, columns: list[Column]) -> str:
        """The row's identity: its key columns' text, e.g. ``100/0.05/0.01/sa``."""
        if self.ident:
            return self.ident
        parts = [c.figure() for col, c in zip(columns, self.cells, strict=True) if col.key]
        return "/".join(parts) if parts else self.cells[0].figure()


@dataclass
class Table:
    """One summary table: ``key`` names it across runs (``qubo.fixed_timeout``,
    ``asc.table6/cpu0``…), ``notes`` are the lines printed under it."""

    key: str
    title: str
    columns: list[Column]
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, *cells: Cell | str, section: bool = False, ident: str = "") -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{self.key}: {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(Row([c if isinstance(c, Cell) else Cell.of_text(c) for c in cells],
                             section=section, ident=ident))

    @property
    def simulated(self) -> bool:
        return any(c.simulated for r in self.rows for c in r.cells)

    def simulated_column(self, column: int) -> bool:
        """Every figure of the column rests on a simulation: the heading says so once."""
        figures = [r.cells[column] for r in self.rows
                   if r.cells[column].value is not None and r.cells[column].kind != "text"]
        return bool(figures) and all(c.simulated for c in figures)

    def heading(self, column: int) -> str:
        """A column's heading as shown: name, unit, and ``(simulated)`` when every figure in
        it is."""
        text = self.columns[column].heading
        return f"{text} ({SIMULATED})" if self.simulated_column(column) else text

    def _figures_simulated(self, row: Row, columns: list[bool]) -> bool:
        """Every figure of the row is simulated, none in a column whose heading says so."""
        figures = [(i, c) for i, c in enumerate(row.cells)
                   if c.value is not None and c.kind != "text"]
        return (bool(figures) and all(c.simulated for _, c in figures)
                and not any(columns[i] for i, _ in figures))

    def row_marks(self) -> tuple[set[int], set[int]]:
        """Which rows carry the simulated mark after their label, and which rows are covered
        by such a mark (their own, or their section's label row when every figure row of the
        section is simulated)."""
        marked: set[int] = set()
        covered: set[int] = set()
        columns = [self.simulated_column(i) for i in range(len(self.columns))]
        sections: list[list[int]] = []
        for i, row in enumerate(self.rows):
            if row.section or not sections:
                sections.append([])
            sections[-1].append(i)
        for members in sections:
            head = members[0]
            label_row = self.is_label(self.rows[head])
            figure_rows = [i for i in members
                           if any(c.value is not None and c.kind != "text"
                                  for c in self.rows[i].cells)]
            simulated = [i for i in figure_rows
                         if self._figures_simulated(self.rows[i], columns)]
            if label_row and figure_rows and simulated == figure_rows:
                marked.add(head)
                covered.update(figure_rows)
            else:
                marked.update(simulated)
                covered.update(simulated)
        return marked, covered

    def texts(self) -> list[list[str]]:
        """Every cell as shown in this table (see :meth:`cell_text`), row by row."""
        marks = self.row_marks()
        columns = [self.simulated_column(i) for i in range(len(self.columns))]
        return [[self.cell_text(i, cell, r, marks=marks, columns=columns)
                 for i, cell in enumerate(row.cells)] for r, row in enumerate(self.rows)]

    def cell_text(self, column: int, cell: Cell, row: int | None = None, *,
                  marks: tuple[set[int], set[int]] | None = None,
                  columns: list[bool] | None = None) -> str:
        """A cell as shown in this table: without the unit its heading carries, and with the
        simulated mark once — in the heading when the whole column is simulated, after the
        label of the row (or of its section) when all of it is, else beside the figure.
        (``marks`` and ``columns``: :meth:`row_marks` and :meth:`simulated_column` for every
        column, when already at hand.)"""
        text = cell.figure(unit=not self.columns[column].unit) + cell.label_text()
        if marks is None:
            marks = self.row_marks() if row is not None else (set(), set())
        marked, covered = marks
        if row in marked and column == self._label_column():
            return f"{text} ({SIMULATED})"
        column_marked = (columns[column] if columns is not None
                         else self.simulated_column(column))
        if cell.simulated and cell.value is not None and row not in covered and not column_marked:
            text += f" ({SIMULATED})"
        return text

    def is_label(self, row: Row) -> bool:
        """A row that only names what follows (its non-key cells are empty): renderers may let
        its text span the whole table."""
        return all((c.value is None and not c.missing) or (c.kind == "text" and not c.value)
                   for c, col in zip(row.cells, self.columns, strict=True) if not col.key)

    def _label_column(self) -> int:
        keys = [i for i, c in enumerate(self.columns) if c.key]
        return keys[-1] if keys else 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "columns": [{"name": c.name, "unit": c.unit, "key": c.key} for c in self.columns],
            "rows": [
                {"key": row.key(self.columns), "section": row.section,
                 "cells": {col.heading: cell.to_dict()
                           for col, cell in zip(self.columns, row.cells, strict=True)}}
                for row in self.rows
            ],
            "notes": list(self.notes),
            "simulated": self.simulated,
        }


def format_quantity(value: float, uncertainty: float | None, unit: str, *,
                    prefix: bool = True) -> str:
    """``12.01 ± 0.11 mW``: an SI prefix chosen for the value when ``prefix`` and a unit."""
    scale, pre = _prefix(value) if prefix and unit else (1.0, "")
    text = format_value(value / scale, None if uncertainty is None else uncertainty / scale)
    return f"{text} {pre}{unit}" if unit else text


def format_fixed(value: float, uncertainty: float | None, unit: str) -> str:
    """``0.052 ± 0.004 mJ``: the value in ``unit`` (an SI prefix and a base unit) whatever its
    size, as a paper's table row prints every system in one unit."""
    scales = {prefix: scale for scale, prefix in _PREFIXES if prefix}
    scale = scales.get(unit[0], 1.0) if len(unit) > 1 else 1.0
    text = format_value(value / scale, None if uncertainty is None else uncertainty / scale)
    return f"{text} {unit}"


def format_value(value: float, uncertainty: float | None) -> str:
    """A number with the digits its uncertainty supports: the uncertainty to two significant
    digits and the value to the same decimal (``20.91 ± 0.12``). Without an uncertainty, four
    significant digits; an uncertainty of exactly zero (a simulated, noise-free figure, or a
    count) is not printed as ``± 0.000…``: the value gets four significant digits and ``± 0``."""
    if not math.isfinite(value):
        return str(value)
    if uncertainty is None or not math.isfinite(uncertainty):
        return _significant(value, SIG_DIGITS)
    if uncertainty <= 0:
        return f"{_significant(value, SIG_DIGITS)} ± 0"
    decimals = 1 - math.floor(math.log10(uncertainty))
    decimals = min(decimals, MAX_DECIMALS)
    if decimals <= 0:
        step = 10.0 ** (-decimals)
        return f"{round(value / step) * step:.0f} ± {round(uncertainty / step) * step:.0f}"
    return f"{value:.{decimals}f} ± {uncertainty:.{decimals}f}"


def format_interval(value: float, low: float, high: float, unit: str = "") -> str:
    """``100 % (68–100 %)``: the value and its interval, to the digits the interval's width
    supports (two significant digits of it)."""
    width = high - low
    if not width > 0:
        return _significant(value, SIG_DIGITS) + unit
    decimals = max(0, min(1 - math.floor(math.log10(width)), MAX_DECIMALS))
    return (f"{value:.{decimals}f}{unit} "
            f"({low:.{decimals}f}–{high:.{decimals}f}{unit})")


def _significant(value: float, digits: int) -> str:
    """``value`` to ``digits`` significant digits in positional notation (no exponent for
    everyday magnitudes), trailing zeros kept so that the precision shows."""
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    if magnitude >= digits + 2 or magnitude < -6:
        return f"{value:.{digits - 1}e}"
    decimals = max(0, digits - 1 - magnitude)
    return f"{value:.{decimals}f}"


def _prefix(value: float) -> tuple[float, str]:
    magnitude = abs(value)
    for scale, prefix in _PREFIXES:
        if magnitude >= scale:
            return scale, prefix
    return _PREFIXES[-1] if magnitude > 0 else _PREFIXES[0]
