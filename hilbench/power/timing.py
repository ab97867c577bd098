"""Power arithmetic of a measured window that needs no orchestrator: readings to watts, and how
far a device window may sit from where an instrument's samples say it is (clock offset,
acquisition start, what the sample-interval estimate leaves open). The orchestrator, the
procedures, the cassette's figures and the benchmarks all use these."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from hilbench.power.align import IntervalEstimate
from hilbench.power.source import InstrumentFault, PowerSource, SourceInfo


class Measured(Protocol):
    """An opened instrument: anything with the power source it reads
    (:class:`hilbench.orchestrator.instruments.Instrument`)."""

    @property
    def source(self) -> PowerSource: ...


# Used when a source does not state how well it knows its first sample's time.
DEFAULT_START_UNCERTAINTY_S = 1e-3


def aperture_s(inst: Measured) -> float | None:
    """Integration time per reading, where the instrument driver states it."""
    settings = getattr(inst.source, "settings", None)
    aperture = getattr(settings, "aperture_s", None)
    return float(aperture) if aperture else None


def timing_uncertainty_s(
    inst: Measured,
    clock_offset_uncertainty_s: float,
    start_uncertainty_s: float | None = None,
    drift_residual_s: float = 0.0,
) -> float:
    """How far a device window may sit from where the instrument's samples say it is: the
    agent's clock-offset uncertainty (of that phase's probe) plus the acquisition-start
    uncertainty of that phase's acquisition (default: the instrument's latest) plus what the
    estimate of the instrument's real sample interval leaves open at the window
    (:func:`drift_residual_s`)."""
    start = start_uncertainty_s
    if start is None:
        start = getattr(inst.source, "t0_uncertainty_s", None)
    return (clock_offset_uncertainty_s + (start if start else DEFAULT_START_UNCERTAINTY_S)
            + drift_residual_s)


def drift_residual_s(estimate: IntervalEstimate | None, t: float) -> float:
    """How far a restamped reading at orchestrator time ``t`` may still be off because the
    real interval is only known within the estimate's half-width (0 without an estimate)."""
    return 0.0 if estimate is None or estimate.t0 is None else estimate.stamp_half_width_s(t)


def to_watts(info: SourceInfo, values: np.ndarray) -> np.ndarray:
    """Readings in watts: amps are multiplied by the declared supply voltage."""
    if info.unit == "W":
        return values
    if info.unit == "A" and info.supply_voltage_v:
        return values * info.supply_voltage_v
    raise InstrumentFault(f"{info.name}: readings in {info.unit} cannot be turned into watts")
