"""``power_method = "single_stream"`` with the emulated Arduino's marker in a simulated JS220's
stream (issue 35): each sample's stages are placed by its own marked region in the instrument's
samples, not by the board's reply arrival through the clock offset. The example
``asc-arduino-marker.toml`` run with the single-stream method (1.5 s windows, two test clips)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hilbench.cassette.bundle import DATA
from hilbench.cassette.runs import Recording
from hilbench.confined_read import ConfinedFolder
from hilbench.store import Store
from hilbench.workloads.asc.procedures.reanalysis import reanalyse
from tests.cassette.test_audit import _tamper
from tests.drivers.arduino.short_example import (
    assert_power_truth,
    exported_bundle,
    run_short_example,
)
from tests.drivers.arduino.test_marker_example import (  # the same example's settings
    EXAMPLE,
    LATENCY_S,
    RATE_HZ,
    STAGES,
    TRUTH,
    WINDOW_S,
)
from tests.subprocesses import hilbench, unit_runs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

EDGE_S = 1.0 / RATE_HZ + LATENCY_S


@pytest.fixture(scope="module")
def example_run(host_program: Path, tmp_path_factory: pytest.TempPathFactory):
    text = EXAMPLE.read_text().replace("power = true",
                                       'power = true\npower_method = "single_stream"')
    assert 'power_method = "single_stream"' in text, "the example changed shape"
    variant = tmp_path_factory.mktemp("single-stream") / EXAMPLE.name
    variant.write_text(text)
    proc, db = run_short_example(variant, host_program, tmp_path_factory, WINDOW_S)
    with Store(db) as store:
        run = next(r for r in unit_runs(store) if r["procedure"] == "asc.power")
        assert run["status"] == "success" and run["simulated"]
        metrics = {m["name"]: m for m in store.metrics(run["uid"])}
        windows = store.events(run["uid"], "pipeline_window")
    unmeasured = {name: (m.get("meta") or {}).get("reason") for name, m in metrics.items()
                  if m["value"] is None and "power" in name}
    assert not unmeasured, f"power figures without a value: {unmeasured}"
    return proc, metrics, windows, db


def test_each_sample_is_placed_by_its_own_marked_region(example_run):
    _, metrics, windows, _ = example_run
    (event,) = windows
    ran = len(event["data"]["samples"]["index"])
    assert event["data"]["device_marks"] is True
    stated = {w["stage"]: w for w in metrics["idle_power_w"]["meta"]["windows"]}
    window = stated["single_stream"]
    assert window["alignment"] == "marker-cut", window.get("alignment_reason")
    assert window["marker_regions"] == ran > 20  # every sample the device ran, none missed
    assert window["edge_uncertainty_s"] == pytest.approx(EDGE_S, rel=1e-9)
    for stage in STAGES:
        meta = metrics[f"active_power_w.{stage}"]["meta"]
        assert meta["alignment"] == "marker-cut" and meta["marker_windows"] == 1
        components = {c["name"]: c for c in meta["estimate"]["budget"]["components"]}
        assert "clock offset" not in components
        edges = components["marker edges"]
        # the stated latency, common to every edge; each edge's sampling phase is statistical
        assert edges["scale"] == pytest.approx(LATENCY_S / 2, rel=1e-9)
        assert edges["standard_uncertainty"] > 0
    assert metrics["idle_power_w"]["meta"]["alignment"] == "software"


def test_figures_hold_the_simulation_truth_within_their_stated_uncertainty(example_run):
    _, metrics, _, _ = example_run
    assert_power_truth(metrics, TRUTH, STAGES)
    for stage in STAGES:  # separated, not merely bounded: the stages' powers differ by 0.6 mW
        dynamic = metrics[f"dynamic_power_w.{stage}"]
        assert dynamic["uncertainty"] < 0.5 * (TRUTH[stage] - TRUTH["idle"]), stage


@pytest.fixture(scope="module")
def bundle(example_run, tmp_path_factory):
    return exported_bundle("asc-arduino-marker", example_run[3],
                           tmp_path_factory.mktemp("audit-marker-ss") / "bundle")


def test_software_alignment_of_the_same_run_is_less_certain_or_refused(example_run, bundle):
    """The same stored run re-analysed as if the device declared no marker: the board's stages
    are then placed by its replies' arrival through the clock offset, which jitters by more
    than an inference lasts; the attribution either refuses (saying why) or states a wider
    uncertainty than the marker-cut figure."""
    _, metrics, _, _ = example_run
    recording = Recording(ConfinedFolder(bundle).sub(DATA))
    run = next(r for r in recording.runs.values() if r.run.get("procedure") == "asc.power")
    for event in run.events:
        if event["name"] == "pipeline_window":
            event["data"]["device_marks"] = False
    software = reanalyse(recording, run)
    for stage in STAGES:
        name = f"active_power_w.{stage}"
        marked, other = metrics[name], software[name]
        if other.value is None:  # refused: the reason names the alignment that failed
            assert "js220" in other.meta["reason"], other.meta["reason"]
            assert "align" in other.meta["reason"], other.meta["reason"]
        else:
            assert other.meta["alignment"] == "software"
            assert other.uncertainty is not None
            assert marked["uncertainty"] < other.uncertainty, stage


def test_audit_verify_recomputes_the_marker_cut_single_stream_figures(bundle):
    done = hilbench("audit", "verify", bundle)
    assert done.returncode == 0, done.stdout
    assert "all agree" in done.stdout


def test_audit_verify_names_a_window_whose_edges_lost_a_region(bundle, tmp_path):
    def edit(lines):
        event = next(d for d in lines if d["kind"] == "event" and d["name"] == "marker_edges"
                     and d["data"]["index"])
        event["data"].update(index=event["data"]["index"][2:], level=event["data"]["level"][2:])

    done = hilbench("audit", "verify", _tamper(bundle, tmp_path, edit))
    assert done.returncode == 1, done.stdout
    assert "single-stream window 0 states" in done.stdout, done.stdout


def test_the_printed_table_says_marker_cut_per_sample(example_run):
    proc, _, windows, _ = example_run
    ran = len(windows[0]["data"]["samples"]["index"])
    printed = " ".join(proc.stdout.split())
    assert (f"active windows MARKER-CUT (single-stream 1/1; {ran} samples each placed by its "
            "own marked region)") in printed
    assert "edge uncertainty ± 21 µs" in printed
    assert "fitted shift per window" not in printed
