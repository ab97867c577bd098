"""`hilbench run examples/asc-xylo-marker.toml` end to end, shortened (1 s windows, one test
clip): the xylo agent (Xylo environment, XyloSim) raises a host GPIO line — a fake sysfs tree
under HILBENCH_GPIO_ROOT — around each timed region and declares it; its edges reach the
simulated JS220's GPI 0 through the device link; the active window is cut by them with one
sample period + the JS220's stated GPI latency + the agent's stated line latency as its edge
uncertainty, and the figures hold the xylo-audio-2 model's truth within their uncertainty."""

from __future__ import annotations

import pytest

from hilbench.sim.xylo_power import XYLO_AUDIO_2
from hilbench.store import Store
from tests.agent.test_marker_gpio import fake_sysfs
from tests.drivers.arduino.short_example import assert_power_truth, exported_bundle
from tests.drivers.xylo.conftest import REPO, shortened_example
from tests.subprocesses import hilbench, run_campaign, unit_runs

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

EXAMPLE = REPO / "examples" / "asc-xylo-marker.toml"
RATE_HZ, GPI_LATENCY_S, LINE_LATENCY_S = 20_000, 1e-6, 20e-6  # the example's settings
EDGE_S = 1.0 / RATE_HZ + GPI_LATENCY_S + LINE_LATENCY_S
TRUTH = XYLO_AUDIO_2.state_watts


def _run(xylo_python, tmp_path_factory, gpio_root, cache):
    short = shortened_example(EXAMPLE.name, xylo_python, tables=1)
    short = short.replace('model = "../drivers/xylo/data/', f'model = "{REPO}/drivers/xylo/data/')
    tmp = tmp_path_factory.mktemp("xylo-marker")
    campaign = tmp / EXAMPLE.name
    campaign.write_text(short)
    db = tmp / "r.sqlite"
    proc = run_campaign(campaign, db, timeout=400, extra_env={
        "XDG_CACHE_HOME": str(cache), "COLUMNS": "200", "HILBENCH_GPIO_ROOT": str(gpio_root)})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with Store(db) as store:
        run = next(r for r in unit_runs(store) if r["procedure"] == "asc.power")
        assert run["status"] == "success" and run["simulated"]
        metrics = {m["name"]: m for m in store.metrics(run["uid"])}
    return proc, run, metrics, db


@pytest.fixture(scope="module")
def example_run(xylo_python, tmp_path_factory, asc_cache):
    root = tmp_path_factory.mktemp("gpio")
    fake_sysfs(root, 17)
    return _run(xylo_python, tmp_path_factory, root, asc_cache)


def test_the_agent_declares_its_host_gpio_marker(example_run):
    _, run, _, _ = example_run
    marker = run["agents"]["xylo0"]["capabilities"]["marker"]
    assert marker["source"] == "host GPIO" and marker["interface"] == "sysfs"
    assert marker["line"].endswith("sys/class/gpio/gpio17/value")
    assert marker["latency_s"] == LINE_LATENCY_S


def test_the_active_window_is_marker_cut_and_holds_the_truth(example_run):
    _, _, metrics, _ = example_run
    meta = metrics["active_power_w.inference"]["meta"]
    assert meta["alignment"] == "marker-cut", meta.get("alignment_reason")
    assert meta["edge_uncertainty_s"] == pytest.approx(EDGE_S, rel=1e-9)
    components = {c["name"] for c in meta["estimate"]["budget"]["components"]}
    assert "marker edges" in components and "clock offset" not in components
    window = next(w for w in meta["windows"] if w["stage"] == "inference")
    assert window["device_marker_latency_s"] == LINE_LATENCY_S
    assert window["marker_duration_s"] == pytest.approx(1.0, abs=0.1)
    assert_power_truth(metrics, TRUTH, ("inference",))


def test_the_printed_table_says_marker_cut_with_the_edge_uncertainty(example_run):
    proc, _, _, _ = example_run
    printed = " ".join(proc.stdout.split())
    assert "active windows MARKER-CUT (inference 1/1)" in printed
    assert (f"edge uncertainty ± {1e6 * EDGE_S:.3g} µs per window (one sample period + the "
            "stated input latency + the device's stated marker latency, 20 µs)") in printed


def test_audit_verify_recomputes_the_marker_cut_figures(example_run, tmp_path):
    out = exported_bundle("asc-xylo-marker", example_run[3], tmp_path / "bundle")
    done = hilbench("audit", "verify", out)
    assert done.returncode == 0, done.stdout
    assert "all agree" in done.stdout


def test_a_line_that_does_not_open_leaves_software_windows_saying_so(xylo_python,
                                                                    tmp_path_factory, asc_cache):
    empty = tmp_path_factory.mktemp("no-gpio")  # no sys/class/gpio under it
    _, run, metrics, _ = _run(xylo_python, tmp_path_factory, empty, asc_cache)
    capabilities = run["agents"]["xylo0"]["capabilities"]
    assert "marker" not in capabilities
    assert "marker line gpio17 did not open" in capabilities["detail"]["marker"]
    meta = metrics["active_power_w.inference"]["meta"]
    assert meta["alignment"] == "software"
    assert "declares no marker" in meta["alignment_reason"]
    active = metrics["active_power_w.inference"]
    assert abs(active["value"] - TRUTH["inference"]) <= active["uncertainty"]
