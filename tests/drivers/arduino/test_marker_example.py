"""`hilbench run examples/asc-arduino-marker.toml` end to end on the simulated bench (windows cut
to 1.5 s, two test clips): the emulated board's marker pin and stage changes go over TCP to a
simulated JS220 with its own timebase (20 ppm fast) and GPI latency; each active window is cut
by the marker's edges in the instrument's own samples, with one sample period plus the stated
latency as its edge uncertainty, and the figures land on the power model's truth within their
stated uncertainty."""

from __future__ import annotations

from pathlib import Path

import pytest

from hilbench.sim.power_model import ARDUINO_NANO_33_BLE
from hilbench.store import Store
from tests.cassette.test_audit import _tamper
from tests.drivers.arduino.short_example import (
    assert_power_truth,
    exported_bundle,
    run_short_example,
)
from tests.subprocesses import hilbench, unit_runs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "asc-arduino-marker.toml"
STAGES = ("preprocessing", "inference")
RATE_HZ, LATENCY_S = 50_000, 1e-6  # the example's settings
# windows of 1.5 s: 75 000 samples each at 50 kHz (the 3 s the 3 Hz examples need, halved),
# and each single-stream window still holds hundreds of samples
WINDOW_S = 1.5
TRUTH = ARDUINO_NANO_33_BLE.state_watts


@pytest.fixture(scope="module")
def example_run(host_program: Path, tmp_path_factory: pytest.TempPathFactory):
    proc, db = run_short_example(EXAMPLE, host_program, tmp_path_factory, WINDOW_S)
    with Store(db) as store:
        run = next(r for r in unit_runs(store) if r["procedure"] == "asc.power")
        assert run["status"] == "success" and run["simulated"]
        metrics = {m["name"]: m for m in store.metrics(run["uid"])}
        phases = {p["uid"]: p["name"] for p in store.phases(run["uid"])}
        edges = [(phases[e["phase_uid"]], e["data"])
                 for e in store.events(run["uid"], "marker_edges")]
    return proc, metrics, edges, db


def test_active_windows_are_cut_by_the_marker_with_their_edge_uncertainty(example_run):
    _, metrics, _, _ = example_run
    edge_u = 1.0 / RATE_HZ + LATENCY_S
    for stage in STAGES:
        meta = metrics[f"active_power_w.{stage}"]["meta"]
        assert meta["alignment"] == "marker-cut", meta.get("alignment_reason")
        assert meta["edge_uncertainty_s"] == pytest.approx(edge_u, rel=1e-9)
        assert meta["marker_windows"] == 1
        components = {c["name"] for c in meta["estimate"]["budget"]["components"]}
        assert "marker edges" in components and "clock offset" not in components
    windows = {w["stage"]: w for w in metrics["idle_power_w"]["meta"]["windows"]}
    for stage in STAGES:
        w = windows[stage]
        assert w["alignment"] == "marker-cut" and w["marker_channel"] == "gpi0"
        assert w["edge_uncertainty_s"] == pytest.approx(edge_u, rel=1e-9)
        start, stop = w["marker_samples"]
        assert 0 < start < stop  # the acquisition began before the marker rose
        # the device repeated its stage for the window of its own clock: the cut holds that much
        assert w["marker_duration_s"] == pytest.approx(WINDOW_S, abs=0.05)
    # the idle window is the orchestrator's own, and says so (the software fallback)
    idle = metrics["idle_power_w"]["meta"]
    assert idle["alignment"] == "software" and "idle window" in idle["alignment_reason"]
    assert windows["idle"]["alignment"] == "software"


def test_the_marker_edges_are_stored_with_each_phase(example_run):
    """One rising and one falling edge per active phase, none in the idle phase, each inside
    the samples the instrument stored for that phase (what a replay cuts from)."""
    _, _, edges, _ = example_run
    by_phase = {name: data for name, data in edges}
    assert by_phase["idle"]["index"] == []
    for stage in STAGES:
        data = by_phase[f"active_{stage}"]
        assert data["instrument"] == "js220" and data["channel"] == "gpi0"
        assert data["level"] == [1, 0]
        assert 0 < data["index"][0] < data["index"][1] <= data["samples"]
        assert data["edge_uncertainty_s"] == pytest.approx(1.0 / RATE_HZ + LATENCY_S)


def test_figures_hold_the_simulation_truth_within_their_stated_uncertainty(example_run):
    assert_power_truth(example_run[1], TRUTH, STAGES)


@pytest.fixture(scope="module")
def bundle(example_run, tmp_path_factory):
    return exported_bundle("asc-arduino-marker", example_run[3],
                           tmp_path_factory.mktemp("audit-marker") / "bundle")


def test_audit_verify_recomputes_the_marker_cut_figures_from_the_stored_edges(bundle):
    done = hilbench("audit", "verify", bundle)
    assert done.returncode == 0, done.stdout
    assert "all agree" in done.stdout


@pytest.mark.parametrize(("change", "said"), [
    (lambda data: data.update(samples=data["samples"] - 7), "says {n} samples, the bundle holds"),
    (lambda data: data.update(index=[data["index"][0] + 50, data["index"][1]]),
     "the stored edges cut"),
    (lambda data: data.update(index=[], level=[]), "states 2 marker-cut window(s); the stored "
                                                   "edges of js220 give 1 phase(s)"),
])
def test_audit_verify_names_stored_edges_that_disagree_with_samples_or_figures(
        bundle, tmp_path, change, said):
    found = {}

    def edit(lines):
        event = next(d for d in lines if d["kind"] == "event" and d["name"] == "marker_edges"
                     and d["data"]["index"])
        change(event["data"])
        found.update(event["data"])

    done = hilbench("audit", "verify", _tamper(bundle, tmp_path, edit))
    assert done.returncode == 1, done.stdout
    assert said.format(n=found["samples"]) in done.stdout, done.stdout


def test_the_printed_table_and_the_report_say_marker_cut_with_the_edge_uncertainty(
        example_run, tmp_path):
    proc, _, _, db = example_run
    said = "active windows MARKER-CUT (preprocessing 1/1, inference 1/1)"
    edge = "edge uncertainty ± 21 µs per window (one sample period + the stated input latency)"
    printed = " ".join(proc.stdout.split())
    assert said in printed and edge in printed
    assert "idle window: software" in printed
    assert "readings from hilbench's simulated JS220" in printed  # not "the simulated meter"
    system = Path(__file__).resolve().parents[3] / "examples" / "system.toml"
    done = hilbench("report", "asc-arduino-marker", "--db", db, "--system", system,
                    "--out", tmp_path / "report")
    assert done.returncode == 0, done.stderr
    for name in ("report.md", "report.html"):
        text = " ".join((tmp_path / "report" / name).read_text().split())
        assert said in text and edge in text, name
