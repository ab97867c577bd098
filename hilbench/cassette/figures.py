"""A stored power figure recomputed from what the store keeps beside it: the raw samples (nominal
stamps), the ``instrument_interval`` record that turns them into the stamps the figure used, the
device's timed region and the phase's clock offset. The runner's own estimator does the work, so
an auditor's figure and the runner's differ only if the data do."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from hilbench.power.align import IntervalEstimate
from hilbench.power.estimators import PhaseWindow, PowerEstimate, phase_power
from hilbench.power.source import SourceInfo
from hilbench.power.timing import to_watts


def window_power_again(
    t: np.ndarray,
    values: np.ndarray,
    source: str,
    unit: str,
    sample_meta: Mapping[str, Any],
    region: tuple[float, float],
    offset_s: float,
    intervals: Iterable[Mapping[str, Any]],
    analysis: Mapping[str, Any],
) -> PowerEstimate:
    """The mean power over the device's timed ``region`` (agent clock, mapped with
    ``offset_s``), from the stored samples of ``source`` restamped by its interval records
    (``instrument_interval`` event data), with the stored ``analysis`` inputs (aperture, timing
    uncertainty). Raises ValueError when the window holds too few readings."""
    for interval in intervals:
        if interval.get("instrument", source) == source:
            t = IntervalEstimate.from_dict(dict(interval)).restamp(t)
    info = SourceInfo(source, unit,  # type: ignore[arg-type]
                      float(sample_meta.get("time_resolution_s") or 0.0),
                      supply_voltage_v=sample_meta.get("supply_voltage_v"),
                      readings_tile_time=sample_meta.get("readings_tile_time") is True)
    start, end = region[0] - offset_s, region[1] - offset_s
    return phase_power(t, to_watts(info, np.asarray(values)), PhaseWindow("active", start, end),
                       info, aperture_s=analysis.get("aperture_s"),
                       timing_uncertainty_s=analysis.get("timing_uncertainty_s"))
