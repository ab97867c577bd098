"""Pre-processing on the chip's analog front end (``-o afe=chip``) against the stand-ins for
``AFESamna`` and ``sounddevice`` (standin_afe.py): the sample is played into the microphone,
the AFE's events come from that sound after a known latency, and the driver must find the
sample's window, measure the latency, stamp it on the agent clock and send the right events to
the SNN core."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from hilbench.agent.driver import DriverError
from hilbench_drivers.xylo import XyloDriver
from hilbench_drivers.xylo.chip_afe import ChipFrontEnd
from hilbench_drivers.xylo.hardware import HardwareXylo, VendorModules
from hilbench_drivers.xylo.playback import Speaker
from tests.drivers.xylo import standin
from tests.drivers.xylo.conftest import tiny_network_parts
from tests.drivers.xylo.standin_afe import LATENCY_S
from tests.drivers.xylo.test_hardware import load_network, open_driver

LEAD, GAP, TAIL = 0.05, 0.1, 0.1


def open_chip_driver(calls, **afe):
    fake = standin.make_modules(calls)
    modules = VendorModules(samna=fake.samna, xylo=fake.xylo, sounddevice=fake.sounddevice)
    options = {"speaker": None, "dt_s": 1e-3, "lead_s": LEAD, "gap_s": GAP, "tail_s": TAIL,
               **afe}
    device = HardwareXylo.open(core_clock_mhz=25.0, power_hz=50.0, modules=modules,
                               afe=options)
    return XyloDriver(backend="hardware", afe="chip", device=device), fake


def shaped_audio(seed: int = 0) -> np.ndarray:
    """1 s at 16 kHz whose loudness changes in steps the AFE's events must follow."""
    t = np.arange(16000) / 16000
    envelope = np.select([t < 0.3, t < 0.5, t < 0.8], [0.2, 0.0, 0.1], 0.03)
    noise = np.random.default_rng(seed).standard_normal(16000)
    return (envelope * noise).clip(-1, 1).astype(np.float32)


def step_rms(audio: np.ndarray, step_s: float = 0.01) -> np.ndarray:
    return np.sqrt((audio.reshape(-1, int(16000 * step_s)) ** 2).mean(axis=1))


def run_one(driver, audio, index=0):
    driver.load({"workload": "asc", "part": "sample", "index": index}, [audio])
    return driver.run({"workload": "asc", "mode": "single_stream", "index": index},
                      threading.Event()).body


def test_sample_played_recorded_and_inferred_with_the_latency_measured():
    calls = standin.Calls()
    driver, fake = open_chip_driver(calls)
    net = tiny_network_parts()
    loaded = load_network(driver, net)
    assert loaded["detail"]["afe_calibration_s"] >= 0.2  # calibrated once, at the model load
    audio = shaped_audio()
    body = run_one(driver, audio)

    log = dict(calls.log)
    assert log["AFESamna"] == {"dt": 1e-3, "auto_calibrate": True}
    names = [n for n in calls.names() if n in ("AFESamna", "AFESamna.evolve", "sd.play",
                                                "sd.wait", "evolve")]
    assert names == ["AFESamna", "AFESamna.evolve", "sd.play", "sd.wait", "evolve"]
    assert log["AFESamna.evolve"]["duration_s"] == pytest.approx(LEAD + GAP + 1.0 + TAIL)
    assert log["sd.play"]["samplerate"] == 16000 and log["sd.play"]["peak"] <= 1.0

    # the measured figures against the room's truth
    room = fake.board.room
    assert body["detail"]["afe"] == "chip" and body["preprocess_s"] == pytest.approx(1.0)
    assert body["preprocess_latency_s"] == pytest.approx(LATENCY_S, abs=1.5e-3)
    assert body["detail"]["preprocess_t_start"] == pytest.approx(room.last_play + LATENCY_S + GAP,
                                                       abs=1.5e-3)
    assert body["t_start"] == body["detail"]["preprocess_t_start"] < body["t_end"]
    assert body["detail"]["afe_background_hz"] == 0.0

    # the SNN core got the events of the sample's window, binned to the network's dt
    sent = fake.board.inputs[-1]
    assert sent.shape == (round(1.0 / net.dt), 16)
    fine = room.recordings[-1]["raster"]
    true_start = (room.last_play + LATENCY_S + GAP - room.recordings[-1]["t0"]) / 1e-3
    candidates = [np.clip(fine[s: s + 1000].reshape(-1, 10, 16).sum(axis=1), 0, 15)
                  for s in (int(true_start), int(true_start) + 1)]
    assert any(np.array_equal(sent, c) for c in candidates)
    assert np.corrcoef(sent.sum(axis=1), step_rms(audio))[0, 1] > 0.95
    assert body["predicted"] == int(np.argmax(body["scores"]))


def test_a_wrong_playback_rate_is_caught_by_the_envelope(monkeypatch):
    """The check above has teeth: played at the device's default rate (the sample's rate
    forgotten), the recorded window no longer follows the sample."""
    calls = standin.Calls()
    driver, fake = open_chip_driver(calls)
    load_network(driver, tiny_network_parts())
    original = Speaker.start
    monkeypatch.setattr(Speaker, "start", lambda self, audio, rate: original(self, audio, 48000))
    audio = shaped_audio()
    run_one(driver, audio)
    sent = fake.board.inputs[-1]
    assert np.corrcoef(sent.sum(axis=1), step_rms(audio))[0, 1] < 0.8  # 0.58 here; right: > 0.95


def test_an_uncalibrated_afe_is_refused_with_the_reason():
    calls = standin.Calls()
    fake = standin.make_modules(calls)
    real = fake.xylo.find_xylo_hdks()[1][0].AFESamna

    def uncalibrated(device, dt, auto_calibrate):
        return real(device, dt=dt, auto_calibrate=False)

    front = ChipFrontEnd(fake.board, uncalibrated, Speaker(sd=fake.sounddevice),
                         lead_s=LEAD, gap_s=GAP, tail_s=TAIL)
    with pytest.raises(DriverError, match="calibrated"):
        front.record(shaped_audio(), 16000, 0.01)


def test_a_latency_longer_than_the_tail_is_refused():
    calls = standin.Calls()
    fake = standin.make_modules(calls)
    front = ChipFrontEnd(fake.board, fake.xylo.find_xylo_hdks()[1][0].AFESamna,
                         Speaker(sd=fake.sounddevice), lead_s=LEAD, gap_s=GAP, tail_s=0.01)
    with pytest.raises(DriverError, match="longer than afe_tail_s"):
        front.record(shaped_audio(), 16000, 0.01)


def test_no_output_device_names_the_package_install_and_devices():
    fake = standin.make_modules(standin.Calls(), speaker=False)
    with pytest.raises(DriverError) as err:
        Speaker(sd=fake.sounddevice)
    text = str(err.value)
    assert "sounddevice" in text and "pip install" in text and "libportaudio2" in text
    assert "stand-in USB microphone" in text and err.value.code == "missing_sdk"


def test_capabilities_say_which_front_end_and_how_it_is_timed():
    driver, _ = open_chip_driver(standin.Calls())
    asc = driver.capabilities()["asc"]
    assert asc["stages"] == ["preprocessing", "inference"]
    assert "real time" in asc["timing"] and "AFESamna" in asc["timing"]
    assert "afe_core + afe_ldo" in asc["timing"]
    assert driver.capabilities()["detail"]["device"]["afe"] == "chip"
    host, _ = open_driver(standin.Calls())
    assert host.capabilities()["asc"]["stages"] == ["inference"]
    assert host.capabilities()["detail"]["device"]["afe"] == "host"
    with pytest.raises(DriverError, match="backend=hardware"):
        XyloDriver(backend="simulation", afe="chip")
    with pytest.raises(DriverError, match="'host' or 'chip'"):
        XyloDriver(backend="hardware", afe="mic")
