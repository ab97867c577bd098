"""The simulated 34465A over a real TCP socket: SCPI behaviour, readings, ground truth, faults."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import numpy as np
import pytest

from hilbench.clock import now
from hilbench.sim import SimulatedMeter
from hilbench.sim.meter_acquisition import (
    OVERLOAD,
    QUES_CURRENT_OVERLOAD,
    QUES_MEMORY_OVERFLOW,
)
from hilbench.sim.power_model import ARDUINO_NANO_33_BLE, DevicePowerModel
from hilbench_drivers.keysight34465a.settings import NPLC_RESOLUTION_PPM, min_sample_interval_s


class Client:
    """A bare SCPI client on a socket: what pyvisa-py's SOCKET resource does, minus pyvisa."""

    def __init__(self, port: int, timeout: float = 2.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.file = self.sock.makefile("rb")

    def write(self, line: str) -> None:
        self.sock.sendall(line.encode() + b"\n")

    def query(self, line: str) -> str:
        self.write(line)
        reply = self.file.readline()
        if not reply:
            raise ConnectionError("meter closed the connection")
        return reply.decode().rstrip("\n")

    def close(self) -> None:
        self.file.close()
        self.sock.close()


@pytest.fixture
def meter() -> Iterator[SimulatedMeter]:
    with SimulatedMeter(ARDUINO_NANO_33_BLE, seed=0) as m:
        yield m


@pytest.fixture
def client(meter: SimulatedMeter) -> Iterator[Client]:
    c = Client(meter.port)
    yield c
    c.close()


def configure_current(client: Client, interval: float, nplc: float = 0.2) -> None:
    for command in (
        "*RST",
        "CONF:CURR:DC 0.1",
        f"SENS:CURR:DC:NPLC {nplc}",
        "SENS:CURR:DC:ZERO:AUTO OFF",
        "TRIG:SOUR IMM",
        "SAMP:SOUR TIM",
        f"SAMP:TIM {interval}",
    ):
        client.write(command)
    assert client.query("SYST:ERR?") == '+0,"No error"'


def block_readings(reply: str) -> list[float]:
    assert reply.startswith("#")
    digits = int(reply[1])
    length = int(reply[2 : 2 + digits])
    payload = reply[2 + digits :]
    assert len(payload) == length
    return [float(v) for v in payload.split(",")] if payload else []


def test_identifies_as_a_34465a(client: Client) -> None:
    assert client.query("*IDN?").split(",")[1] == "34465A"


def test_errors_queue_in_order_then_no_error(client: Client) -> None:
    client.write("BOGUS:COMMAND 1")
    client.write("SENS:CURR:DC:NPLC 1000")
    assert client.query("SYST:ERR?") == '-113,"Undefined header"'
    assert client.query("SYST:ERR?").startswith("-222,")
    assert client.query("SYST:ERR?") == '+0,"No error"'


def test_long_and_short_forms_address_the_same_setting(client: Client) -> None:
    client.write("SENSe:CURRent:DC:NPLCycles 0.2")
    assert float(client.query("CURR:NPLC?")) == pytest.approx(0.2)
    client.write(":SENS:CURR:RANG:AUTO OFF;:SENS:CURR:RANG 0.01")
    assert float(client.query("SENSe:CURRent:DC:RANGe?")) == pytest.approx(0.01)
    assert client.query("SENS:CURR:DC:RANG:AUTO?") == "0"


def test_sample_timer_below_the_achievable_minimum_is_refused(client: Client) -> None:
    client.write("CONF:CURR:DC 0.1")
    client.write("SENS:CURR:DC:NPLC 10")
    client.write("SENS:CURR:DC:ZERO:AUTO ON")
    client.write("SAMP:TIM 1")
    client.write(f"SAMP:TIM {1 / 3}")  # 3 Hz: each reading takes 2 × 0.2 s at 50 Hz mains
    assert client.query("SYST:ERR?").startswith("-222,")
    assert float(client.query("SAMP:TIM?")) == 1.0
    assert float(client.query("SAMP:TIM? MIN")) == pytest.approx(
        min_sample_interval_s(10, 50, autozero=True)
    )
    assert float(client.query("SAMP:TIM? MIN")) > 0.4


def test_readings_follow_the_device_state_quantised(meter: SimulatedMeter, client: Client) -> None:
    interval, nplc = 0.01, 0.2
    configure_current(client, interval, nplc)
    client.write("SAMP:COUN 30")
    t = now()
    meter.set_state("preprocessing", t + 0.08)
    meter.set_state("inference", t + 0.16)
    client.write("INIT")
    readings = [float(v) for v in client.query("DATA:REM? 30,WAIT").split(",")]
    t_init = meter.init_time
    assert t_init is not None

    aperture = nplc / 50
    resolution = NPLC_RESOLUTION_PPM[nplc] * 1e-6 * 0.1
    starts = t_init + np.arange(30) * interval
    true_amps = [
        meter.true_mean_power(s, s + aperture) / ARDUINO_NANO_33_BLE.supply_v for s in starts
    ]
    assert readings == pytest.approx(true_amps, abs=resolution / 2 + 1e-15)
    # each state's own current shows up (apertures straddling a change read a mixture)
    for state in ("idle", "preprocessing", "inference"):
        amps = ARDUINO_NANO_33_BLE.watts(state) / ARDUINO_NANO_33_BLE.supply_v
        assert any(abs(r - amps) <= resolution for r in readings), state


def test_r_query_returns_a_block_and_erases_what_it_returned(client: Client) -> None:
    configure_current(client, 0.005, nplc=0.02)
    client.write("SAMP:COUN 20")
    client.write("INIT")
    client.query("DATA:REM? 1,WAIT")  # wait until readings flow, taking one
    client.write("ABOR")
    held = int(client.query("DATA:POIN?"))
    first = block_readings(client.query("R? 3"))
    assert len(first) == min(3, held)
    assert int(client.query("DATA:POIN?")) == held - len(first)
    block_readings(client.query("R?"))
    assert client.query("R?") == "#10"  # empty block


def test_reading_over_range_is_the_overload_value(meter: SimulatedMeter) -> None:
    hot = DevicePowerModel("hot", {"idle": 1.0}, supply_v=5.0)  # 200 mA on a 1 mA range
    with SimulatedMeter(hot) as m:
        c = Client(m.port)
        c.write("CONF:CURR:DC 0.001")
        c.write("SAMP:SOUR TIM")
        c.write("SENS:CURR:DC:NPLC 0.02")
        c.write("SAMP:TIM 0.01")
        c.write("SAMP:COUN 2")
        c.write("INIT")
        assert [float(v) for v in c.query("DATA:REM? 2,WAIT").split(",")] == [OVERLOAD] * 2
        assert int(c.query("STAT:QUES:EVEN?")) & QUES_CURRENT_OVERLOAD
        c.close()


def test_memory_overflow_loses_the_oldest_and_sets_the_status_bit() -> None:
    with SimulatedMeter(memory_readings=10) as m:
        c = Client(m.port)
        configure_current(c, 0.002, nplc=0.02)
        c.write("SAMP:COUN 1000")
        c.write("INIT")
        deadline = time.monotonic() + 5
        while m.readings_lost == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert m.readings_lost > 0
        # Stop acquiring first: while readings keep arriving into a full memory, each one
        # overflows again and sets the bit again between two queries (as on the instrument).
        c.write("ABOR")
        assert int(c.query("DATA:POIN?")) == 10
        assert int(c.query("STAT:QUES?")) & QUES_MEMORY_OVERFLOW
        assert int(c.query("STAT:QUES?")) == 0  # reading the event register clears it
        c.close()


def test_state_over_scpi_from_another_connection_and_truth_query(meter: SimulatedMeter) -> None:
    device, host = Client(meter.port), Client(meter.port)
    t0 = now()
    device.write("SIMulate:STATe inference")
    assert device.query("*OPC?") == "1"  # the other connection is not ordered with this one
    assert host.query("SIM:STAT?") == '"inference"'
    assert meter.state == "inference"
    t1 = now()
    truth = float(host.query(f"SIM:TRUTH? {t0!r},{t1!r}"))
    assert truth == pytest.approx(meter.true_mean_power(t0, t1), rel=1e-8)
    assert ARDUINO_NANO_33_BLE.watts("idle") <= truth <= ARDUINO_NANO_33_BLE.watts("inference")
    device.write("SIM:STAT no-such-state")
    assert device.query("SYST:ERR?").startswith("-224,")
    device.close()
    host.close()


def test_true_energy_adds_up_phase_by_phase(meter: SimulatedMeter) -> None:
    t = now() + 1.0
    meter.set_state("preprocessing", t)
    meter.set_state("inference", t + 0.043)
    meter.set_state("idle", t + 0.088)
    expected = 0.043 * 0.10072 + 0.045 * 0.10015
    assert meter.true_energy(t, t + 0.088) == pytest.approx(expected, rel=1e-9)
    with pytest.raises(KeyError, match="no state 'sleep'"):
        meter.set_state("sleep")


def test_injected_error_appears_when_its_command_arrives(client: Client, meter: SimulatedMeter):
    meter.inject_error("Settings conflict", code=-221, on_command="SENSe:CURRent:NPLC")
    client.write("CONF:CURR:DC 0.1")
    assert client.query("SYST:ERR?") == '+0,"No error"'
    client.write("SENS:CURR:DC:NPLC 1")
    assert client.query("SYST:ERR?") == '-221,"Settings conflict"'


def test_stalled_meter_answers_nothing_until_resumed(meter: SimulatedMeter) -> None:
    c = Client(meter.port, timeout=0.3)
    meter.stall()
    with pytest.raises(TimeoutError):
        c.query("*IDN?")
    meter.resume()
    c.close()
    c = Client(meter.port)
    assert "34465A" in c.query("*IDN?")
    c.close()


def test_dropped_connections_end_but_the_meter_accepts_new_ones(meter: SimulatedMeter) -> None:
    c = Client(meter.port)
    assert c.query("*OPC?") == "1"
    meter.drop_connections()
    with pytest.raises((ConnectionError, OSError)):
        c.query("*OPC?")
    c.close()
    again = Client(meter.port)
    assert again.query("*OPC?") == "1"
    again.close()


def test_a_calibration_error_scales_and_shifts_every_reading() -> None:
    # The bench draws a meter's gain and offset error within spec; the readings must carry it.
    gain, offset = 0.01, 2e-4
    with SimulatedMeter(ARDUINO_NANO_33_BLE, gain_error=gain, offset_error=offset) as meter:
        client = Client(meter.port)
        configure_current(client, 0.01, 0.2)
        client.write("SAMP:COUN 10")
        client.write("INIT")
        readings = [float(v) for v in client.query("DATA:REM? 10,WAIT").split(",")]
        client.sock.close()
    true_amps = ARDUINO_NANO_33_BLE.watts("idle") / ARDUINO_NANO_33_BLE.supply_v
    resolution = NPLC_RESOLUTION_PPM[0.2] * 1e-6 * 0.1
    assert readings == pytest.approx([true_amps * (1 + gain) + offset] * 10,
                                     abs=resolution / 2 + 1e-15)
