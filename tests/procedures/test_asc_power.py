"""The ASC power procedure against the simulated bench: a meter that knows the true energy, a
real agent process reporting its state to it, the real Keysight driver over pyvisa-py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from hilbench.clock import OFFSET_ENV
from hilbench.orchestrator.campaign import load_campaign
from hilbench.orchestrator.runner import CampaignRunner
from hilbench.sim import SimulatedMeter
from hilbench.sim.power_model import SIMULATED_CPU
from hilbench.store import Store
from hilbench.workloads.asc.report.table import print_summary
from hilbench.workloads.asc.vectors import fixed_model
from tests.campaign_toml import agent, campaign, keysight, measured_agent, table
from tests.subprocesses import unit_runs

pytestmark = [pytest.mark.slow, pytest.mark.serial]
STAGES = ("preprocessing", "inference")
STAGE_TIME = {"preprocessing": "preprocess_time_s", "inference": "inference_time_s"}

def asc_power_campaign(
    data: Path, model: Path, window_s: float, meter: SimulatedMeter | None = None
) -> str:
    """One clip's single-stream and power runs on a spawned CPU agent; with ``meter``, the
    agent tells it its state and the Keysight driver reads it every 25 ms."""
    if meter is None:
        tables = [agent()]
    else:
        settings = {
            "range": 3.0,
            "nplc": 1.0,
            "line_frequency_hz": 50.0,
            "sample_interval_s": 0.025,
            "supply_voltage_v": SIMULATED_CPU.supply_v,
            "max_window_s": 60.0,
        }
        tables = [measured_agent(meter), keysight(meter.resource, instrument_id="dmm0",
                                                  settings=settings)]
    asc = table("[[asc]]", agent="cpu0", data=str(data), model=str(model), limit=1, power=True,
                idle_s=window_s, active_s=window_s)
    return campaign(*tables, asc, name="asc-power")


def run_campaign(tmp_path: Path, text: str) -> tuple[Path, str]:
    path = tmp_path / "c.toml"
    path.write_text(text)
    db = tmp_path / "r.sqlite"
    outcome = CampaignRunner(load_campaign(path), db).run()
    assert outcome.failed == 0 and outcome.completed == 2
    return db, outcome.campaign_uid


def power_metrics(db: Path) -> dict[str, dict]:
    with Store(db) as store:
        (run,) = [r for r in unit_runs(store) if r["procedure"] == "asc.power"]
        assert run["status"] == "success"
        return {m["name"]: m for m in store.metrics(run["uid"])}


def single_stream_metrics(db: Path) -> tuple[dict, dict[str, dict]]:
    with Store(db) as store:
        (run,) = [r for r in unit_runs(store) if r["procedure"] == "asc.single_stream"]
        return run, {m["name"]: m for m in store.metrics(run["uid"])}


@pytest.fixture
def model_path(tmp_path: Path) -> Path:
    # Power does not depend on what the model predicts: the fixed reference model will do.
    return fixed_model().save(tmp_path / "model.npz")


@pytest.mark.parametrize("agent_offset_s", [3.0, -3.0])
def test_dynamic_power_and_energy_match_the_simulated_truth(tmp_path, asc_cache, model_path,
                                                            monkeypatch, agent_offset_s):
    # The agent's clock is off by a known amount, as on another host: its loop start and end
    # must be mapped onto the orchestrator's timeline with the measured offset, the right way
    # round, or the active windows miss the device's work.
    monkeypatch.setenv(OFFSET_ENV, str(agent_offset_s))
    meter = SimulatedMeter(SIMULATED_CPU, noise_std_w=0.05)
    meter.start()
    try:
        db, _ = run_campaign(tmp_path, asc_power_campaign(
            asc_cache / "hilbench" / "asc-fixture-0", model_path, window_s=1.5, meter=meter
        ))
        metrics = power_metrics(db)
        single_run, single = single_stream_metrics(db)
        windows = metrics["idle_power_w"]["meta"]["windows"]

        def truth(stage: str) -> float:
            spans = [(w["start"], w["end"]) for w in windows if w["stage"] == stage]
            assert spans
            energy = sum(meter.true_energy(a, b) for a, b in spans)
            return energy / sum(b - a for a, b in spans)

        idle = truth("idle")
        assert idle == pytest.approx(SIMULATED_CPU.watts("idle"), rel=1e-3)
        for stage in STAGES:
            dyn = metrics[f"dynamic_power_w.{stage}"]
            true_dynamic = truth(stage) - idle
            assert true_dynamic > 10  # the device really worked in the window
            assert abs(dyn["value"] - true_dynamic) <= max(3 * dyn["uncertainty"], 1e-3)
            assert dyn["value"] == pytest.approx(true_dynamic, rel=0.01)
            energy = metrics[f"energy_per_inference_j.{stage}"]
            single_s = single[STAGE_TIME[stage]]["value"]
            assert energy["meta"]["execution_time_s"] == single_s
            assert energy["value"] == pytest.approx(true_dynamic * single_s, rel=0.01)
            assert energy["uncertainty"] > 0 and energy["meta"]["budget"]["components"]
        with Store(db) as store:
            (power_run,) = [r for r in unit_runs(store) if r["procedure"] == "asc.power"]
            offsets = [p["clock_offsets"]["cpu0"]["offset_s"] for p in store.phases(
                power_run["uid"])]
        assert offsets and all(o == pytest.approx(agent_offset_s, abs=0.01) for o in offsets)
        # The agent's device holds one sample at a time, like an Arduino: the procedures
        # loaded, ran and unloaded each sample in turn.
        assert single_run["agents"]["cpu0"]["capabilities"]["asc"]["sample_capacity"] == 1
        # A meter that answers *IDN? as hilbench's simulated one marks the runs simulated.
        assert power_run["simulated"] and "simulated 34465A" in power_run["simulation"]
        assert not single_run["simulated"]  # no instrument figure in the single-stream run
    finally:
        meter.stop()


def test_without_an_instrument_power_is_not_measured_and_says_why(tmp_path, asc_cache,
                                                                   model_path):
    db, campaign_uid = run_campaign(tmp_path, asc_power_campaign(
        asc_cache / "hilbench" / "asc-fixture-0", model_path, window_s=0.2
    ))
    metrics = power_metrics(db)
    for name in ("idle_power_w", "dynamic_power_w.inference", "energy_per_inference_j.inference"):
        assert metrics[name]["value"] is None
        assert metrics[name]["meta"]["reason"] == "no instrument measures agent cpu0"
    assert metrics["loop_time_s.inference"]["value"] > 0  # device timers still count
    console = Console(record=True, width=200)
    print_summary(db, campaign_uid, console, "asc-power")
    text = console.export_text()
    words = " ".join(text.split())  # footnotes wrap
    assert "n/m" in text and "not measured: no instrument measures agent cpu0" in words


def test_a_drifting_meter_is_restamped_and_its_figures_cover_the_truth(tmp_path, asc_cache,
                                                                       model_path):
    # The meter's timebase runs 2 % slow: at nominal stamps its last reading of a 1.5 s phase
    # is ~30 ms (more than an interval) late. The Keysight driver learns the real interval
    # from its own count at ABOR; the campaign restamps, stores what it did, and widens the
    # timing budget by what the estimate leaves open. (Each ASC window fills its phase's
    # acquisition, so here drift moves no reading across a power step; the bench's drift case,
    # with idle and active in one acquisition, is where it would bias the figure.)
    drift_ppm = 20_000.0
    nominal_s = 0.025
    meter = SimulatedMeter(SIMULATED_CPU, noise_std_w=0.05, drift_ppm=drift_ppm, seed=7)
    meter.start()
    try:
        db, _ = run_campaign(tmp_path, asc_power_campaign(
            asc_cache / "hilbench" / "asc-fixture-0", model_path, window_s=1.5, meter=meter
        ))
        metrics = power_metrics(db)
        windows = metrics["idle_power_w"]["meta"]["windows"]

        def true_power(stage: str) -> float:
            (w,) = [w for w in windows if w["stage"] == stage]
            return meter.true_mean_power(w["start"], w["end"])

        idle = true_power("idle")
        for stage in STAGES:
            dyn = metrics[f"dynamic_power_w.{stage}"]
            true_dynamic = true_power(stage) - idle
            assert true_dynamic > 10
            assert abs(dyn["value"] - true_dynamic) <= dyn["uncertainty"], (stage, dyn)
        # Every window says which estimate restamped its readings and what it leaves open.
        true_dt = nominal_s * (1 + drift_ppm * 1e-6)
        for w in windows:
            est = w["interval"]
            assert est["dt_nominal_s"] == nominal_s
            assert abs(est["dt_s"] - true_dt) <= est["half_width_s"], est
            assert est["drift_ppm"] == pytest.approx(drift_ppm, abs=10_000)
            assert 0 < w["drift_residual_s"] < nominal_s  # not the 40 ms walk
        timing = metrics["idle_power_w"]["meta"]["timing_uncertainty_per_window_s"]
        assert all(t >= w["drift_residual_s"] for t, w in zip(timing, windows, strict=True))

        with Store(db) as store:
            (run,) = [r for r in unit_runs(store) if r["procedure"] == "asc.power"]
            records = store.events(run["uid"], "instrument_interval")
            assert len(records) == len(windows)  # one per measured phase
            for record in records:
                data = record["data"]
                assert data["instrument"] == "dmm0" and data["restamped"]
                # The stored readings keep the meter's nominal stamps: the raw data ...
                t_raw, _ = store.samples(run["uid"], "dmm0", record["phase_uid"])
                assert len(t_raw) == data["readings"] == data["count"]
                assert np.diff(t_raw) == pytest.approx(nominal_s)
                # ... and the record turns them into the stamps the figures used.
                t_used = data["t0"] + np.rint((t_raw - data["t0"]) / nominal_s) * data["dt_s"]
                assert t_used[-1] - t_raw[-1] == pytest.approx(data["last_shift_s"])
                assert data["last_shift_s"] == pytest.approx(
                    drift_ppm * 1e-6 * (t_raw[-1] - data["t0"]), rel=0.5)
    finally:
        meter.stop()
