"""The cpu driver's ASC device: model and samples in memory, single-stream and repeat runs."""

from __future__ import annotations

import threading

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


def samples_load(driver: CpuDriver, slices: np.ndarray, offset: int, total: int) -> dict:
    return driver.load(
        {"workload": "asc", "part": "samples", "offset": offset, "total": total}, [slices]
    ).body


@pytest.fixture
def driver(tmp_path) -> CpuDriver:
    d = CpuDriver(rapl_root=str(tmp_path / "no-powercap"))
    yield d
    d.close()


def loaded(driver: CpuDriver, slices: np.ndarray) -> CpuDriver:
    model_load(driver)
    half = len(slices) // 2
    samples_load(driver, slices[:half], 0, len(slices))
    assert samples_load(driver, slices[half:], half, len(slices))["complete"]
    return driver


def run(driver: CpuDriver, **body) -> dict:
    return driver.run({"workload": "asc", **body}, threading.Event()).body


def test_single_stream_predicts_what_the_model_predicts_on_each_sample(driver):
    slices = audio(6)
    loaded(driver, slices)
    for i in range(len(slices)):
        result = run(driver, mode="single_stream", index=i)
        logits, expected = MODEL.infer(extract_features(slices[i], MODEL.mfe_config))
        assert result["index"] == i
        assert result["predicted"] == expected
        assert result["logits"] == logits.tolist()
        assert result["preprocess_s"] > 0 and result["inference_s"] > 0
        timed = result["preprocess_s"] + result["inference_s"]
        assert result["t_end"] - result["t_start"] >= timed


def test_samples_must_arrive_in_order_and_fit_the_model(driver):
    model_load(driver)
    slices = audio(4)
    samples_load(driver, slices[:2], 0, 4)
    with pytest.raises(DriverError, match="expected offset 2") as exc:
        samples_load(driver, slices[:1], 3, 4)
    assert exc.value.code == "bad_arguments"
    with pytest.raises(DriverError, match="overrun the total of 4"):
        samples_load(driver, audio(3), 2, 4)
    with pytest.raises(DriverError, match="the model takes 99"):
        samples_load(driver, slices[:, : RATE // 2].copy(), 0, 4)
    with pytest.raises(DriverError, match="float32"):
        samples_load(driver, slices.astype(np.float64), 0, 4)


def test_running_before_everything_is_loaded_is_refused(driver):
    with pytest.raises(DriverError, match="no asc model loaded") as exc:
        samples_load(driver, audio(1), 0, 1)
    assert exc.value.code == "not_loaded"
    model_load(driver)
    samples_load(driver, audio(1), 0, 2)
    with pytest.raises(DriverError, match=r"not fully loaded \(1 of 2\)") as exc:
        run(driver, mode="single_stream", index=0)
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
        ({"mode": "single_stream", "index": 5}, "outside 0..2"),
        ({"mode": "repeat", "stage": "classification", "duration_s": 0.01}, "stage"),
        ({"mode": "repeat", "stage": "inference", "duration_s": 0}, "duration_s"),
        ({"mode": "repeat", "stage": "inference", "duration_s": 0.01, "stream": 4}, "stream"),
        ({"mode": "batch"}, "asc mode"),
    ],
)
def test_bad_run_arguments_are_refused_with_the_reason(driver, body, message):
    loaded(driver, audio(3))
    with pytest.raises(DriverError, match=message) as exc:
        run(driver, **body)
    assert exc.value.code == "bad_arguments"


@pytest.mark.parametrize("stage", ["preprocessing", "inference"])
@pytest.mark.parametrize("stream", [1, 3])
def test_repeat_keeps_the_device_busy_for_the_requested_time(driver, stage, stream):
    loaded(driver, audio(3))
    result = run(driver, mode="repeat", stage=stage, duration_s=0.05, index=1, stream=stream)
    assert result["stage"] == stage and result["stream"] == stream
    assert result["t_end"] - result["t_start"] >= 0.05  # on the device's own clock
    assert result["samples"] == result["iterations"] * stream
    assert result["mean_s"] * result["samples"] <= result["t_end"] - result["t_start"]
    assert result["std_error_s"] >= 0
    assert result["power"]["measured"] is False  # no RAPL here: said so, no number


def test_repeat_ends_early_when_asked_to_stop(driver):
    loaded(driver, audio(1))
    stop = threading.Event()
    stop.set()
    body = {"workload": "asc", "mode": "repeat", "stage": "inference", "duration_s": 30.0}
    result = driver.run(body, stop).body
    assert result["iterations"] == 1 and result["stopped_early"]


def test_the_simulated_meter_sees_the_stage_the_device_repeats(tmp_path):
    meter = SimulatedMeter(SIMULATED_CPU)
    meter.start()
    driver = CpuDriver(rapl_root=str(tmp_path / "none"), sim_meter=f"{meter.host}:{meter.port}")
    try:
        loaded(driver, audio(2))
        for stage in ("preprocessing", "inference"):
            result = run(driver, mode="repeat", stage=stage, duration_s=0.1, index=0)
            # The meter stamps a state on arrival, a little after the device sent it.
            truth = meter.true_mean_power(result["t_start"] + 0.01, result["t_end"])
            assert truth == pytest.approx(SIMULATED_CPU.watts(stage), rel=1e-3)
    finally:
        driver.close()
        meter.stop()


def test_qubo_still_works_beside_asc(driver):
    loaded(driver, audio(1))
    assert driver.capabilities()["workloads"] == ["qubo", "asc"]
    driver.load({"workload": "qubo", "nodes": 10, "density": 0.2, "seed": 0},
                [generate_qubo(10, 0.2, 0)])
    result = driver.run({"mode": "fixed_timeout", "solver": "sa", "timeout_s": 0.01},
                        threading.Event()).body
    assert result["cost"] < 0
    assert run(driver, mode="single_stream", index=0)["predicted"] in range(4)
