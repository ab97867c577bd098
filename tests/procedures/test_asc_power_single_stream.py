"""``power_method = "single_stream"``: the active window runs the single-stream pipeline over
the test samples and each stage's power is attributed from the readings by when it ran. Against
the simulated bench: a real agent process that tells the meter its stages, the real Keysight
driver over pyvisa-py reading at 2 kHz; then every stored figure recomputed by an audit."""

from __future__ import annotations

from pathlib import Path

import pytest

from hilbench.orchestrator.campaign import load_campaign
from hilbench.orchestrator.runner import CampaignRunner
from hilbench.sim import SimulatedMeter
from hilbench.sim.power_model import SIMULATED_CPU
from hilbench.store import Store
from hilbench.workloads.asc.procedures.table import AscSpec
from hilbench.workloads.asc.vectors import fixed_model
from tests.campaign_toml import campaign, keysight, measured_agent, table
from tests.subprocesses import hilbench, unit_runs

STAGES = ("preprocessing", "inference")
STAGE_TIME = {"preprocessing": "preprocess_time_s", "inference": "inference_time_s"}


def test_the_default_method_keeps_the_keys_of_tables_written_before_it():
    base = {"agent": "cpu0", "fixture": True, "power": True}
    assert AscSpec(**base).digest == AscSpec(**base, power_method="repeat").digest
    assert AscSpec(**base).digest != AscSpec(**base, power_method="single_stream").digest


def test_streams_are_refused_with_the_single_stream_method_saying_why():
    with pytest.raises(ValueError, match="stream_s = \\[5\\] applies to power_method"):
        AscSpec(agent="cpu0", fixture=True, power=True, power_method="single_stream",
                stream_s=[5])


@pytest.mark.serial
@pytest.mark.slow
def test_stage_power_in_single_stream_windows_matches_the_simulated_truth(tmp_path, asc_cache):
    model = fixed_model().save(tmp_path / "model.npz")
    settings = {"range": 3.0, "nplc": 0.02, "line_frequency_hz": 50.0,
                "sample_interval_s": 0.0005, "supply_voltage_v": SIMULATED_CPU.supply_v,
                "max_window_s": 60.0}
    with SimulatedMeter(SIMULATED_CPU, noise_std_w=0.05, seed=5) as meter:
        text = campaign(
            measured_agent(meter),
            keysight(meter.resource, instrument_id="dmm0", settings=settings),
            table("[[asc]]", agent="cpu0", data=str(asc_cache / "hilbench" / "asc-fixture-0"),
                  model=str(model), limit=1, power=True, power_method="single_stream",
                  idle_s=1.0, active_s=1.5, repetitions=2),
            name="asc-single-stream-power",
        )
        path = tmp_path / "c.toml"
        path.write_text(text)
        db = tmp_path / "r.sqlite"
        outcome = CampaignRunner(load_campaign(path), db).run()
        assert outcome.failed == 0 and outcome.completed == 2
        # every reading came from a timeline the device had told in time
        assert meter.late_readings == 0
    with Store(db) as store:
        runs = {r["procedure"]: r for r in unit_runs(store)}
        metrics = {m["name"]: m for m in store.metrics(runs["asc.power"]["uid"])}
        single = {m["name"]: m for m in store.metrics(runs["asc.single_stream"]["uid"])}
        windows = store.events(runs["asc.power"]["uid"], "pipeline_window")
    assert len(windows) == 2
    # The windows ran the test split's ten samples again and again, one after the other
    # (how many times depends on the machine's speed: ~1 000 here, 970 on a slower CI host).
    for event in windows:
        samples = event["data"]["samples"]
        assert set(samples["index"]) == set(range(10)) and len(samples["index"]) > 200
        assert all(b >= a for a, b in zip(samples["t_end"], samples["t_start"][1:],
                                          strict=False))
    idle = metrics["idle_power_w"]
    assert idle["value"] is not None, idle["meta"].get("reason")  # why not: stored with it
    assert abs(idle["value"] - SIMULATED_CPU.watts("idle")) <= idle["uncertainty"]
    for stage in STAGES:
        active = metrics[f"active_power_w.{stage}"]
        truth = SIMULATED_CPU.watts(stage)
        assert abs(active["value"] - truth) <= max(active["uncertainty"], 1e-3), stage
        assert active["uncertainty"] < 0.05 * truth  # separated, not merely bounded
        loop = metrics[f"loop_time_s.{stage}"]
        assert loop["meta"]["samples"] > 400
        energy = metrics[f"energy_per_inference_j.{stage}"]
        single_s = single[STAGE_TIME[stage]]["value"]
        assert energy["meta"]["execution_time_s"] == single_s
        dynamic = metrics[f"dynamic_power_w.{stage}"]["value"]
        assert energy["value"] == pytest.approx(dynamic * single_s, rel=1e-9)
    found = metrics["idle_power_w"]["meta"]["attribution"]
    assert len(found) == 2 and all(abs(a["shift_s"]) <= a["max_shift_s"] for a in found)
    # Every figure comes back from the stored readings and stage times alone.
    bundle = tmp_path / "bundle"
    done = hilbench("audit", "export", "asc-single-stream-power", "--db", db, "--out", bundle)
    assert done.returncode == 0, done.stderr
    verified = hilbench("audit", "verify", bundle)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "every hash agrees" in verified.stdout


def test_the_report_names_the_method(tmp_path: Path):
    from hilbench.workloads.asc.report.table import _attribution_parts, _stream_label

    assert _stream_label(1, "single_stream") == "single stream over the test samples"
    assert _stream_label(1) == "one sample repeated"
    text = " ".join(_attribution_parts([{"shift_s": -5e-5, "shift_std_error_s": 2e-6,
                                         "max_shift_s": 7e-4}]))
    assert "-50 ± 2 µs (of ± 700)" in text
    fine = " ".join(_attribution_parts([{"shift_s": -4.3e-5, "shift_std_error_s": 4.8e-8,
                                         "max_shift_s": 6.8e-4}]))
    assert "-43 ± 0.048 µs (of ± 680)" in fine  # a sub-µs error is not printed as 0
