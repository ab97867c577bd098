"""What the JS220 is asked to do, validated before any I/O.

Accuracy: the JS220 User's Guide (Jetperch, rev. 1.3, 2022-10-25, section "Specifications",
tables "Current measurement specifications" and "Voltage measurement specifications") states
a gain error and an offset per current range and for voltage. The defaults below are a
deliberately conservative placeholder for power (0.5 % of reading), like the Keysight driver's:
put the figures of your range and your unit's calibration certificate into
``accuracy_relative`` and ``accuracy_absolute``. ``marker_latency_s`` bounds how late a GPI
edge shows against the current and voltage samples; 1 µs (two 2 MHz GPI samples) is a
placeholder too: measure it with a loop-back (GPO into GPI) before relying on windows shorter
than a few hundred samples.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from hilbench.power.source import settings_from_mapping

FS_OPTIONS = (1_000_000, 500_000, 200_000, 100_000, 50_000, 20_000, 10_000, 5_000, 2_000,
              1_000, 500, 200, 100, 50, 20, 10, 5, 2, 1)  # h/fs for i, v, p (driver's list)
FP_OPTIONS = (10_000, 5_000, 2_000, 1_000, 500, 200, 100, 50, 20, 10, 5, 2, 1)
GPI_INPUTS = (0, 1, 2, 3, 7)  # 7 is the Trigger BNC used as an input
CURRENT_RANGE_MODES = ("auto", "manual", "off")
VOLTAGE_RANGES = ("15 V", "2 V")


@dataclass(frozen=True)
class Js220Settings:
    """Acquisition settings; ``ValueError`` naming the field on a bad one."""

    rate_hz: int = 1_000_000
    quantity: Literal["power", "current"] = "power"
    supply_voltage_v: float | None = None  # required for quantity = "current"
    marker_gpi: tuple[int, ...] = (0,)
    marker_latency_s: float = 1e-6
    publish_rate_hz: int = 20
    current_range_mode: str = "auto"
    voltage_range: str = "15 V"
    accuracy_relative: float = 0.005
    accuracy_absolute: float = 0.0
    time_map_uncertainty_s: float = 100e-6  # host-time sync of the JS220's counter
    stop_wait_s: float = 1.0  # how long stop() waits for samples up to the stop moment
    max_buffer_s: float = 30.0  # undrained data beyond this is dropped (and says so)
    domains: tuple[str, ...] = ("total system",)

    # complexity: a flat list of independent one-line field checks
    def __post_init__(self) -> None:  # noqa: C901
        if self.rate_hz not in FS_OPTIONS:
            raise ValueError(f"rate_hz {self.rate_hz!r} is not a JS220 rate for current, "
                             f"voltage and power (allowed: {', '.join(map(str, FS_OPTIONS))})")
        if self.quantity not in ("power", "current"):
            raise ValueError(f"quantity must be 'power' or 'current', got {self.quantity!r}")
        if self.quantity == "current" and not (self.supply_voltage_v or 0) > 0:
            raise ValueError("supply_voltage_v (> 0) is required with quantity = 'current'")
        bad = [g for g in self.marker_gpi if g not in GPI_INPUTS]
        if bad or len(set(self.marker_gpi)) != len(self.marker_gpi):
            raise ValueError(f"marker_gpi {list(self.marker_gpi)!r}: each must be one of "
                             f"{GPI_INPUTS}, once")
        if self.publish_rate_hz not in FP_OPTIONS:
            raise ValueError(f"publish_rate_hz {self.publish_rate_hz!r} (allowed: "
                             f"{', '.join(map(str, FP_OPTIONS))})")
        if self.current_range_mode not in CURRENT_RANGE_MODES:
            raise ValueError(f"current_range_mode must be one of {CURRENT_RANGE_MODES}")
        if self.voltage_range not in VOLTAGE_RANGES:
            raise ValueError(f"voltage_range must be one of {VOLTAGE_RANGES}")
        for name in ("marker_latency_s", "accuracy_relative", "accuracy_absolute",
                     "time_map_uncertainty_s", "stop_wait_s"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be 0 or more, got {getattr(self, name)!r}")
        if not self.accuracy_relative + self.accuracy_absolute > 0:
            raise ValueError("state the accuracy: accuracy_relative or accuracy_absolute > 0")
        if not self.max_buffer_s > 0:
            raise ValueError(f"max_buffer_s must be > 0, got {self.max_buffer_s!r}")

    @property
    def sample_period_s(self) -> float:
        return 1.0 / self.rate_hz

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], where: str = "settings") -> Js220Settings:
        """From a campaign's instrument table; unknown keys are refused by name."""
        return settings_from_mapping(cls, values, where=where, instrument="JS220",
                                     tuples=("marker_gpi", "domains"))
