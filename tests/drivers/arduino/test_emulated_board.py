"""The Python driver against the firmware's host build over a real pseudo-terminal: identify,
load, pre-process, infer, repeat windows; class scores equal to the Python int8 reference."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from hilbench.agent.driver import DriverError
from hilbench.workloads.asc.features import extract_features
from hilbench.workloads.asc.quant import QuantisedModel
from hilbench_drivers.arduino import ArduinoDriver
from hilbench_drivers.arduino.board import audio_to_pcm16
from hilbench_drivers.arduino.model_header import model_fingerprint

from .conftest import VECTORS

MODEL = QuantisedModel.load(VECTORS / "model.npz")
VECTOR_FILES = sorted(VECTORS.glob("vector_*.json"))


@pytest.fixture
def driver(emulator):
    drv = ArduinoDriver(port=emulator.path)
    yield drv
    drv.close()


def _load(drv, index, array):
    return drv.load({"workload": "asc", "part": "sample", "index": index}, [array]).body


def _run(drv, index):
    return drv.run(
        {"workload": "asc", "mode": "single_stream", "index": index}, threading.Event()
    ).body


def _unload(drv, index):
    drv.load({"workload": "asc", "part": "unload", "index": index}, [])


def test_identity_names_the_host_build_and_its_model(driver):
    caps = driver.capabilities()
    assert caps["board"] == "host-build"
    assert caps["simulated"] is True and "host build" in caps["simulation"]
    assert caps["asc"]["sample_capacity"] == 1
    assert caps["asc"]["model_fingerprint"] == model_fingerprint(MODEL)


def test_model_load_accepts_the_built_in_model_and_refuses_another(driver):
    arrays = MODEL.arrays()
    params = {"workload": "asc", "part": "model", "meta": MODEL.metadata(), "arrays": list(arrays)}
    assert driver.load(params, list(arrays.values())).body["detail"]["built_in"] is True
    arrays["conv0.bias"] = arrays["conv0.bias"] + 3
    with pytest.raises(DriverError) as err:
        driver.load(params, list(arrays.values()))
    assert err.value.code == "bad_arguments"
    assert "was built with model" in str(err.value)


@pytest.mark.parametrize("path", VECTOR_FILES, ids=[p.stem for p in VECTOR_FILES])
def test_scores_equal_the_int8_reference_for_every_vector(driver, path):
    doc = json.loads(path.read_text())
    features = np.asarray(doc["input"]["data"], np.int8).reshape(doc["input"]["shape"])
    _load(driver, 5, features)
    result = _run(driver, 5)
    assert result["scores"] == doc["logits"]["data"]
    assert result["predicted"] == doc["class"]
    assert result["preprocess_s"] is None and result["preprocess_reason"]
    assert 0 < result["inference_s"] < 1


@pytest.mark.parametrize("freq", [440.0, 2500.0])
def test_audio_sample_is_preprocessed_on_the_board_like_the_reference(driver, freq):
    t = np.arange(16000) / 16000
    audio = (0.4 * np.sin(2 * np.pi * freq * t)).astype(np.float32)
    body = _load(driver, 0, audio)
    assert body["detail"]["bytes"] == 32000 and body["detail"]["format"] == "audio_pcm16"
    result = _run(driver, 0)
    pcm = np.frombuffer(audio_to_pcm16(audio), "<i2").astype(np.float32) / np.float32(32768)
    logits, predicted = MODEL.infer(extract_features(pcm))
    assert result["scores"] == [int(v) for v in logits]
    assert result["predicted"] == predicted
    assert result["preprocess_s"] > 0 and result["inference_s"] > 0
    assert result["t_start"] < result["t_end"]


def test_second_sample_is_refused_until_the_first_is_unloaded(driver):
    audio = np.zeros(16000, np.float32)
    _load(driver, 1, audio)
    with pytest.raises(DriverError) as err:
        _load(driver, 2, audio)
    assert err.value.code == "device_full"
    _unload(driver, 1)
    _load(driver, 2, audio)
    with pytest.raises(DriverError) as err:
        _run(driver, 1)
    assert err.value.code == "not_loaded"


def _quiet(emulator, still_s: float = 0.2, limit_s: float = 5.0) -> None:
    """Wait until the emulator has recorded no new state for ``still_s``."""
    deadline = time.monotonic() + limit_s
    seen = -1
    while len(emulator.states) != seen and time.monotonic() < deadline:
        seen = len(emulator.states)
        time.sleep(still_s)


def test_repeat_windows_run_each_stage_for_the_duration(driver, emulator):
    t = np.arange(16000) / 16000
    _load(driver, 0, (0.2 * np.sin(2 * np.pi * 300 * t)).astype(np.float32))
    _quiet(emulator)  # the load's own state lines may still arrive (CI saw an extra "idle")
    emulator.states.clear()
    for stage in ("idle", "preprocessing", "inference"):
        body = driver.run(
            {"workload": "asc", "mode": "repeat", "stage": stage, "duration_s": 0.3, "index": 0},
            threading.Event(),
        ).body
        assert body["stage"] == stage and not body["stopped_early"]
        assert 0.29 <= body["t_end"] - body["t_start"] <= 1.5  # the last iteration may run over
        if stage == "idle":
            assert body["iterations"] == 0
        else:
            assert body["iterations"] > 1 and body["mean_s"] > 0 and body["std_error_s"] >= 0
    deadline = time.monotonic() + 2
    while len(emulator.states) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    names = [s for s, _ in emulator.states]
    assert names == ["idle", "idle", "preprocessing", "idle", "inference", "idle"]


def test_stop_ends_a_repeat_window_early(driver):
    _load(driver, 0, np.zeros(16000, np.float32))
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    t0 = time.monotonic()
    body = driver.run(
        {"workload": "asc", "mode": "repeat", "stage": "inference", "duration_s": 30, "index": 0},
        stop,
    ).body
    assert body["stopped_early"] is True
    assert time.monotonic() - t0 < 5


def test_emulate_mode_flashes_the_campaigns_model_into_the_host_build(host_program):
    from hilbench.workloads.asc import packaged_model_path

    packaged = QuantisedModel.load(packaged_model_path())
    drv = ArduinoDriver(port="emulate")
    try:
        assert drv.capabilities()["asc"]["model_fingerprint"] == model_fingerprint(packaged)
        arrays = MODEL.arrays()
        params = {
            "workload": "asc",
            "part": "model",
            "meta": MODEL.metadata(),
            "arrays": list(arrays),
        }
        body = drv.load(params, list(arrays.values())).body
        assert body["detail"]["reflashed"] is True
        assert drv.capabilities()["asc"]["model_fingerprint"] == model_fingerprint(MODEL)
        doc = json.loads(VECTOR_FILES[0].read_text())
        features = np.asarray(doc["input"]["data"], np.int8).reshape(doc["input"]["shape"])
        _load(drv, 0, features)
        assert _run(drv, 0)["scores"] == doc["logits"]["data"]
    finally:
        drv.close()


@pytest.mark.slow
def test_a_model_build_configured_from_another_checkout_is_reconfigured(
    host_program, tmp_path, monkeypatch
):
    """A cache left by another checkout (a moved tree, a second worktree) must not break the
    build: CMake refuses a build directory configured from a different source directory."""
    from hilbench_drivers.arduino import emulator

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    build = emulator.model_build_dir(model_fingerprint(MODEL)) / "build"
    build.mkdir(parents=True)
    (build / "CMakeCache.txt").write_text(
        "CMAKE_HOME_DIRECTORY:INTERNAL=/elsewhere/checkout/firmware\n"
    )
    program = emulator.host_build_for_model(MODEL)
    assert program.is_file()
    assert emulator.configured_source(build) == emulator.FIRMWARE_DIR
    # Two source trees never share a cache directory in the first place.
    here = emulator.model_build_dir("x")
    monkeypatch.setattr(emulator, "FIRMWARE_DIR", Path("/elsewhere/checkout/firmware"))
    assert emulator.model_build_dir("x") != here


@pytest.mark.timeout(60)
def test_two_flashing_one_model_at_once_build_it_one_after_the_other(tmp_path, monkeypatch):
    """Two campaigns (or test workers) flashing the same model at once share its cache folder:
    they configured one CMake build directory together and both failed (CI-86, "CMAKE_C_COMPILER
    not set"). The folder's build lock makes the second wait for the first."""
    from hilbench_drivers.arduino import emulator

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    inside, overlaps = [0], []

    def slow_build(build_dir: Path, quiet: bool = True, extra: list[str] | None = None) -> Path:
        inside[0] += 1
        overlaps.append(inside[0])
        time.sleep(0.3)
        inside[0] -= 1
        return build_dir / emulator.BINARY_NAME

    monkeypatch.setattr(emulator, "build_host", slow_build)
    found: list[Path] = []
    threads = [threading.Thread(target=lambda: found.append(emulator.host_build_for_model(MODEL)))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(found) == 2 and found[0] == found[1]
    assert overlaps == [1, 1], "two builds ran in one folder at once"
