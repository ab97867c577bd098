"""What the LPM01A is asked to do, validated before any I/O.

Accuracy: ST UM2243 (X-NUCLEO-LPM01A user manual, Rev 2), §9 "Static current measurement
principle": 1 nA to 200 mA "with an accuracy of better than 2 %"; §10 "Dynamic current
measurement principle": 100 nA to 50 mA "with an accuracy in the range of 2 %" (three 12-bit
ADCs at 3.2 MS/s, 100 kHz bandwidth). Hence ``accuracy_relative = 0.02``. The supply voltage it
sets (1.8–3.3 V) turns current into watts. ``marker_latency_s``, how late a D7 edge can be
reported, is stated nowhere public: 10 µs is a placeholder to replace with a loop-back
measurement of your board.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hilbench.power.source import settings_from_mapping

from .protocol import (
    ASCII_MAX_UNLIMITED_HZ,
    BAUD_RATE,
    ENERGY_MAX_HZ,
    FREQUENCIES_HZ,
    VOLTAGE_RANGE_V,
)


@dataclass(frozen=True)
class Lpm01aSettings:
    rate_hz: int = 1_000
    output: Literal["current", "energy"] = "current"
    supply_voltage_v: float = 3.3
    data_format: Literal["auto", "ascii_dec", "bin_hexa"] = "auto"
    event_input: Literal["d7", "none"] = "d7"
    event_edge: Literal["ris", "fal"] = "fal"  # as MLPerf Tiny configures it
    marker_latency_s: float = 10e-6
    accuracy_relative: float = 0.02
    accuracy_absolute: float = 0.0
    baud: int = BAUD_RATE
    timeout_s: float = 2.0
    domains: tuple[str, ...] = ("target supply",)

    # complexity: a flat list of independent one-line field checks
    def __post_init__(self) -> None:  # noqa: C901
        if self.rate_hz not in FREQUENCIES_HZ:
            raise ValueError(f"rate_hz {self.rate_hz!r} is not a PowerShield frequency "
                             f"(allowed: {', '.join(map(str, FREQUENCIES_HZ))})")
        if self.output not in ("current", "energy"):
            raise ValueError(f"output must be 'current' or 'energy', got {self.output!r}")
        if self.output == "energy" and self.rate_hz > ENERGY_MAX_HZ:
            raise ValueError(f"output 'energy' integrates at most {ENERGY_MAX_HZ} Hz")
        lo, hi = VOLTAGE_RANGE_V
        if not lo <= self.supply_voltage_v <= hi:
            raise ValueError(f"supply_voltage_v must be in [{lo}, {hi}] V, got "
                             f"{self.supply_voltage_v!r}")
        if self.data_format not in ("auto", "ascii_dec", "bin_hexa"):
            raise ValueError("data_format must be 'auto', 'ascii_dec' or 'bin_hexa'")
        if self.format == "ascii_dec" and self.rate_hz > ASCII_MAX_UNLIMITED_HZ:
            raise ValueError(f"ascii_dec above {ASCII_MAX_UNLIMITED_HZ} Hz is limited to a "
                             "second or less; use bin_hexa (or data_format = 'auto')")
        if self.event_input not in ("d7", "none") or self.event_edge not in ("ris", "fal"):
            raise ValueError("event_input must be 'd7' or 'none', event_edge 'ris' or 'fal'")
        for name in ("marker_latency_s", "accuracy_relative", "accuracy_absolute"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be 0 or more")
        if not self.accuracy_relative + self.accuracy_absolute > 0:
            raise ValueError("state the accuracy: accuracy_relative or accuracy_absolute > 0")
        if not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s!r}")

    @property
    def format(self) -> str:
        if self.data_format != "auto":
            return self.data_format
        return "ascii_dec" if self.rate_hz <= ASCII_MAX_UNLIMITED_HZ else "bin_hexa"

    @property
    def sample_period_s(self) -> float:
        return 1.0 / self.rate_hz

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], where: str = "settings") -> Lpm01aSettings:
        return settings_from_mapping(cls, values, where=where, instrument="LPM01A",
                                     tuples=("domains",))
