"""`hilbench report` on a known store: the files it writes, byte-identical figures from two runs,
every section NeuroBench asks for, simulated figures labelled, and a page that loads whole in a
real browser with every printed number equal to the stored one at the printed precision."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from hilbench.cli import cli
from hilbench.store import Store
from tests.report.page_check import open_page, parse, printed_matches
from tests.report.qubo_store import write_qubo_store
from tests.subprocesses import unit_runs

pytestmark = pytest.mark.slow  # two reports: ~5 s of CPU
pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")

EXAMPLE_SYSTEM = Path(__file__).resolve().parents[2] / "examples" / "system.toml"


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    tmp = tmp_path_factory.mktemp("report")
    db = tmp / "r.sqlite"
    write_qubo_store(db)
    outs = []
    for name in ("a", "b"):
        out = tmp / name
        result = CliRunner().invoke(cli, ["report", "qubo-test", "--db", str(db), "--out",
                                          str(out), "--system", str(EXAMPLE_SYSTEM)])
        assert result.exit_code == 0, result.output
        outs.append(out)
    return db, outs[0], outs[1]


def test_two_reports_of_one_store_give_byte_identical_figures(reports):
    _, a, b = reports
    files = sorted(p.name for p in (a / "figures").iterdir())
    expected = {"qubo-gap.png", "qubo-gap.svg", "qubo-power.png", "qubo-power.svg",
                "qubo-tts.png", "qubo-tts.svg"}
    assert expected <= set(files)
    assert any(f.startswith("trace-") for f in files)
    assert any(f.startswith("workflow-") for f in files)
    assert files == sorted(p.name for p in (b / "figures").iterdir())
    for name in files:
        assert (a / "figures" / name).read_bytes() == (b / "figures" / name).read_bytes(), name
    assert (a / "report.html").read_bytes() == (b / "report.html").read_bytes()


def test_figures_carry_no_date_or_software_stamp_and_label_their_axes(reports):
    _, a, _ = reports
    png = (a / "figures" / "qubo-gap.png").read_bytes()
    assert b"Software" not in png and b"tIME" not in png
    for svg in (a / "figures").glob("*.svg"):
        text = svg.read_text()
        assert "<dc:date>" not in text, svg.name
    labels = {
        "qubo-gap.svg": ("timeout (s)", "BKS-gap (%)"),
        "qubo-power.svg": ("timeout (s)", "average power (W), from 0"),
        "qubo-tts.svg": ("BKS-gap threshold (%)", "time to solution (s)",
                         "energy to solution (J)"),
    }
    for name, wanted in labels.items():
        text = (a / "figures" / name).read_text()
        for label in wanted:
            assert f"<!-- {label} -->" in text, (name, label)
        assert "SIMULATED" in text, name  # the store's runs used a simulated meter
    trace = next((a / "figures").glob("trace-*.svg")).read_text()
    assert "<!-- power (W), axis from 0 -->" in trace
    assert "<!-- time since run start (s) -->" in trace


def test_every_section_is_there(reports):
    db, a, _ = reports
    page = (a / "report.html").read_text()
    md = (a / "report.md").read_text()
    for heading in ("1. System under test", "2. Workflow", "3. Timing and power methodology",
                    "4. Results", "5. Provenance"):
        assert heading in page and heading in md
    for field in ("Available", "external analyzer tap", "Power domains omitted",
                  "x86-64 host CPU"):
        assert field in page
    assert 'id="simulated-banner"' in page and "SIMULATED" in md
    assert "host pre-processing" in page and "on-device pre-processing" in page
    assert "clock offsets" in page and "one reading every 1 ms" in page
    with Store(db) as store:
        runs = unit_runs(store)
    for run in runs:
        assert run["uid"] in page
    assert len((a / "runs.csv").read_text().splitlines()) == len(runs) + 1
    links = re.findall(r"\]\((figures/[^)]+)\)", md)
    assert len(links) >= 5
    for link in links:
        assert (a / link).is_file(), link


def test_the_page_loads_whole_in_chromium_and_prints_the_stored_numbers(reports):
    db, a, _ = reports
    loaded = open_page(a / "report.html")
    assert loaded.console == []  # no script error, nothing the page's CSP refused
    assert loaded.images_total >= 5 and loaded.images_loaded == loaded.images_total
    for title in ("QUBO BKS-gap against the fixed timeout",  # the paper's QUBO figures,
                  "QUBO average power against the fixed timeout"):  # loaded among them
        assert loaded.dom.count(f'alt="{title}"') == 1, title
    page = parse(loaded.dom)
    numbers = [c for c in page.cells if c.value is not None]
    assert numbers, "no number in any table"
    bad = [c for c in numbers if not printed_matches(c)]
    assert not bad, bad[:5]
    with Store(db) as store:
        stored = {m["value"] for m in store.metrics() if m["value"] is not None}
    # Single-run figures print a stored metric as it is (e.g. the worst gap of a group).
    assert stored & {c.value for c in numbers}


def test_a_bad_system_file_is_named_and_nothing_is_written(reports, tmp_path):
    db, _, _ = reports
    bad = tmp_path / "system.toml"
    bad.write_text('[system]\nname = "x"\navailability = "Soon"\n')
    out = tmp_path / "out"
    result = CliRunner().invoke(cli, ["report", "qubo-test", "--db", str(db), "--out",
                                      str(out), "--system", str(bad)])
    assert result.exit_code == 2
    assert str(bad) in result.output
    assert not out.exists()


def test_unknown_campaign_or_foreign_trace_run_is_refused(reports, tmp_path):
    db, _, _ = reports
    result = CliRunner().invoke(cli, ["report", "nosuch", "--db", str(db), "--out",
                                      str(tmp_path / "o")])
    assert result.exit_code == 2 and "nosuch" in result.output
    two = tmp_path / "two.sqlite"
    write_qubo_store(two, name="first")
    second = write_qubo_store(two, name="second")
    with Store(two) as store:
        run = store.runs(second)[0]["uid"]
    result = CliRunner().invoke(cli, ["report", "first", "--db", str(two), "--trace", run[:8],
                                      "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and "belongs to none of the campaigns" in result.output


def test_a_reported_file_that_cannot_be_read_is_named(reports, tmp_path):
    db, _, _ = reports
    bad = tmp_path / "reported.json"
    bad.write_text("not json")
    result = CliRunner().invoke(cli, ["report", "qubo-test", "--db", str(db), "--out",
                                      str(tmp_path / "o"), "--reported", str(bad)])
    assert result.exit_code == 2 and str(bad) in result.output
