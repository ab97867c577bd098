"""Open a page in headless Chromium (Debian's `chromium`) and read back what it rendered: its DOM
after load, how many of its images loaded, and every console message (script errors, and the
Content-Security-Policy refusals a page that tried to run a script would cause); and the numbers
its tables print.

The pages carry no script, so a file is opened inside a small harness page of the test's own
(an ``<iframe>``; ``--allow-file-access-from-files`` lets the harness read the frame), which
records the frame's DOM and image count into itself for ``--dump-dom``.
"""

from __future__ import annotations

import html
import math
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

PREFIXES = {"": 1.0, "k": 1e3, "m": 1e-3, "µ": 1e-6, "n": 1e-9}
NUMBER = re.compile(r"^(?P<num>[-+]?\d+(?:\.(?P<dec>\d+))?(?:e[-+]?\d+)?)"
                    r"(?: ± (?P<unc>\d+(?:\.\d+)?(?:e[-+]?\d+)?))?"
                    r"(?: (?P<unit>%|[kmµn]?[A-Za-z]+))?")
CONSOLE = re.compile(r":CONSOLE[^\]]*\] (.*)")
HARNESS = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
<iframe id="page" src="{src}" width="1200" height="800"></iframe><pre id="dom"></pre><script>
document.getElementById("page").addEventListener("load", function () {{
  var d = this.contentDocument, images = d.images, loaded = 0;
  for (var i = 0; i < images.length; i++) {{
    if (images[i].complete && images[i].naturalWidth > 0) loaded++;
  }}
  var out = document.getElementById("dom");
  out.setAttribute("data-images-total", String(images.length));
  out.setAttribute("data-images-loaded", String(loaded));
  out.setAttribute("data-title", d.title);
  out.textContent = "<!DOCTYPE html>" + d.documentElement.outerHTML;
}});
</script></body></html>
"""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed (.ci/run installs Debian's chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return found


def browse(url: str, *extra: str) -> tuple[str, list[str]]:
    """``url``'s DOM after load, as headless Chromium serialises it, and its console
    messages."""
    with tempfile.TemporaryDirectory(prefix="hilbench-chromium-") as profile:
        proc = subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", f"--user-data-dir={profile}", "--enable-logging=stderr",
             "--v=0", "--virtual-time-budget=10000", *extra, "--dump-dom", url],
            capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, [m.group(1) for m in CONSOLE.finditer(proc.stderr)]


@dataclass
class Loaded:
    """A page file as Chromium rendered it."""

    dom: str
    title: str
    images_total: int
    images_loaded: int
    console: list[str] = field(default_factory=list)


def open_page(page: Path) -> Loaded:
    """``page`` (a file) rendered in a harness frame: its DOM, title, images and console."""
    with tempfile.TemporaryDirectory(prefix="hilbench-harness-") as folder:
        harness = Path(folder) / "harness.html"
        harness.write_text(HARNESS.format(src=html.escape(page.resolve().as_uri())))
        dom, console = browse(harness.as_uri(), "--allow-file-access-from-files")
    match = re.search(r'<pre id="dom" ([^>]*)>(.*)</pre>', dom, re.S)
    assert match, "the harness recorded nothing: the page did not load"
    attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', match.group(1)))
    return Loaded(html.unescape(match.group(2)), html.unescape(attrs["data-title"]),
                  int(attrs["data-images-total"]), int(attrs["data-images-loaded"]), console)


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
