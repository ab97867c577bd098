"""What the 34465A is asked to do, validated before any I/O.

The one check that matters most: the requested sample interval must be achievable. A reading
integrates for NPLC / line frequency seconds, and with autozero ON the meter also takes a zero
reading each time, doubling that. Asking for more readings per second than that allows would
make the meter's timer slip (and the timestamps lie), so such settings are refused here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

CURRENT_RANGES_A = (1e-6, 10e-6, 100e-6, 1e-3, 10e-3, 100e-3, 1.0, 3.0, 10.0)
VOLTAGE_RANGES_V = (0.1, 1.0, 10.0, 100.0, 1000.0)
NPLC_STANDARD = (0.02, 0.06, 0.2, 1.0, 10.0, 100.0)
NPLC_DIG_OPTION = (0.001, 0.002, 0.006)  # only with the DIG (digitizing) option
LINE_FREQUENCIES_HZ = (50.0, 60.0)
READING_OVERHEAD_S = 10e-6  # per-reading dead time besides integration (approximate)
MAX_SAMPLE_COUNT = 1_000_000_000  # SAMPle:COUNt maximum on the 34465A
MAX_SAMPLE_TIMER_S = 3600.0
# The resolution each NPLC gives, in ppm of range (34465A data sheet; the DIG option's three).
NPLC_RESOLUTION_PPM = {
    0.001: 30.0,
    0.002: 15.0,
    0.006: 6.0,
    0.02: 3.0,
    0.06: 1.5,
    0.2: 0.7,
    1.0: 0.3,
    10.0: 0.1,
    100.0: 0.03,
}


def min_sample_interval_s(nplc: float, line_frequency_hz: float, autozero: bool) -> float:
    """Shortest achievable time between readings for these settings (autorange off)."""
    integration = nplc / line_frequency_hz
    return integration * (2 if autozero else 1) + READING_OVERHEAD_S


@dataclass(frozen=True)
class Facts:
    """The 34465A's facts as its simulated twin takes them (``Keysight34465A.facts``, read by
    :mod:`hilbench.sim.instrument_facts`): one description for the driver and the simulator."""

    current_ranges_a: tuple[float, ...] = CURRENT_RANGES_A
    voltage_ranges_v: tuple[float, ...] = VOLTAGE_RANGES_V
    nplc_resolution_ppm: Mapping[float, float] = field(
        default_factory=lambda: dict(NPLC_RESOLUTION_PPM))

    def min_sample_interval_s(self, nplc: float, line_frequency_hz: float,
                              autozero: bool) -> float:
        return min_sample_interval_s(nplc, line_frequency_hz, autozero)


FACTS = Facts()


@dataclass(frozen=True)
class Keysight34465ASettings:
    """Acquisition settings; raises ``ValueError`` naming the bad field on construction.

    ``supply_voltage_v`` turns amps into watts (watts = amps × supply volts) and is required
    when measuring current, or voltage across a shunt (``shunt_ohms``), whose readings are
    converted to amps. ``accuracy_reading`` and ``accuracy_range`` are the ± fractions of
    reading and of range from the unit's data sheet or calibration certificate for the chosen
    range and NPLC; the defaults are deliberately conservative placeholders.
    """

    function: Literal["current", "voltage"] = "current"
    range: float = 0.1
    nplc: float = 1.0
    autozero: bool = False
    line_frequency_hz: float = 50.0
    sample_interval_s: float = 0.1
    supply_voltage_v: float | None = None
    shunt_ohms: float | None = None
    chunk: int = 10_000
    timeout_s: float = 5.0
    max_window_s: float = 24 * 3600.0
    dig_option: bool = False
    # "external": each acquisition waits for an edge on the rear-panel Ext Trig input (the
    # device's marker pin), then takes its timed burst (TRIG:SOUR EXT, SAMP:SOUR TIM). The edge
    # is then sample 0 of the burst, late by at most trigger_latency_s: a placeholder bound to
    # replace with the unit's data-sheet figure or a loop-back measurement.
    trigger: Literal["immediate", "external"] = "immediate"
    trigger_slope: Literal["positive", "negative"] = "positive"
    trigger_latency_s: float = 2e-6
    accuracy_reading: float = 0.0005
    accuracy_range: float = 0.0001
    domains: tuple[str, ...] = ("total system",)

    # complexity: a flat list of independent one-line field checks
    def __post_init__(self) -> None:  # noqa: C901
        if self.function not in ("current", "voltage"):
            raise ValueError(f"function must be 'current' or 'voltage', got {self.function!r}")
        ranges = CURRENT_RANGES_A if self.function == "current" else VOLTAGE_RANGES_V
        if not any(math.isclose(self.range, r, rel_tol=1e-9) for r in ranges):
            raise ValueError(
                f"range {self.range!r} is not a 34465A {self.function} range "
                f"(allowed: {', '.join(f'{r:g}' for r in ranges)})"
            )
        allowed_nplc = NPLC_STANDARD + (NPLC_DIG_OPTION if self.dig_option else ())
        if not any(math.isclose(self.nplc, n, rel_tol=1e-9) for n in allowed_nplc):
            hint = "" if self.dig_option else " (0.001, 0.002, 0.006 need dig_option=True)"
            raise ValueError(
                f"nplc {self.nplc!r} is not allowed "
                f"(allowed: {', '.join(f'{n:g}' for n in sorted(allowed_nplc))}){hint}"
            )
        if self.trigger not in ("immediate", "external"):
            raise ValueError(f"trigger must be 'immediate' or 'external', got {self.trigger!r}")
        if self.trigger_slope not in ("positive", "negative"):
            raise ValueError(f"trigger_slope must be 'positive' or 'negative', "
                             f"got {self.trigger_slope!r}")
        if not self.trigger_latency_s >= 0:
            raise ValueError(f"trigger_latency_s must be 0 or more, got {self.trigger_latency_s!r}")
        if self.line_frequency_hz not in LINE_FREQUENCIES_HZ:
            raise ValueError(f"line_frequency_hz must be 50 or 60, got {self.line_frequency_hz!r}")
        self._check_sample_interval()
        needs_supply = self.function == "current" or self.shunt_ohms is not None
        if needs_supply and (self.supply_voltage_v is None or self.supply_voltage_v <= 0):
            raise ValueError(
                "supply_voltage_v (> 0) is required when measuring current "
                f"(watts = amps × supply volts), got {self.supply_voltage_v!r}"
            )
        if self.shunt_ohms is not None and (self.function != "voltage" or not self.shunt_ohms > 0):
            raise ValueError(
                f"shunt_ohms {self.shunt_ohms!r} needs function='voltage' and a value > 0"
            )
        if not 1 <= self.chunk <= 1_000_000:
            raise ValueError(f"chunk must be between 1 and 1000000 readings, got {self.chunk!r}")
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s!r}")
        if not self.max_window_s > 0 or self.sample_count > MAX_SAMPLE_COUNT:
            raise ValueError(
                f"max_window_s {self.max_window_s!r} at {self.sample_interval_s} s per reading "
                f"needs {self.sample_count} readings; the 34465A takes at most {MAX_SAMPLE_COUNT}"
            )

    def _check_sample_interval(self) -> None:
        if not 0 < self.sample_interval_s <= MAX_SAMPLE_TIMER_S:
            raise ValueError(
                f"sample_interval_s must be in (0, {MAX_SAMPLE_TIMER_S:g}] s, "
                f"got {self.sample_interval_s!r}"
            )
        minimum = self.min_sample_interval_s
        if self.sample_interval_s < minimum:
            autozero = "ON" if self.autozero else "OFF"
            advice = "lower nplc" + (" or turn autozero off" if self.autozero else "")
            raise ValueError(
                f"sample_interval_s {self.sample_interval_s:g} s "
                f"({1 / self.sample_interval_s:.3g} Hz) is impossible at NPLC {self.nplc:g}, "
                f"{self.line_frequency_hz:g} Hz mains, autozero {autozero}: each reading takes "
                f"{minimum:.6g} s (at most {1 / minimum:.4g} Hz); {advice}"
            )

    @property
    def min_sample_interval_s(self) -> float:
        return min_sample_interval_s(self.nplc, self.line_frequency_hz, self.autozero)

    @property
    def max_rate_hz(self) -> float:
        """The highest reading rate these settings can achieve."""
        return 1.0 / self.min_sample_interval_s

    @property
    def aperture_s(self) -> float:
        """How long each reading integrates the input."""
        return self.nplc / self.line_frequency_hz

    @property
    def resolution(self) -> float:
        """One reading's least significant step in the reading's unit (A, or V across the
        shunt turned into A): the data sheet's ppm of range at this NPLC."""
        ppm = min(NPLC_RESOLUTION_PPM.items(), key=lambda item: abs(item[0] - self.nplc))[1]
        return ppm * 1e-6 * self.range / (self.shunt_ohms or 1.0)

    @property
    def sample_count(self) -> int:
        """Readings to arm for: enough for ``max_window_s`` plus one."""
        return math.ceil(self.max_window_s / self.sample_interval_s) + 1

    @classmethod
    def from_mapping(
        cls, values: dict[str, Any], where: str = "settings"
    ) -> Keysight34465ASettings:
        """Build from a config table (e.g. campaign.toml), rejecting unknown keys by name."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"{where}: unknown Keysight 34465A setting(s) {', '.join(unknown)} "
                f"(known: {', '.join(sorted(known))})"
            )
        values = dict(values)
        if "domains" in values:
            values["domains"] = tuple(values["domains"])
        try:
            return cls(**values)
        except ValueError as err:
            raise ValueError(f"{where}: {err}") from None
