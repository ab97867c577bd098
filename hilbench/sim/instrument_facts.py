"""What a simulated instrument takes from its instrument plugin: the real instrument's facts
(ranges, resolutions, reading time). The plugin's instrument class declares them as ``facts``,
so one description serves the driver that talks to the instrument and the simulator that
imitates it, and the core imports no driver (it finds the class by its entry-point name)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Protocol

from hilbench.power.registry import instrument_class
from hilbench.power.source import InstrumentFault

# The instrument the simulated bench meter (hilbench.sim.meter) imitates, by entry-point name.
BENCH_METER = "keysight34465a"


class MeterFacts(Protocol):
    """A bench DMM's facts, as its simulated twin needs them."""

    current_ranges_a: tuple[float, ...]
    voltage_ranges_v: tuple[float, ...]
    nplc_resolution_ppm: Mapping[float, float]  # resolution of each NPLC setting, ppm of range

    def min_sample_interval_s(self, nplc: float, line_frequency_hz: float,
                              autozero: bool) -> float: ...


@cache
def meter_facts(instrument: str = BENCH_METER) -> MeterFacts:
    """The facts the instrument plugin ``instrument`` declares (its class's ``facts``)."""
    facts = getattr(instrument_class(instrument), "facts", None)
    if facts is None:
        raise InstrumentFault(f"instrument driver {instrument!r} declares no facts for its "
                              "simulated twin (a `facts` attribute on its class)")
    return facts
