"""The summary table model and its renderers: digits the uncertainty supports, whole figures
within the page, and the same text in every format."""

from __future__ import annotations

import csv
import io
import json

import pytest

from hilbench.report.render import render, render_text
from hilbench.report.table import Cell, Column, Table, format_value


@pytest.mark.parametrize(
    ("value", "uncertainty", "text"),
    [
        (20.906893333, 0.0, "20.91 ± 0"),  # not 20.906893333 ± 0.000000000
        (20.906893333, 0.123, "20.91 ± 0.12"),
        (287.4, 29.2, "287 ± 29"),
        (12346.0, 678.0, "12350 ± 680"),
        (0.0123456, None, "0.01235"),
        (42.4, None, "42.40"),
    ],
)
def test_digits_follow_the_uncertainty(value, uncertainty, text):
    assert format_value(value, uncertainty) == text


def test_prefix_and_simulated_mark():
    cell = Cell(0.000287, 0.000029, "s", simulated=True)
    assert cell.text() == "287 ± 29 µs (simulated)"
    assert Cell(None, missing="too short").text() == "n/m"


def _wide_table(rows: int = 3) -> Table:
    table = Table("t", "a wide table", [
        Column("nodes", key=True), Column("solver", key=True, align="left"),
        *(Column(f"metric number {i}", unit="W") for i in range(6)),
    ])
    for r in range(rows):
        table.add(Cell.of_text(str(100 * r)), Cell.of_text("tabu"),
                  *(Cell(20.9 + i, 0.012, "W", simulated=True) for i in range(6)))
    return table


@pytest.mark.parametrize("width", [80, 60, 40, 30])
def test_text_fits_the_page_and_keeps_every_figure(width):
    table = _wide_table()
    text = render_text(table, width)
    figure = table.cell_text(2, table.rows[0].cells[2])
    assert figure == "20.900 ± 0.012"  # the heading says simulated: every figure in it is
    assert "(simulated)" in table.heading(2)
    for line in text.splitlines():
        assert len(line) <= width or " " not in line.strip(), line
    assert "…" not in text
    assert text.count(figure) == 3  # every row's figure, whole
    assert text.count("(simulated)") >= 6  # each column says it


def test_split_parts_repeat_the_key_columns():
    text = render_text(_wide_table(1), 80)
    assert text.count("nodes") >= 2  # each part names its row


def test_cell_notes_become_footnotes():
    table = Table("t", "notes", [Column("a", key=True), Column("b")])
    table.add(Cell.of_text("x"), Cell(1.0, 0.1, "W", note="5 trials, within 5 %"))
    table.add(Cell.of_text("y"), Cell(None, missing="window too short"))
    text = render_text(table)
    assert "1.00 ± 0.10 W [1]" in text and "[1] 5 trials, within 5 %" in text
    assert "n/m [2]" in text and "[2] window too short" in text


def test_csv_and_json_carry_the_printed_text_and_the_raw_number():
    table = _wide_table(1)
    rows = list(csv.DictReader(io.StringIO(render([table], "csv"))))
    assert rows[0]["text"] == "20.900 ± 0.012 W (simulated)"
    assert float(rows[0]["value"]) == 20.9 and rows[0]["row"] == "0/tabu"
    data = json.loads(render([table], "json", extra={"campaign": "c"}))
    assert data["campaign"] == "c"
    cell = data["tables"][0]["rows"][0]["cells"]["metric number 0 W"]
    assert cell["value"] == 20.9 and cell["simulated"] is True
    md = render([table], "md")
    assert "| 0 | tabu | 20.900 ± 0.012 | 21.900 ± 0.012 |" in md
    assert "| metric number 0 W (simulated) |" in md


def test_a_column_mixing_measured_and_simulated_marks_each_simulated_cell():
    table = Table("t", "mixed", [Column("system", key=True), Column("power", unit="W")])
    table.add(Cell.of_text("bench"), Cell(1.0, 0.1, "W"))
    table.add(Cell.of_text("sim"), Cell(2.0, 0.1, "W", simulated=True))
    assert table.heading(1) == "power W"
    assert [table.cell_text(1, r.cells[1]) for r in table.rows] == [
        "1.00 ± 0.10", "2.00 ± 0.10 (simulated)"]


def test_a_table_of_notes_alone_renders():
    table = Table("notes", "c: notes", [], notes=["power source rapl could not be read"])
    assert "power source rapl could not be read" in render([table], "text")
    assert "power source rapl" in render([table], "md")
