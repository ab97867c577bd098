"""A device that tells its single-stream stages late holds the simulated meter: the meter's
readings are computed only from a timeline the device has told, so a power window that runs
single stream reads what the device did, not an idle device, without a write per sample."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from hilbench.clock import bench_now
from hilbench.sim import SimulatedMeter
from hilbench.sim.device_link import FLUSH_S, MAX_DEFERRED, SimulatedDeviceLink
from hilbench.sim.meter_acquisition import HOLD_PATIENCE_S
from hilbench.sim.power_model import SIMULATED_CPU
from tests.sim.test_meter import Client, block_readings

RANGE_A = 10.0
NPLC = 0.006
INTERVAL_S = 200e-6
APERTURE_S = NPLC / 50.0
RESOLUTION_W = 6e-6 * RANGE_A * SIMULATED_CPU.supply_v  # 6 ppm of range at NPLC 0.006


@pytest.fixture
def meter() -> Iterator[SimulatedMeter]:
    with SimulatedMeter(SIMULATED_CPU, seed=0) as m:
        yield m


@pytest.fixture
def client(meter: SimulatedMeter) -> Iterator[Client]:
    c = Client(meter.port, timeout=5.0)
    yield c
    c.close()


def start_fast_acquisition(client: Client, count: int = 1_000_000) -> None:
    for command in ("*RST", f"CONF:CURR:DC {RANGE_A}", f"SENS:CURR:DC:NPLC {NPLC}",
                    "SENS:CURR:DC:ZERO:AUTO OFF", "TRIG:SOUR IMM", "SAMP:SOUR TIM",
                    f"SAMP:TIM {INTERVAL_S}", f"SAMP:COUN {count}", "INIT"):
        client.write(command)
    assert client.query("SYST:ERR?") == '+0,"No error"'


def single_stream(link: SimulatedDeviceLink, duration_s: float) -> int:
    """Samples as the cpu driver runs them: stages of ~0.1-0.2 ms, told only through defer."""
    changes = 0
    end = bench_now() + duration_s
    while bench_now() < end:
        s0 = link.begin()
        time.sleep(0.0001)
        s2 = bench_now()
        time.sleep(0.0001)
        link.defer([("preprocessing", s0), ("inference", s2), ("idle", bench_now())])
        changes += 3
    return changes


def truth_of(meter: SimulatedMeter, t_first: float, count: int) -> np.ndarray:
    starts = t_first + np.arange(count) * INTERVAL_S
    return np.array([meter.true_mean_power(t, t + APERTURE_S) for t in starts])


@pytest.mark.slow
def test_readings_polled_during_a_deferred_single_stream_are_the_true_power(meter, client):
    link = SimulatedDeviceLink(f"127.0.0.1:{meter.port}")
    start_fast_acquisition(client)
    t_first = meter.init_time
    assert t_first is not None
    told: dict[str, int] = {}
    device = threading.Thread(target=lambda: told.update(
        changes=single_stream(link, 2.0), writes=link.writes))
    device.start()
    readings: list[float] = []
    lags: list[float] = []
    while device.is_alive():
        time.sleep(0.05)
        polled = bench_now()
        readings += block_readings(client.query("R?"))
        if readings:  # how far behind the last reading due the last one received ends
            lags.append(polled - (t_first + (len(readings) - 1) * INTERVAL_S + APERTURE_S))
    device.join()
    client.write("ABOR")
    readings += block_readings(client.query("R?"))
    assert client.query("SIM:LATE?") == "+0"
    link.close()

    watts = np.array(readings) * SIMULATED_CPU.supply_v
    truth = truth_of(meter, t_first, len(watts))
    assert len(watts) > 0.9 * 2.0 / INTERVAL_S
    assert truth.max() > 30.0 > 12.0 == pytest.approx(truth.min())  # it did run samples
    # Within half a quantisation step, plus the rounding of 120 µs apertures on a clock at
    # ~1e4-1e5 s (1e-11 s of 1.2e-4 s: ~1e-6 W), which may tip a midpoint value either way.
    wrong = np.flatnonzero(np.abs(watts - truth) > RESOLUTION_W / 2 + 1e-4)
    assert wrong.size == 0, (f"{wrong.size} of {len(watts)} readings differ from the truth, "
                             f"first at {wrong[0]}: {watts[wrong[0]]} W, true {truth[wrong[0]]} W")
    # No write per sample: one to begin, one per FLUSH_S, one per MAX_DEFERRED changes.
    bound = 1 + 2.0 / FLUSH_S + told["changes"] / MAX_DEFERRED
    print(f"writes {told['writes']} for {told['changes']} changes (bound {bound:.0f}); "
          f"max reading lag {max(lags) * 1e3:.1f} ms")
    assert told["writes"] <= bound
    assert max(lags) < 0.05 + FLUSH_S + 0.2  # poll period, flush period, margin for load


def test_a_held_meter_whose_device_falls_silent_stops_within_its_patience(meter, client, caplog):
    device = socket.create_connection(("127.0.0.1", meter.port))
    start_fast_acquisition(client)
    t = bench_now()
    device.sendall(f"SIM:STAT inference,{t!r}\nSIM:HOLD {t!r}\n".encode())
    time.sleep(0.2)  # the device goes on past its hold and never tells
    client.write("ABOR")
    assert client.query("*OPC?") == "1"  # ABOR itself does not wait: the driver times it
    asked = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="hilbench.sim.meter_acquisition"):
        readings = block_readings(client.query("R?"))
    waited = time.monotonic() - asked
    assert HOLD_PATIENCE_S * 0.9 < waited < HOLD_PATIENCE_S + 0.5
    acq = meter._acq
    assert acq is not None and acq.t_abort is not None
    assert len(readings) == acq.ready_count(acq.t_abort)  # every reading due by ABOR is there
    late = int(client.query("SIM:LATE?"))
    assert late == meter.late_readings > 0.15 / INTERVAL_S
    assert "told only up to" in caplog.text
    assert block_readings(client.query("R?")) == []  # asked again: no second wait
    device.close()


def test_state_after_deferred_samples_lifts_the_hold(meter, client):
    link = SimulatedDeviceLink(f"127.0.0.1:{meter.port}")
    start_fast_acquisition(client)
    t = bench_now()
    link.defer([("preprocessing", t - 1e-3), ("idle", t)])  # no begin(): held until told
    time.sleep(0.2)
    assert meter.told_until is not None
    link.state("inference")
    time.sleep(0.1)
    asked = bench_now()
    count = int(client.query("DATA:POIN?"))
    acq = meter._acq
    assert acq is not None and meter.told_until is None
    assert count >= acq.ready_count(asked)  # nothing held back
    watts = np.array(block_readings(client.query("R?"))) * SIMULATED_CPU.supply_v
    assert watts[-1] == pytest.approx(SIMULATED_CPU.watts("inference"), abs=RESOLUTION_W)
    link.close()


def test_a_device_that_stamps_its_samples_lifts_the_hold_when_it_falls_quiet(meter, client):
    link = SimulatedDeviceLink(f"127.0.0.1:{meter.port}")
    start_fast_acquisition(client)
    s0 = link.begin()
    link.defer([("inference", s0), ("idle", bench_now())])
    assert meter_told(meter) is not None
    deadline = time.monotonic() + 10 * FLUSH_S
    while meter_told(meter) is not None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert meter_told(meter) is None  # LIVE, without a word from the device's thread
    client.write("ABOR")
    client.query("R?")
    assert meter.late_readings == 0  # told past ABOR: no wait for the patience
    link.close()


def meter_told(meter: SimulatedMeter, timeout_s: float = 1.0) -> float | None:
    """The meter's hold once the device's first write has arrived."""
    deadline = time.monotonic() + timeout_s
    while meter.told_until is None and time.monotonic() < deadline:
        time.sleep(0.001)
    return meter.told_until


@pytest.mark.slow
def test_the_keysight_driver_counts_and_times_a_held_window_as_a_live_one(meter):
    pytest.importorskip("pyvisa_py")
    from hilbench.power.source import SampleBatch
    from hilbench_drivers.keysight34465a import Keysight34465A, Keysight34465ASettings

    settings = Keysight34465ASettings(
        function="current", range=RANGE_A, nplc=0.02, sample_interval_s=0.001,
        supply_voltage_v=SIMULATED_CPU.supply_v, max_window_s=10.0, timeout_s=5.0)
    driver = Keysight34465A(meter.resource, settings, visa_library="@py")
    driver.configure()
    driver.arm()
    link = SimulatedDeviceLink(f"127.0.0.1:{meter.port}")
    driver.start()
    device = threading.Thread(target=single_stream, args=(link, 1.0))
    device.start()
    batches: list[SampleBatch] = []
    while device.is_alive():
        time.sleep(0.05)
        batches.append(driver.read())  # readings up to FLUSH_S behind: fewer now, more later
    device.join()
    asked = time.monotonic()
    batches.append(driver.stop())  # the device's last samples are not told yet
    stopping_s = time.monotonic() - asked
    link.close()
    driver.close()
    assert driver.health().ok, driver.health()  # no reading missing by ABOR
    estimate = driver.interval_estimate
    assert estimate is not None
    watts = np.concatenate([b.values for b in batches]) * SIMULATED_CPU.supply_v
    t_first = meter.init_time
    assert t_first is not None
    starts = t_first + np.arange(len(watts)) * settings.sample_interval_s
    truth = np.array([meter.true_mean_power(t, t + settings.aperture_s) for t in starts])
    assert np.abs(watts - truth).max() < 3e-6 * RANGE_A * SIMULATED_CPU.supply_v / 2 + 1e-4
    print(f"driver stop() took {stopping_s * 1e3:.0f} ms")
    assert meter.late_readings == 0  # the link told past ABOR before the meter's patience ran out


def test_a_live_change_is_in_the_meter_before_the_device_says_it_is_done(meter, client):
    """The device tells its caller it is done only after telling the meter, so a caller that
    stops the meter at once (ABOR) stops one that already knows, even when the meter's host is
    slow to read the device's line (here 0.3 s): the readings up to ABOR show the idle device."""
    link = SimulatedDeviceLink(f"127.0.0.1:{meter.port}")
    link.state("solving")
    start_fast_acquisition(client)
    time.sleep(0.1)
    meter.parse_late("SIM:STAT", 0.3)
    done = bench_now()
    link.state("idle", done)
    assert bench_now() - done >= 0.3  # it waited for the meter to act on the line
    time.sleep(0.05)
    client.write("ABOR")
    assert client.query("*OPC?") == "1"
    watts = np.array(block_readings(client.query("R?"))) * SIMULATED_CPU.supply_v
    idle_tail = watts[-int(0.04 / INTERVAL_S):]
    assert idle_tail == pytest.approx(SIMULATED_CPU.watts("idle"), abs=3 * RESOLUTION_W)
    assert meter.late_changes == 0
    link.close()


def test_a_sample_begun_while_the_meter_is_slow_to_read_the_hold_is_read_as_it_ran(meter, client):
    """A live device begins a single-stream sample while the meter's host is slow to read the
    device's line (its HOLD is acted on 0.1 s late): a driver asking for readings meanwhile
    gets none computed past the sample's start from a timeline that does not know it, so the
    sample is read as the device ran it, not as idle (seen in CI: a block of a single-stream
    window read idle, refused as off the line through the others)."""
    link = SimulatedDeviceLink(f"127.0.0.1:{meter.port}")
    link.state("idle")
    start_fast_acquisition(client)
    t_first = meter.init_time
    assert t_first is not None
    time.sleep(0.05)
    meter.parse_late("SIM:HOLD", 0.1)
    s0 = link.begin()
    time.sleep(0.05)
    readings = block_readings(client.query("R?"))  # asked while the HOLD is still unread
    time.sleep(0.03)
    link.defer([("preprocessing", s0), ("idle", bench_now())])
    link.close()  # the rest told, live again
    time.sleep(0.05)
    client.write("ABOR")
    readings += block_readings(client.query("R?"))
    watts = np.array(readings) * SIMULATED_CPU.supply_v
    truth = truth_of(meter, t_first, len(watts))
    # the sample is in it
    assert truth.max() == pytest.approx(SIMULATED_CPU.watts("preprocessing"))
    assert truth.min() == pytest.approx(SIMULATED_CPU.watts("idle"))
    wrong = np.flatnonzero(np.abs(watts - truth) > RESOLUTION_W / 2 + 1e-4)
    assert wrong.size == 0, (f"{wrong.size} of {len(watts)} readings differ from the truth, "
                             f"first {(wrong[0] * INTERVAL_S + t_first - s0) * 1e3:+.1f} ms "
                             f"from the sample's start: {watts[wrong[0]]} W, true "
                             f"{truth[wrong[0]]} W")
    assert meter.late_changes == 0 and meter.late_readings == 0
