"""The cpu driver's ASC device: model and samples in memory, single-stream and repeat runs."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from hilbench.agent.driver import DriverError
from hilbench.sim import SimulatedMeter
from hilbench.sim.power_model import SIMULATED_CPU
from hilbench.workloads.asc.features import extract_features
from hilbench.workloads.asc.vectors import fixed_model
from hilbench.workloads.qubo import generate_qubo
from hilbench_drivers.cpu import CpuDriver

MODEL = fixed_model()
RATE = MODEL.mfe_config.sample_rate


def audio(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.arange(RATE) / RATE
    tones = np.sin(2 * np.pi * rng.uniform(100, 3000, (n, 1)) * t)
    return (0.3 * tones + 0.05 * rng.standard_normal((n, RATE))).astype(np.float32)


def model_load(driver: CpuDriver) -> dict:
    arrays = MODEL.arrays()
    names = sorted(arrays)
    return driver.load(
        {"workload": "asc", "part": "model", "meta": MODEL.metadata(), "arrays": names},
        [arrays[n] for n in names],
    ).body


def sample_load(driver: CpuDriver, index: int, audio_1s: np.ndarray) -> dict:
    return driver.load({"workload": "asc", "part": "sample", "index": index}, [audio_1s]).body


def unload(driver: CpuDriver, index: int) -> dict:
    return driver.load({"workload": "asc", "part": "unload", "index": index}, []).body


@pytest.fixture
def driver(tmp_path) -> CpuDriver:
    d = CpuDriver(rapl_root=str(tmp_path / "no-powercap"))
    yield d
    d.close()


def loaded(driver: CpuDriver, one: np.ndarray, index: int = 0) -> CpuDriver:
    """Model and one sample (the device's whole capacity) in memory."""
    model_load(driver)
    sample_load(driver, index, one)
    return driver


def run(driver: CpuDriver, **body) -> dict:
    return driver.run({"workload": "asc", **body}, threading.Event()).body


def test_single_stream_predicts_what_the_model_predicts_on_each_sample(driver):
    slices = audio(6)
    model_load(driver)
    for i in range(len(slices)):
        assert sample_load(driver, i, slices[i]) == {"index": i, "held": [i], "capacity": 1}
        result = run(driver, mode="single_stream", index=i)
        scores, expected = MODEL.infer(extract_features(slices[i], MODEL.mfe_config))
        assert result["index"] == i
        assert result["predicted"] == expected
        assert result["scores"] == scores.tolist()
        assert result["preprocess_s"] > 0 and result["inference_s"] > 0
        timed = result["preprocess_s"] + result["inference_s"]
        assert result["t_end"] - result["t_start"] >= timed
        assert unload(driver, i) == {"index": i, "held": []}


def test_the_stage_times_belong_to_their_stage(tmp_path):
    """Pre-processing (MFE on 16 000 values) and inference are timed where they happen: a
    device made slow in one stage reports the extra time in that stage only."""
    import time

    import hilbench_drivers.cpu.asc as asc_module

    d = CpuDriver(rapl_root=str(tmp_path / "none"))
    slow_features = asc_module.extract_features

    def slower(*args, **kwargs):
        time.sleep(0.02)
        return slow_features(*args, **kwargs)

    try:
        loaded(d, audio(1)[0])
        asc_module.extract_features = slower
        result = run(d, mode="single_stream", index=0)
    finally:
        asc_module.extract_features = slow_features
        d.close()
    assert result["preprocess_s"] >= 0.02
    assert result["inference_s"] < 0.02


def test_a_second_sample_is_refused_while_one_is_held(driver):
    one, two = audio(2)
    loaded(driver, one, index=0)
    with pytest.raises(DriverError, match="holds 1 sample") as exc:
        sample_load(driver, 1, two)
    assert exc.value.code == "device_full"
    assert sample_load(driver, 0, two)["held"] == [0]  # the same index is replaced
    unload(driver, 0)
    assert sample_load(driver, 1, two)["held"] == [1]
    assert driver.capabilities()["asc"]["sample_capacity"] == 1


def test_a_larger_device_memory_holds_several_samples(tmp_path):
    d = CpuDriver(rapl_root=str(tmp_path / "none"), asc_sample_capacity="3")
    try:
        model_load(d)
        for i, one in enumerate(audio(3)):
            sample_load(d, i, one)
        with pytest.raises(DriverError) as exc:
            sample_load(d, 3, audio(1)[0])
        assert exc.value.code == "device_full"
    finally:
        d.close()


def test_samples_must_fit_the_model(driver):
    model_load(driver)
    one = audio(1)[0]
    with pytest.raises(DriverError, match="the model takes 99") as exc:
        sample_load(driver, 0, one[: RATE // 2].copy())
    assert exc.value.code == "bad_arguments"
    with pytest.raises(DriverError, match="float32"):
        sample_load(driver, 0, one.astype(np.float64))
    with pytest.raises(DriverError, match="1-D"):
        sample_load(driver, 0, audio(2))
    with pytest.raises(DriverError, match="index"):
        sample_load(driver, -1, one)


def test_running_before_anything_is_loaded_is_refused(driver):
    with pytest.raises(DriverError, match="no asc model loaded") as exc:
        sample_load(driver, 0, audio(1)[0])
    assert exc.value.code == "not_loaded"
    model_load(driver)
    with pytest.raises(DriverError, match="sample 0 is not in device memory") as exc:
        run(driver, mode="single_stream", index=0)
    assert exc.value.code == "not_loaded"
    with pytest.raises(DriverError, match="not in device memory") as exc:
        unload(driver, 0)
    assert exc.value.code == "not_loaded"


def test_a_model_with_missing_arrays_is_refused(driver):
    arrays = MODEL.arrays()
    names = sorted(arrays)[1:]
    with pytest.raises(DriverError, match="asc model rejected"):
        driver.load(
            {"workload": "asc", "part": "model", "meta": MODEL.metadata(), "arrays": names},
            [arrays[n] for n in names],
        )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"mode": "single_stream", "index": True}, "index"),
        ({"mode": "repeat", "stage": "classification", "duration_s": 0.01, "index": 0}, "stage"),
        ({"mode": "repeat", "stage": "inference", "duration_s": 0, "index": 0}, "duration_s"),
        ({"mode": "stream", "stage": "classification", "duration_s": 0.01}, "stage"),
        ({"mode": "batch"}, "'mode'"),
        ({"mode": "repeat", "stage": "inference", "duration_s": float("nan"), "index": 0},
         "duration_s"),
        ({"mode": "single_stream", "index": 0, "extra": 1}, "extra"),
    ],
)
def test_bad_run_arguments_are_refused_with_the_reason(driver, body, message):
    loaded(driver, audio(1)[0])
    with pytest.raises(DriverError, match=message) as exc:
        run(driver, **body)
    assert exc.value.code == "bad_arguments"


@pytest.mark.parametrize("stage", ["preprocessing", "inference"])
def test_repeat_keeps_the_device_busy_for_the_requested_time(driver, stage):
    loaded(driver, audio(1)[0], index=7)
    result = run(driver, mode="repeat", stage=stage, duration_s=0.05, index=7)
    assert result["stage"] == stage and result["index"] == 7
    assert result["t_end"] - result["t_start"] >= 0.05  # on the device's own clock
    assert result["mean_s"] * result["iterations"] <= result["t_end"] - result["t_start"]
    assert result["std_error_s"] >= 0
    assert result["power"]["measured"] is False  # no RAPL here: said so, no number


def test_idle_repeat_waits_without_work(driver):
    loaded(driver, audio(1)[0])
    result = run(driver, mode="repeat", stage="idle", duration_s=0.05)
    assert result["iterations"] == 0 and result["mean_s"] is None
    assert result["t_end"] - result["t_start"] >= 0.05


def test_a_stream_plays_consecutive_samples_one_at_a_time(driver, monkeypatch):
    model_load(driver)
    slices = audio(3)
    reply = driver.load({"workload": "asc", "part": "stream", "indices": [4, 5, 6]},
                        [slices]).body
    assert reply == {"stream_samples": 3, "indices": [4, 5, 6]}
    # Watch what the model is given: one sample's features per call, in stream order.
    seen: list[int] = []
    features = [extract_features(a, MODEL.mfe_config) for a in slices]
    cls = type(driver._asc.model)
    infer = cls.infer

    def spy(self, x):
        assert x.ndim == 2, "a batch reached the model"
        seen.append(next(i for i, f in enumerate(features) if np.array_equal(f, x)))
        return infer(self, x)

    monkeypatch.setattr(cls, "infer", spy)
    result = run(driver, mode="stream", stage="inference", duration_s=0.05)
    assert result["stream_samples"] == 3 and result["iterations"] == len(seen) >= 3
    assert seen == [i % 3 for i in range(len(seen))]
    assert result["mean_s"] * result["iterations"] <= result["t_end"] - result["t_start"]
    small = CpuDriver(rapl_root="/nonexistent", asc_stream_capacity=2)
    try:
        model_load(small)
        with pytest.raises(DriverError, match="at most 2") as exc:
            small.load({"workload": "asc", "part": "stream", "indices": [0, 1, 2]}, [slices])
        assert exc.value.code == "device_full"
    finally:
        small.close()


def test_repeat_ends_early_when_asked_to_stop(driver):
    loaded(driver, audio(1)[0])
    stop = threading.Event()
    stop.set()
    body = {"workload": "asc", "mode": "repeat", "stage": "inference", "duration_s": 30.0,
            "index": 0}
    result = driver.run(body, stop).body
    assert result["iterations"] == 1 and result["stopped_early"]


def test_the_simulated_meter_sees_the_stage_the_device_repeats(tmp_path):
    meter = SimulatedMeter(SIMULATED_CPU)
    meter.start()
    driver = CpuDriver(rapl_root=str(tmp_path / "none"), sim_meter=f"{meter.host}:{meter.port}")
    try:
        loaded(driver, audio(1)[0])
        for stage in ("preprocessing", "inference"):
            result = run(driver, mode="repeat", stage=stage, duration_s=0.1, index=0)
            # The meter stamps a state on arrival, a little after the device sent it.
            truth = meter.true_mean_power(result["t_start"] + 0.01, result["t_end"])
            assert truth == pytest.approx(SIMULATED_CPU.watts(stage), rel=1e-3)
    finally:
        driver.close()
        meter.stop()


def test_the_simulated_meter_learns_a_single_stream_samples_stages_with_their_times(tmp_path):
    """Reported with the next report (no meter wake-up inside a timed stage, nor between two
    samples), stamped when each stage began: the meter's truth over each stage is that stage's
    power."""
    meter = SimulatedMeter(SIMULATED_CPU)
    meter.start()
    driver = CpuDriver(rapl_root=str(tmp_path / "none"), sim_meter=f"{meter.host}:{meter.port}")
    try:
        loaded(driver, audio(1)[0])
        result = run(driver, mode="single_stream", index=0)
        pre_end = result["t_start"] + result["preprocess_s"]
        run(driver, mode="repeat", stage="idle", duration_s=0.01)  # the next report
        time.sleep(0.05)  # the reports travel to the meter
        assert meter.true_mean_power(result["t_start"], pre_end) == pytest.approx(
            SIMULATED_CPU.watts("preprocessing"), rel=1e-3)
        assert meter.true_mean_power(result["t_end"] - result["inference_s"],
                                     result["t_end"]) == pytest.approx(
            SIMULATED_CPU.watts("inference"), rel=1e-3)
        assert meter.state == "idle"
    finally:
        driver.close()
        meter.stop()


def test_qubo_still_works_beside_asc(driver):
    loaded(driver, audio(1)[0])
    assert driver.capabilities()["workloads"] == ["qubo", "asc"]
    assert driver.capabilities()["simulated"] is False
    driver.load({"workload": "qubo", "nodes": 10, "density": 0.2, "seed": 0},
                [generate_qubo(10, 0.2, 0)])
    result = driver.run({"workload": "qubo", "mode": "fixed_timeout", "solver": "sa",
                         "timeout_s": 0.01, "seed": 0}, threading.Event()).body
    assert result["cost"] < 0
    assert run(driver, mode="single_stream", index=0)["predicted"] in range(4)
