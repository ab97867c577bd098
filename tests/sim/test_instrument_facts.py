"""The simulated bench meter takes the 34465A's facts (ranges, resolutions, reading time) from
the instrument plugin, found by its entry-point name: the simulator and the driver share one
description and the core imports no driver."""

from __future__ import annotations

import pytest

from hilbench.power.source import InstrumentFault
from hilbench.sim import instrument_facts
from hilbench.sim.instrument_facts import meter_facts
from hilbench_drivers.keysight34465a import Keysight34465A
from hilbench_drivers.keysight34465a import settings as keysight


def test_the_meter_facts_are_the_drivers():
    facts = meter_facts()
    assert facts is Keysight34465A.facts
    assert facts.current_ranges_a == keysight.CURRENT_RANGES_A
    assert facts.voltage_ranges_v == keysight.VOLTAGE_RANGES_V
    assert dict(facts.nplc_resolution_ppm) == keysight.NPLC_RESOLUTION_PPM
    assert facts.min_sample_interval_s(10, 50, True) == keysight.min_sample_interval_s(10, 50, True)


def test_an_instrument_without_facts_is_named(monkeypatch):
    monkeypatch.setattr(instrument_facts, "instrument_class", lambda name: object)
    meter_facts.cache_clear()
    try:
        with pytest.raises(InstrumentFault, match="'keysight34465a' declares no facts"):
            meter_facts()
    finally:
        meter_facts.cache_clear()


def test_an_instrument_not_installed_is_named():
    with pytest.raises(InstrumentFault, match="no instrument driver named 'nosuchmeter'"):
        meter_facts("nosuchmeter")
