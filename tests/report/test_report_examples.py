"""The report of each shipped example campaign that runs here (qubo-cpu, asc-cpu, asc-arduino,
made small): it opens in headless Chromium with every image loaded and no error, every number
in its tables equals the stored metric at the printed precision, and the campaigns' ASC systems
side by side give the power and energy ratios from their stored figures."""

from __future__ import annotations

import re
import statistics
from pathlib import Path

import pytest

from hilbench.store import Store
from tests.campaign_toml import patient
from tests.report.page_check import TableCell, open_page, parse, printed_matches
from tests.subprocesses import hilbench_here, run_campaign

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]  # the store: three campaigns
pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _shortened(name: str, tmp: Path, edits: list[tuple[str, str]]) -> Path:
    text = patient((EXAMPLES / f"{name}.toml").read_text())
    for pattern, replacement in edits:
        text, n = re.subn(pattern, replacement, text, flags=re.M)
        assert n, f"examples/{name}.toml no longer has {pattern!r}"
    path = tmp / f"{name}.toml"
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store holding the three example campaigns, cut short."""
    pytest.importorskip("soundfile")
    from hilbench.workloads.asc.procedures.run import ensure_fixture
    from hilbench_drivers.arduino.emulator import host_build

    tmp = tmp_path_factory.mktemp("examples")
    cache = tmp / "xdg-cache"
    ensure_fixture(cache / "hilbench" / "asc-fixture-0", seed=0)
    db = tmp / "examples.sqlite"
    env = {"XDG_CACHE_HOME": str(cache), "HILBENCH_ARDUINO_HOST": str(host_build(build=True))}
    campaigns = (
        _shortened("qubo-cpu", tmp, [(r"^nodes = .*", "nodes = [10, 50]"),
                                     (r"^seeds = .*", "seeds = [0, 1]"),
                                     # 1 ms: no power figure (too short for the meter)
                                     (r"^timeouts_s = .*", "timeouts_s = [0.001, 0.01]")]),
        # 2 s: a single-stream power window needs 2 000 readings of its 2 kHz meter
        _shortened("asc-cpu", tmp, [(r"^(idle_s|active_s) = [0-9.]+", r"\1 = 2.0"),
                                    (r"^repetitions = 2", "repetitions = 1"),
                                    (r"^model = ", "limit = 4\nmodel = ")]),
        # 2 s: six readings of its 3 Hz meter a window (a mean needs two)
        _shortened("asc-arduino", tmp, [(r"^(idle_s|active_s) = [0-9.]+", r"\1 = 2.0"),
                                        (r"^limit = \d+", "limit = 2")]),
    )
    for campaign in campaigns:
        proc = run_campaign(campaign, db, extra_env=env)
        assert proc.returncode == 0, proc.stderr[-3000:]
    for name in ("asc-cpu", "asc-arduino"):  # the pages below print each of these figures
        assert _unmeasured(db, name) == {}, f"{name}: units or figures without a value"
    return db


def _unmeasured(db: Path, campaign: str) -> dict[str, str]:
    """The campaign's units that ended without a successful run, and the power and energy
    figures its runs stored without a value, each with its stored reason."""
    with Store(db) as store:
        uid, _ = store.resolve_campaign(campaign)
        runs = store.runs(uid)
        ended = {r["unit_key"]: r for r in runs}  # in run order: each unit's last attempt
        missing = {key: f"{r['status']}: {r['reason']}" for key, r in ended.items()
                   if r["status"] != "success"}
        return missing | {m["name"]: str((m.get("meta") or {}).get("reason"))
                          for run in runs for m in store.metrics(run["uid"])
                          if m["value"] is None
                          and m["name"].startswith(("dynamic_power", "energy"))}


def _report(*args: str | Path) -> None:
    """``hilbench report ARGS`` in this process (the report is under test, not the process)."""
    done = hilbench_here("report", *args)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]


@pytest.fixture(scope="module")
def reports(store: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = {}
    for name in ("qubo-cpu", "asc-cpu", "asc-arduino"):
        folder = tmp_path_factory.mktemp(f"report-{name}")
        _report(name, "--db", store, "--out", folder, "--system", EXAMPLES / "system.toml")
        out[name] = folder / "report.html"
    return out


def _stored(db: Path, campaign: str) -> tuple[set[float], dict[str, list[float]]]:
    """Every stored metric value of the campaign's successful runs, and each metric's values
    by name (in run order)."""
    values: set[float] = set()
    by_name: dict[str, list[float]] = {}
    for _, metrics in _runs(db, campaign):
        for name, value in metrics.items():
            values.add(value)
            by_name.setdefault(name, []).append(value)
    return values, by_name


def _runs(db: Path, campaign: str) -> list[tuple[dict, dict[str, float]]]:
    with Store(db) as store:
        uid, _ = store.resolve_campaign(campaign)
        return [(run["params"], {m["name"]: m["value"] for m in store.metrics(run["uid"])
                                 if m["value"] is not None})
                for run in store.runs(uid) if run["status"] == "success"]


def _check_page(html: Path) -> list[TableCell]:
    loaded = open_page(html)
    assert loaded.console == [], loaded.console
    assert loaded.images_total >= 2 and loaded.images_loaded == loaded.images_total
    page = parse(loaded.dom)
    numbers = [c for c in page.cells if c.value is not None]
    assert numbers
    bad = [c for c in numbers if not printed_matches(c)]
    assert not bad, bad[:5]
    return numbers


@pytest.mark.parametrize("campaign", ["asc-cpu", "asc-arduino"])
def test_asc_report_prints_each_stored_figure(reports, store, campaign):
    """One run per figure here: every number in the ASC table is a stored metric as it is."""
    numbers = _check_page(reports[campaign])
    values, _ = _stored(store, campaign)
    asc = [c for c in numbers if c.table.startswith("asc")]
    assert asc, "no ASC table in the report"
    assert [c for c in asc if c.value not in values] == []
    assert "SIMULATED" in reports[campaign].read_text()


def test_qubo_report_prints_means_of_the_stored_figures(reports, store):
    numbers = _check_page(reports["qubo-cpu"])
    values, _ = _stored(store, "qubo-cpu")
    qubo = [c for c in numbers if c.table.startswith("qubo")]
    assert qubo
    # Each QUBO figure is a stored value or the mean of a stored metric over the seeds of one
    # size, density, timeout and solver (over feasible answers for gaps).
    groups: dict[tuple, dict[str, list[float]]] = {}
    for params, metrics in _runs(store, "qubo-cpu"):
        key = (params["nodes"], params["density"], params["timeout_s"], params["solver"])
        for name, value in metrics.items():
            groups.setdefault(key, {}).setdefault(name, []).append(value)
    means = {statistics.fmean(vs) for group in groups.values() for vs in group.values()}
    allowed = values | means
    unexplained = [c for c in qubo if c.column.startswith(("gap", "actual", "power", "energy"))
                   and not any(abs(c.value - v) <= 1e-12 * max(1.0, abs(v)) for v in allowed)]
    assert unexplained == [], unexplained[:5]


def test_asc_systems_side_by_side_with_ratios_from_the_stored_figures(store, tmp_path):
    _report("asc-arduino", "asc-cpu", "--db", store, "--out", tmp_path,
            "--reference", "asc-arduino")
    loaded = open_page(tmp_path / "report.html")
    assert loaded.console == [], loaded.console
    assert loaded.images_loaded == loaded.images_total
    page = parse(loaded.dom)
    _, arduino = _stored(store, "asc-arduino")
    _, cpu = _stored(store, "asc-cpu")
    ratios = [c for c in page.cells if c.table == "asc.ratios" and c.value is not None]
    assert len(ratios) == 4  # dynamic power and energy, two stages, against the reference
    name = "dynamic_power_w.inference"
    expected = arduino[name][0] / cpu[name][0]  # the CPU's one-sample power run comes first
    assert any(abs(c.value - expected) <= 1e-9 * expected for c in ratios), (ratios, expected)
    assert (tmp_path / "figures" / "asc-table6.png").is_file()
