"""The Keysight 34465A driver against a pyvisa-sim dialogue, and its reply parsing.

The dialogue file ships with the driver (``keysight34465a-sim.yaml``); each simulated device
there is a 34465A with one fault, picked by resource name.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hilbench_drivers.keysight34465a as package
from hilbench.power.source import PowerSourceError
from hilbench_drivers.keysight34465a import Keysight34465A, Keysight34465ASettings
from hilbench_drivers.keysight34465a.scpi import (
    ReplyError,
    mask_overloads,
    parse_block,
    parse_error,
    parse_readings,
)

pytest.importorskip("pyvisa_sim")

SIM_YAML = Path(package.__file__).with_name("keysight34465a-sim.yaml")
SETTINGS = Keysight34465ASettings(
    function="current",
    range=0.1,
    nplc=1,
    sample_interval_s=0.1,
    supply_voltage_v=5.0,
    timeout_s=0.5,
)
OK_RESOURCES = [
    "TCPIP::10.0.0.5::INSTR",
    "TCPIP::10.0.0.5::5025::SOCKET",
    "USB0::0x2A8D::0x0101::MY00000001::INSTR",
    "GPIB0::22::INSTR",
]


def simulated(resource: str) -> Keysight34465A:
    return Keysight34465A(resource, SETTINGS, visa_library=f"{SIM_YAML}@sim")


@pytest.mark.parametrize("resource", OK_RESOURCES)
def test_acquires_over_any_resource_kind(resource: str) -> None:
    driver = simulated(resource)
    driver.configure()
    driver.arm()
    driver.start()
    batch = driver.read()
    driver.stop()
    driver.close()
    assert batch.values.tolist() == [0.0158, 0.0158, 0.02003, 0.02003]
    assert driver.t0 is not None
    assert batch.t == pytest.approx(driver.t0 + np.arange(4) * 0.1)
    assert driver.health().ok
    assert driver.info.unit == "A" and driver.info.supply_voltage_v == 5.0


def test_samples_continue_the_time_base_across_reads() -> None:
    driver = simulated(OK_RESOURCES[0])
    driver.configure()
    driver.arm()
    driver.start()
    first, second = driver.read(), driver.read()
    driver.close()
    assert second.t[0] == pytest.approx(first.t[-1] + 0.1)


def test_overload_reading_is_nan_and_counted() -> None:
    driver = simulated("TCPIP::10.0.0.6::INSTR")
    driver.configure()
    driver.arm()
    driver.start()
    batch = driver.read()
    driver.close()
    assert np.isnan(batch.values[1])
    assert batch.values[[0, 2]].tolist() == [0.0158, 0.0158]
    health = driver.health()
    assert health.overloads == 1
    assert not health.ok


def test_memory_overflow_status_is_reported() -> None:
    driver = simulated("TCPIP::10.0.0.7::INSTR")
    driver.configure()
    driver.arm()
    driver.start()
    driver.read()
    driver.close()
    health = driver.health()
    assert health.overflow
    assert any("overflowed" in m for m in health.messages)


def test_scpi_error_names_the_command_that_caused_it() -> None:
    driver = simulated("TCPIP::10.0.0.9::INSTR")
    with pytest.raises(PowerSourceError) as err:
        driver.configure()
    driver.close()
    assert '-113,"Undefined header"' in str(err.value)
    assert "'SENS:CURR:DC:ZERO:AUTO OFF'" in str(err.value)
    assert "TCPIP::10.0.0.9::INSTR" in str(err.value)


def test_mains_frequency_mismatch_is_refused() -> None:
    driver = simulated("TCPIP::10.0.0.8::INSTR")
    with pytest.raises(PowerSourceError, match="60 Hz mains but the settings say 50 Hz"):
        driver.configure()
    driver.close()


def test_other_models_are_refused() -> None:
    driver = simulated("TCPIP::10.0.0.10::INSTR")
    with pytest.raises(PowerSourceError, match="34461A"):
        driver.configure()
    driver.close()


# --- settings -------------------------------------------------------------------------------


def test_settings_reject_values_the_instrument_does_not_have() -> None:
    with pytest.raises(ValueError, match=r"range 0\.2 is not a 34465A current range"):
        Keysight34465ASettings(range=0.2, supply_voltage_v=5)
    with pytest.raises(ValueError, match="need dig_option=True"):
        Keysight34465ASettings(nplc=0.001, sample_interval_s=0.01, supply_voltage_v=5)
    with pytest.raises(ValueError, match="supply_voltage_v"):
        Keysight34465ASettings(function="current")


def test_settings_from_mapping_names_unknown_keys() -> None:
    with pytest.raises(ValueError, match=r"campaign\.toml \[power\]: .*sample_rate"):
        Keysight34465ASettings.from_mapping(
            {"sample_rate": 3, "supply_voltage_v": 5}, where="campaign.toml [power]"
        )
    s = Keysight34465ASettings.from_mapping({"supply_voltage_v": 5, "domains": ["board"]})
    assert s.domains == ("board",)


def test_from_config_builds_a_working_driver_and_names_bad_settings() -> None:
    driver = Keysight34465A.from_config(
        OK_RESOURCES[0],
        {"range": 0.1, "nplc": 1, "sample_interval_s": 0.1, "supply_voltage_v": 5.0},
        visa_library=f"{SIM_YAML}@sim",
    )
    driver.configure()
    driver.close()
    assert driver.idn is not None and "34465A" in driver.idn
    with pytest.raises(ValueError, match=r"34465A at TCPIP::10\.0\.0\.5::INSTR: .*nplc 7"):
        Keysight34465A.from_config(OK_RESOURCES[0], {"nplc": 7, "supply_voltage_v": 5})


def test_shunt_voltage_is_reported_in_amps() -> None:
    s = Keysight34465ASettings(function="voltage", range=0.1, shunt_ohms=0.5, supply_voltage_v=3.3)
    driver = Keysight34465A("TCPIP::10.0.0.5::INSTR", s)
    assert driver.info.unit == "A"
    assert driver.info.supply_voltage_v == 3.3


# --- reply parsing --------------------------------------------------------------------------


def test_block_parsing() -> None:
    assert parse_block("#15a,b,c") == "a,b,c"
    assert parse_block("#10") == ""
    assert parse_block("#0a,b") == "a,b"
    with pytest.raises(ReplyError, match="announces 9 bytes but 5 arrived"):
        parse_block("#19a,b,c")
    with pytest.raises(ReplyError, match="expected a '#' block"):
        parse_block("+1.0,+2.0")


def test_readings_and_overload_masking() -> None:
    raw = parse_readings("+1.5E-02,-9.9E+37,+9.9E+37,+9.91E+37,+2E-02")
    values, overloads = mask_overloads(raw)
    assert overloads == 3
    assert values[0] == 0.015 and values[4] == 0.02
    assert np.isnan(values[1:4]).all()
    with pytest.raises(ReplyError, match="'oops' is not a number"):
        parse_readings("+1.0,oops")


def test_error_entry_parsing() -> None:
    assert parse_error('+0,"No error"') == (0, "No error")
    assert parse_error('-222,"Data out of range"') == (-222, "Data out of range")
    with pytest.raises(ReplyError):
        parse_error("garbage")
