"""The ``power`` map a reply may carry: a device's or agent's own power reading (RAPL, an
on-board monitor, Lava probes) over the work the reply reports.

It is the agent's claim about itself, never the orchestrator's measurement: the procedures
label every figure made from it as the agent's report and use it as the headline only where no
instrument the orchestrator reads measured the same window. Its uncertainty is what the source
states (``accuracy``), or not stated at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import msgspec

from hilbench.contracts.base import Contract, Count, Detail, Finite, Name, Seconds, Text

Fraction = Annotated[float, msgspec.Meta(ge=0, le=1, description="fraction 0 … 1")]
Watts = Annotated[float, msgspec.Meta(ge=0, le=1e6, description="W, 0 … 1e6")]
Rate = Annotated[float, msgspec.Meta(gt=0, le=1e9, description="Hz, (0, 1e9]")]
MAX_RAILS = 64
MAX_READINGS = 1_000_000


class StatedAccuracy(Contract, kw_only=True):
    """What the source's maker states of its readings: ± (`relative` × reading +
    `absolute_w`), and one reading's least significant step `resolution_w`."""

    relative: Fraction = 0.0
    absolute_w: Watts = 0.0
    resolution_w: Watts = 0.0
    basis: Text | None = None  # where it is stated: a data sheet, a calibration certificate

    @property
    def stated(self) -> bool:
        """A bound was given (a resolution alone says how finely, not how truly, it reads)."""
        return self.relative > 0 or self.absolute_w > 0


class PowerReport(Contract, kw_only=True):
    """A device's own power reading over the reply's work (the agent's claim, labelled as
    such). `measured` false says why not in `reason`; `accuracy` is the bound its source
    states (a text: the source states none, and says so)."""

    measured: bool = False
    source: Name | None = None
    reason: Text | None = None
    avg_power_w: Finite | None = None
    energy_j: Finite | None = None
    duration_s: Seconds | None = None
    domains: Annotated[list[Name], msgspec.Meta(max_length=MAX_RAILS)] | dict[
        str, Finite] | None = None
    accuracy: StatedAccuracy | Text | None = None
    simulated: bool = False
    # An on-board monitor's readings over the window, per rail, and its rate.
    samples_w: dict[str, Annotated[list[Finite], msgspec.Meta(
        max_length=MAX_READINGS)]] | None = None
    rails_w: dict[str, Finite] | None = None
    rate_hz: Rate | None = None
    samples: Count | None = None
    detail: Detail = msgspec.field(default_factory=dict)

    @property
    def stated_accuracy(self) -> StatedAccuracy | None:
        """The numeric bound the source states (None: it states none)."""
        accuracy = self.accuracy
        return accuracy if isinstance(accuracy, StatedAccuracy) and accuracy.stated else None

    @property
    def resolution_w(self) -> float:
        """One reading's step as stated (0: not stated)."""
        accuracy = self.accuracy
        return accuracy.resolution_w if isinstance(accuracy, StatedAccuracy) else 0.0

    @property
    def usable(self) -> bool:
        """A measured reading with an average power to show."""
        return self.measured and self.avg_power_w is not None

    def domain_names(self) -> list[str]:
        return list(self.domains or [])


def power_report(value: PowerReport | Mapping[str, Any] | None) -> PowerReport | None:
    """A reply's ``power`` as its type, whether it arrives typed or as the stored map (an
    event's data); None when there is none."""
    if value is None or isinstance(value, PowerReport):
        return value
    if not value:
        return None
    return msgspec.convert(dict(value), PowerReport)
