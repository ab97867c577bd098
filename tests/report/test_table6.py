"""The report's ASC table as NeuroBench prints Table 6: rows the metrics (each stage its own
row), columns the systems, every figure in the row's fixed unit (ms, mW, mJ), never re-scaled
into µs, µJ or nJ; read back from the generated HTML. Also the report's layout fixes: the system
section printed once for several campaigns, steps numbered once, untimed said once."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hilbench.store import StoreWriter
from hilbench.workloads.asc.report.table6 import ROWS
from tests.report.page_check import parse, printed_matches
from tests.report.test_leaderboard import _run  # one ASC run with its metrics, stored
from tests.subprocesses import hilbench

pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")

SYSTEM = Path(__file__).parents[2] / "examples" / "system.toml"
# Two systems an order of magnitude apart, as the paper's: a Xylo-like one (µs and µJ scale,
# which an auto-scaled table would print in µs/µJ) and an Arduino-like one (ms, mJ).
SYSTEMS = {
    "xylo-like": dict(pre=2.0e-4, inf=4.1e-4, idle=0.000216, active=(0.000265, 0.000241),
                      energy=(9.8e-9, 1.0e-8)),
    "arduino-like": dict(pre=0.043, inf=0.045, idle=0.0794, active=(0.10072, 0.10015),
                         energy=(9.3e-4, 9.5e-4)),
}


# What a power run stores about its measurement (the table's notes describe it).
IDLE_META = {"instrument": "Keysight 34465A", "source": "bench meter", "domains": ["board"],
             "sample_interval_s": 0.0005, "boundary": "exclude", "timing_uncertainty_s": 1e-4,
             "idle_s": 2.0, "active_s": 2.0, "repetitions": 1, "method": "repeat"}


def _budget(system: str, expanded: float) -> dict:
    """The arduino-like system's runs store their uncertainty budget (k = 2 here), the
    xylo-like one's do not (as an agent's own report)."""
    if system != "arduino-like":
        return {}
    return {"budget": {"combined_standard_uncertainty": expanded / 2,
                       "expanded_uncertainty_95": expanded,
                       "components": [{"name": "statistical",
                                       "standard_uncertainty": expanded / 2}]}}


@pytest.fixture
def store(tmp_path):
    return write_systems(tmp_path / "t6.sqlite")


def write_systems(path: Path) -> Path:
    """One campaign per system of :data:`SYSTEMS`: a single-stream and a power run each."""
    with StoreWriter(path) as writer:
        for name, f in SYSTEMS.items():
            writer.begin_campaign(name, name, {})
            _run(writer, name, "asc/single_stream/dev0/abc/rep=0", "asc.single_stream",
                 {"agent": "dev0", "repetition": 0},
                 [("samples", 16240, "", None, {}),
                  ("accuracy", 0.7964, "", 0.01, {"interval95": [0.78, 0.81]}),
                  ("preprocess_time_s", f["pre"], "s", f["pre"] / 300, {}),
                  ("inference_time_s", f["inf"], "s", f["inf"] / 300, {})])
            _run(writer, name, "asc/power/dev0/abc/stream=1/rep=0", "asc.power",
                 {"agent": "dev0", "stream_samples": 1, "repetition": 0},
                 [("idle_power_w", f["idle"], "W", f["idle"] / 400,
                   {**IDLE_META, **_budget(name, f["idle"] / 400)}),
                  *[(f"{metric}.{stage}", value, unit, value / 50, _budget(name, value / 50))
                    for stage, active, energy in zip(("preprocessing", "inference"),
                                                     f["active"], f["energy"], strict=True)
                    for metric, value, unit in (("active_power_w", active, "W"),
                                                ("dynamic_power_w", active - f["idle"], "W"),
                                                ("energy_per_inference_j", energy, "J"))]])
            writer.end_campaign(name, "success")
    return path


def test_the_asc_table_has_table_6s_rows_columns_and_units(store, tmp_path):
    proc = hilbench("report", "xylo-like", "arduino-like", "--db", store, "--out", tmp_path,
                    "--system", SYSTEM)
    assert proc.returncode == 0, proc.stderr[-3000:]
    page = parse((tmp_path / "report.html").read_text())
    cells = [c for c in page.cells if c.table == "asc.neurobench-table6"]
    columns = list(dict.fromkeys(c.column for c in cells))
    assert columns == ["metric", "xylo-like", "arduino-like"]  # a column per system
    every = [cells[i:i + 3] for i in range(0, len(cells), 3)]
    headings = [r[0].text for r in every if r[1].value is None and not r[1].text.strip()]
    assert headings == list(dict.fromkeys(group for group, _, _, _ in ROWS if group))
    rows = [r for r in every if r[0].text not in headings]
    assert [r[0].text.strip() for r in rows] == [label for _, label, _, _ in ROWS]
    for (_, label, _, unit), row in zip(ROWS, rows, strict=True):
        for cell in row[1:]:
            assert cell.value is not None, (label, cell)
            assert re.fullmatch(rf"[0-9.]+ ± [0-9.e-]+ {re.escape(unit)}", cell.text) or (
                unit == "%" and cell.text.endswith("%)")), (label, cell.text)
            assert printed_matches(cell), cell
    labels = [f"{group}: {label}" if group else label for group, label, _, _ in ROWS]
    xylo = {k: r[1].text for k, r in zip(labels, rows, strict=True)}
    arduino = {k: r[2] for k, r in zip(labels, rows, strict=True)}
    idle = arduino["idle power (mW, mean ± s.u.)"]
    assert idle.text == "79.400 ± 0.099 mW"  # the standard uncertainty: U95 / 2 here
    assert idle.uncertainty == pytest.approx(0.0794 / 400 / 2)
    assert xylo["execution time (ms, mean ± s.e.): inference"] == "0.4100 ± 0.0014 ms"
    # no budget stored: the 95 % figure stays, and the cell says why
    assert xylo["dynamic energy per inference (mJ, mean ± s.u.): inference"] == (
        "0.00001000 ± 0.00000020 mJ")
    html = (tmp_path / "report.html").read_text()
    assert "the run stored no uncertainty budget to give the standard one" in html  # a footnote
    assert not any(u in c.text for c in cells for u in ("µs", "µJ", "nJ", "µW"))


def test_one_system_description_is_printed_once_and_steps_are_numbered_once(store, tmp_path):
    proc = hilbench("report", "xylo-like", "arduino-like", "--db", store, "--out", tmp_path,
                    "--system", SYSTEM)
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = (tmp_path / "report.html").read_text()
    system = html[html.index('<h2 id="system">'):html.index('<h2 id="workflow">')]
    assert system.count('<dl class="system">') == 1
    assert "<h3>xylo-like, arduino-like</h3>" in system
    workflow = html[html.index('<h2 id="workflow">'):html.index('<h2 id="methodology">')]
    assert "<ol" not in workflow  # each line carries its own step number
    steps = re.findall(r"<li>(\d+)\. ", workflow)
    assert steps[:5] == ["1", "2", "3", "4", "5"]
    assert "untimed; untimed" not in workflow and "not timed" not in workflow.split("</p>", 1)[1]
    assert workflow.count("untimed") >= 3
    markdown = (tmp_path / "report.md").read_text()
    assert markdown.count("| organisation |") == 1
