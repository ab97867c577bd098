"""The Keysight 34465A driver against the simulated bench meter, over real TCP with pyvisa-py."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from hilbench.power.source import PowerSource, PowerSourceError, SampleBatch
from hilbench.sim import SimulatedMeter
from hilbench.sim.power_model import ARDUINO_NANO_33_BLE, DevicePowerModel
from hilbench_drivers.keysight34465a import Keysight34465A, Keysight34465ASettings

pytest.importorskip("pyvisa_py")

SUPPLY_V = ARDUINO_NANO_33_BLE.supply_v
FAST = Keysight34465ASettings(
    function="current",
    range=0.1,
    nplc=0.2,
    autozero=False,
    sample_interval_s=0.01,  # 100 Hz
    supply_voltage_v=SUPPLY_V,
    timeout_s=0.5,
    chunk=16,  # small, so that draining takes several R? round trips
)


@pytest.fixture
def meter() -> Iterator[SimulatedMeter]:
    with SimulatedMeter(ARDUINO_NANO_33_BLE, noise_std_w=0.0005, seed=3) as m:
        yield m


def open_driver(meter: SimulatedMeter, settings: Keysight34465ASettings = FAST) -> Keysight34465A:
    driver = Keysight34465A(meter.resource, settings, visa_library="@py")
    driver.configure()
    driver.arm()
    return driver


def joined(batches: list[SampleBatch]) -> SampleBatch:
    return SampleBatch(
        np.concatenate([b.t for b in batches]), np.concatenate([b.values for b in batches])
    )


def test_driver_is_a_power_source() -> None:
    assert isinstance(Keysight34465A("TCPIP::192.0.2.1::5025::SOCKET", FAST), PowerSource)


def test_measured_mean_power_matches_the_true_mean(meter: SimulatedMeter) -> None:
    driver = open_driver(meter)
    driver.start()
    batches = []
    for state in ("preprocessing", "inference", "idle", "inference", "preprocessing"):
        time.sleep(0.2)
        meter.set_state(state)
        batches.append(driver.read())
    time.sleep(0.2)
    batches.append(driver.stop())
    driver.close()
    samples = joined(batches)
    health = driver.health()
    assert health.ok, health

    dt = FAST.sample_interval_s
    assert np.allclose(np.diff(samples.t), dt)  # sample i at t0 + i·dt, none missing
    assert len(samples) >= 0.9 / dt
    measured_w = float(np.mean(samples.values)) * SUPPLY_V
    window = (samples.t[0], samples.t[-1] + dt)
    true_w = meter.true_mean_power(*window)

    # Instrument accuracy as the driver states it, plus what sampling 4 ms of every 10 ms
    # can miss at each of the 5 state changes and the two window edges, plus noise.
    info = driver.info
    accuracy_w = (info.accuracy_relative * true_w / SUPPLY_V + info.accuracy_absolute) * SUPPLY_V
    duration = window[1] - window[0]
    swing_w = max(ARDUINO_NANO_33_BLE.state_watts.values()) - min(
        ARDUINO_NANO_33_BLE.state_watts.values()
    )
    sampling_w = 7 * swing_w * dt / duration
    noise_w = 4 * meter.noise_std_w / math.sqrt(len(samples))
    assert measured_w == pytest.approx(true_w, abs=accuracy_w + sampling_w + noise_w)
    # and the readings were not simply constant: the phases are visible
    assert np.ptp(samples.values) * SUPPLY_V > 0.5 * swing_w


def test_first_sample_is_stamped_at_init(meter: SimulatedMeter) -> None:
    driver = open_driver(meter)
    driver.start()
    driver.stop()
    driver.close()
    assert driver.t0 is not None and meter.init_time is not None
    # both clocks are the same monotonic clock; only the network hop separates them
    assert abs(driver.t0 - meter.init_time) < 0.05


def test_impossible_rate_is_refused_before_any_io(meter: SimulatedMeter) -> None:
    with pytest.raises(ValueError, match=r"impossible at NPLC 10.*autozero ON.*2\.5 Hz"):
        Keysight34465ASettings(
            nplc=10,
            autozero=True,
            line_frequency_hz=50,
            sample_interval_s=1 / 3,
            supply_voltage_v=SUPPLY_V,
        )
    assert meter.init_time is None  # the meter was never touched
    # the same rate is fine at 60 Hz mains with autozero off
    ok = Keysight34465ASettings(
        nplc=10, autozero=False, line_frequency_hz=60, sample_interval_s=1 / 3, supply_voltage_v=5
    )
    assert ok.max_rate_hz > 3


def test_scpi_error_during_configuration_names_error_and_command(meter: SimulatedMeter) -> None:
    meter.inject_error("Settings conflict", code=-221, on_command="SENS:CURR:DC:ZERO:AUTO")
    driver = Keysight34465A(meter.resource, FAST, visa_library="@py")
    with pytest.raises(PowerSourceError) as err:
        driver.configure()
    driver.close()
    message = str(err.value)
    assert '-221,"Settings conflict"' in message
    assert "SENS:CURR:DC:ZERO:AUTO OFF" in message
    assert meter.resource in message


def test_stalled_meter_gives_a_timeout_naming_the_resource(meter: SimulatedMeter) -> None:
    driver = open_driver(meter, replace(FAST, timeout_s=0.3))
    driver.start()
    meter.stall()
    with pytest.raises(PowerSourceError, match=r"no answer from .* within 0\.3 s") as err:
        driver.read()
    assert meter.resource in str(err.value)
    assert not driver.health().ok
    with pytest.raises(PowerSourceError, match="unusable"):
        driver.stop()  # replies may now be out of step; nothing more is trusted
    driver.close()


def test_overload_is_nan_and_flagged_never_a_number() -> None:
    spiky = DevicePowerModel("spiky", {"idle": 0.05, "inference": 1.0}, supply_v=5.0)
    with SimulatedMeter(spiky) as m:
        driver = open_driver(m, replace(FAST, range=0.1))  # 200 mA at inference > 120 mA
        driver.start()
        time.sleep(0.1)
        m.set_state("inference")
        time.sleep(0.1)
        m.set_state("idle")
        time.sleep(0.1)
        samples = joined([driver.read(), driver.stop()])
        driver.close()
    health = driver.health()
    overloaded = np.isnan(samples.values)
    assert overloaded.any()
    assert health.overloads == int(overloaded.sum())
    assert not health.ok
    assert np.all(np.abs(samples.values[~overloaded]) < 0.12)


def test_dropped_connection_mid_window_raises(meter: SimulatedMeter) -> None:
    driver = open_driver(meter, replace(FAST, timeout_s=0.3))
    driver.start()
    time.sleep(0.05)
    driver.read()
    meter.drop_connections()
    with pytest.raises(PowerSourceError) as err:
        for _ in range(3):  # the loss shows on the next exchange or the one after
            driver.read()
    assert meter.resource in str(err.value)
    assert not driver.health().ok
    driver.close()


def test_reading_memory_overflow_is_detected() -> None:
    with SimulatedMeter(memory_readings=20) as m:
        settings = replace(FAST, nplc=0.02, sample_interval_s=0.002)  # 500 Hz
        driver = open_driver(m, settings)
        driver.start()
        deadline = time.monotonic() + 5
        # Not reading: memory fills up. Wait for a loss far larger than the count the driver
        # can misjudge from its start-time estimate (tens of readings on a loaded machine).
        while m.readings_lost < 250 and time.monotonic() < deadline:
            time.sleep(0.01)
        driver.read()
        driver.stop()
        driver.close()
    health = driver.health()
    assert health.overflow
    assert health.dropped > 0
    assert not health.ok


def test_missing_pyvisa_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyvisa", None)
    driver = Keysight34465A("TCPIP::192.0.2.1::5025::SOCKET", FAST)
    with pytest.raises(PowerSourceError, match=r"pip install hilbench\[keysight\]"):
        driver.configure()


@pytest.mark.serial  # a rate against a 1 % bound: beside other workers the interval drifted
@pytest.mark.parametrize("drift_ppm", [0.0, 20_000.0])
def test_driver_measures_the_meters_real_interval(drift_ppm: float) -> None:
    """Over TCP: the driver learns the interval from the meter's own count at ABOR."""
    with SimulatedMeter(ARDUINO_NANO_33_BLE, seed=5, drift_ppm=drift_ppm) as meter:
        driver = open_driver(meter)
        driver.start()
        time.sleep(2.0)
        driver.read()
        driver.stop()
        driver.close()
    est = driver.interval_estimate
    assert est is not None
    true_dt = FAST.sample_interval_s * (1 + drift_ppm * 1e-6)
    assert abs(est.dt_s - true_dt) <= est.half_width_s, (est, true_dt)
    assert est.half_width_s < 0.005 * FAST.sample_interval_s
    if drift_ppm:
        assert est.drift_ppm > 10_000


@pytest.mark.parametrize("command", ["INIT", "*OPC?"])
def test_a_command_parsed_late_is_no_reading_missing(meter: SimulatedMeter, command: str) -> None:
    """A loaded host can hold INIT for a while before the meter parses it, and the reply behind
    it then comes at once; or answer the *OPC? behind ABOR late. Either way the meter took
    fewer readings than the midpoints of those round trips imply. They were never owed, so
    none is called missing (CI, stop 44: '64 missing' on a loaded host, the run invalid)."""
    meter.parse_late(command, 0.3)  # 30 readings at 100 Hz, far past the 7 the check forgives
    driver = open_driver(meter)
    driver.start()
    time.sleep(0.5)
    driver.read()
    driver.stop()
    driver.close()
    assert driver.health().ok, driver.health()
    assert driver.health().dropped == 0
