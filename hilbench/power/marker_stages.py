"""Stage power of a single-stream window whose samples the device marked: each sample's stages
placed by its marked region in the instrument's own samples, not by the clock-offset mapping.

Why: in single stream the device's stamps of when a sample ran reach the orchestrator through
its clock-offset probe, and a board that stamps nothing itself (the Arduino) is placed by when
its reply arrived, off by the reply's jitter (~0.1 ms on a pty) — more than an inference lasts,
so the attribution's fitted alignment fails or widens. The device's marker is high around each
sample's stages (rising just before pre-processing starts, falling just after inference ends),
and the instrument records it in the same stream as the power: sample ``i``'s region
``[r_i, f_i)`` (:func:`hilbench.power.marker_windows.sample_regions`) places its stages on the
instrument's sample clock — pre-processing ``[r_i, r_i + p_i)``, inference ``[f_i - n_i, f_i)``
with ``p_i`` and ``n_i`` the device's own timings of that sample (its timer: over a
millisecond, no drift between clocks matters).

Each cut lies after its true edge by less than the edge uncertainty ``u`` (one sample period
plus the stated input latency, :mod:`hilbench.power.markers`): the schedule is placed ``u/2``
before the cuts, so the true edges lie within ``± u/2`` of it. The stage powers are then fitted
at that alignment (no shift search), and the powers' change when the whole schedule moves by
``± u/2`` is the budget's ``marker edges`` component (the timing component of every marker-cut
window). Where a stage boundary inside a region lies (the device's stamps around its work) stays
the attribution's ``edge_s`` (boundary mixing).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from hilbench.power.marker_windows import TIMING_SOURCE, RegionsAlignment
from hilbench.power.stage_attribution import StageAttribution, attribute_stage_power
from hilbench.power.stage_schedule import StageSchedule
from hilbench.power.uncertainty import InstrumentAccuracy

METHOD = ("regression on stage occupancy, each sample's stages placed by its marked region in "
          "the instrument's samples (no shift fitted): the edges' uncertainty is the marker "
          "edges component")
# the device's per-sample timings each stage's interval takes its length from
STAGE_TIMINGS = {"preprocessing": "preprocess_s", "inference": "inference_s"}


def marked_schedule(regions: RegionsAlignment, samples: Mapping[str, np.ndarray],
                    stages: Sequence[str]) -> StageSchedule:
    """Where each stage of each sample ran on the instrument's sample clock (sample ``k`` at
    ``k`` periods), half an edge uncertainty before the cuts (see the module)."""
    cuts = regions.cuts
    if not cuts:
        raise ValueError(f"no marked regions to place the stages by: {regions.reason}")
    period = cuts[0].sample_period_s
    half = float(regions.edge_uncertainty_s or 0.0) / 2.0
    rise = np.array([c.start for c in cuts], dtype=np.float64) * period - half
    fall = np.array([c.stop for c in cuts], dtype=np.float64) * period - half
    starts: dict[str, np.ndarray] = {}
    ends: dict[str, np.ndarray] = {}
    if "preprocessing" in stages:
        pre = np.asarray(samples[STAGE_TIMINGS["preprocessing"]], dtype=np.float64)
        starts["preprocessing"], ends["preprocessing"] = rise, np.minimum(rise + pre, fall)
    inference = np.asarray(samples[STAGE_TIMINGS["inference"]], dtype=np.float64)
    inf_start = np.maximum(fall - inference, ends.get("preprocessing", rise))
    starts["inference"], ends["inference"] = inf_start, fall
    return StageSchedule(starts, ends)


def marked_stage_power(watts: np.ndarray, regions: RegionsAlignment,
                       samples: Mapping[str, np.ndarray], stages: Sequence[str],
                       accuracy: InstrumentAccuracy, *, edge_s: float = 0.0
                       ) -> StageAttribution:
    """Stage powers of a marked single-stream window (see the module): ``watts`` one per
    instrument sample from the phase's first, ``samples`` the device's per-sample timings in
    the order it ran them. Raises :class:`~hilbench.power.stage_attribution.AttributionError`
    (a ValueError) as the attribution does."""
    schedule = marked_schedule(regions, samples, stages)
    period = regions.cuts[0].sample_period_s
    half = float(regions.edge_uncertainty_s or 0.0) / 2.0
    t = np.arange(len(watts), dtype=np.float64) * period
    first = min(float(s[0]) for s in schedule.starts.values())
    last = max(float(e[-1]) for e in schedule.ends.values())

    def fit(delta: float) -> StageAttribution:
        # the true schedule ``delta`` later than placed: the readings ``delta`` earlier on it
        return attribute_stage_power(t - delta, watts, period, schedule, (first, last),
                                     accuracy, max_shift_s=0.0, edge_s=edge_s)

    found = fit(0.0)
    later, earlier = fit(half), fit(-half)
    estimates = {}
    for name, e in found.estimates.items():
        estimates[name] = dataclasses.replace(
            e, timing_half_width_s=half, timing_source=TIMING_SOURCE, method=METHOD,
            clock_per_s_positive=(e.mean_w - later.estimates[name].mean_w) / half,
            clock_per_s_negative=(e.mean_w - earlier.estimates[name].mean_w) / half)
    return dataclasses.replace(found, estimates=estimates)
