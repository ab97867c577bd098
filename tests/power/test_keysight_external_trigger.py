"""Keysight 34465A: a timed burst started by the device's marker edge on Ext Trig (TRIG:SOUR
EXT, SAMP:SOUR TIM), the DIG option's short apertures only where *OPT? reports it, and the
driver's conformance against the simulated meter."""

from __future__ import annotations

import time

import pytest

from hilbench.power.source import PowerSourceError
from hilbench.sim.meter import SimulatedMeter
from hilbench.testing.instrument_conformance import assert_conformant
from hilbench_drivers.keysight34465a import Keysight34465A, Keysight34465ASettings

CURRENT = {"function": "current", "range": 0.1, "supply_voltage_v": 5.0}


def _source(meter: SimulatedMeter, **settings: object) -> Keysight34465A:
    return Keysight34465A.from_config(meter.resource, {**CURRENT, **settings},
                                      visa_library="@py")


def test_keysight_is_conformant_against_the_simulated_meter():
    with SimulatedMeter(seed=1) as meter:

        def stimulus() -> None:
            meter.set_state("inference")
            time.sleep(0.05)
            meter.set_state("idle")

        report = assert_conformant(
            lambda: _source(meter, nplc=0.02, sample_interval_s=0.002, max_window_s=60),
            expect_simulated=True, stimulus=stimulus)
    assert report.samples > 100


def test_an_external_trigger_starts_the_burst_at_the_marker_edge():
    with SimulatedMeter(seed=1, trigger_latency_s=1e-6) as meter:
        source = _source(meter, nplc=0.02, sample_interval_s=0.001, max_window_s=60,
                         trigger="external", trigger_latency_s=2e-6)
        source.configure()
        source.arm()
        source.start()
        time.sleep(0.05)
        assert len(source.read()) == 0  # waiting for the edge
        t_edge = meter.set_state("inference")
        meter.execute(f"SIM:MARK 1,{t_edge!r}")
        time.sleep(0.1)
        batch = source.read()
        batch_end = source.stop()
        (edges,) = source.markers()
        info = source.info
        source.close()
    assert len(batch) + len(batch_end) > 50
    assert edges.index.tolist() == [0] and edges.level.tolist() == [1]
    # every reading is of the inference state: the burst began after the edge, not before
    assert batch.values[0] * 5.0 == pytest.approx(0.10015, rel=2e-3)
    assert info.marker_latency_s == 2e-6 and info.marker_channels == ("ext",)


def test_an_external_trigger_that_never_comes_is_reported():
    with SimulatedMeter(seed=1) as meter:
        source = _source(meter, nplc=0.02, sample_interval_s=0.001, max_window_s=60,
                         trigger="external")
        source.configure()
        source.arm()
        source.start()
        time.sleep(0.05)
        source.stop()
        assert any("no edge on Ext Trig" in m for m in source.health().messages)
        source.close()


def test_dig_apertures_need_the_option_the_meter_reports():
    settings = {"nplc": 0.001, "dig_option": True, "sample_interval_s": 0.0001,
                "max_window_s": 10}
    with SimulatedMeter(options=("MEM",)) as meter:
        source = _source(meter, **settings)
        with pytest.raises(PowerSourceError, match="without DIG"):
            source.configure()
        source.close()
    with SimulatedMeter(options=("DIG", "MEM")) as meter:
        source = _source(meter, **settings)
        source.configure()
        assert "DIG" in source.options
        source.close()
    assert Keysight34465ASettings(**{**CURRENT, **settings}).aperture_s == pytest.approx(2e-5)
