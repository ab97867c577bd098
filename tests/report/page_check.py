"""Open a report page in headless Chromium (Debian's `chromium`) and read back what its own
script recorded (every image loaded? any error?), and the numbers its tables print."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest

PREFIXES = {"": 1.0, "k": 1e3, "m": 1e-3, "µ": 1e-6, "n": 1e-9}
NUMBER = re.compile(r"^(?P<num>[-+]?\d+(?:\.(?P<dec>\d+))?(?:e[-+]?\d+)?)"
                    r"(?: ± (?P<unc>\d+(?:\.\d+)?(?:e[-+]?\d+)?))?"
                    r"(?: (?P<unit>%|[kmµn]?[A-Za-z]+))?")


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed (.ci/run installs Debian's chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


def dump_dom(page: Path) -> str:
    """The page's DOM after load, as headless Chromium serialises it."""
    proc = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--virtual-time-budget=10000", "--dump-dom", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@dataclass
class TableCell:
    table: str
    column: str
    text: str
    value: float | None
    uncertainty: float | None = None


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.root: dict[str, str] = {}
        self.cells: list[TableCell] = []
        self._table = ""
        self._cell: dict[str, str] | None = None
        self._text: list[str] = []
        self._sup = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "html":
            self.root = a
        elif tag == "table":
            self._table = a.get("data-table", "")
        elif tag == "td":
            self._cell, self._text = a, []
        elif tag == "sup":
            self._sup += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "sup":
            self._sup -= 1
        elif tag == "td" and self._cell is not None:
            value = self._cell.get("data-value")
            unc = self._cell.get("data-uncertainty")
            self.cells.append(TableCell(self._table, self._cell.get("data-column", ""),
                                        "".join(self._text).strip(),
                                        float(value) if value else None,
                                        float(unc) if unc else None))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None and not self._sup:
            self._text.append(data)


def parse(dom: str) -> _Parser:
    parser = _Parser()
    parser.feed(dom)
    return parser


def printed_matches(cell: TableCell) -> bool:
    """The printed number equals the cell's stored value rounded to the printed digits."""
    assert cell.value is not None
    match = NUMBER.match(cell.text)
    assert match, f"{cell.table}/{cell.column}: no number in {cell.text!r}"
    printed = float(match["num"])
    unit = match["unit"] or ""
    scale = 100.0 if unit == "%" else 1.0
    if unit and unit != "%" and len(unit) > 1 and unit[0] in PREFIXES and unit[1:] in (
            "W", "J", "s", "A", "V"):
        scale = 1.0 / PREFIXES[unit[0]]
    decimals = len(match["dec"] or "")
    if "e" in match["num"]:
        mantissa = match["num"].split("e")[0]
        digits = len(mantissa.split(".")[1]) if "." in mantissa else 0
        return math.isclose(float(f"{cell.value * scale:.{digits}e}"), printed, rel_tol=1e-12)
    step = 10.0 ** -decimals
    unc = match["unc"]
    if unc and "." not in unc and "e" not in unc and len(unc) > 2:
        step = 10.0 ** (len(unc) - 2)  # the uncertainty's two significant digits: 110 → tens
    expected = cell.value * scale
    tolerance = 0.5 * step * (1 + 1e-9)
    if unc and cell.uncertainty is not None and (  # the uncertainty too, at the same step
            abs(cell.uncertainty * scale - float(unc)) > tolerance + 1e-12):
        return False
    return abs(expected - printed) <= tolerance + 1e-12 * abs(expected)
