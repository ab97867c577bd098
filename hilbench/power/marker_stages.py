"""Stage power of a single-stream window whose samples the device marked: each sample's stages
placed by its marked region in the instrument's own samples, not by the clock-offset mapping.

Why: in single stream the device's stamps of when a sample ran reach the orchestrator through
its clock-offset probe, and a board that stamps nothing itself (the Arduino) is placed by when
its reply arrived, off by the reply's jitter (~0.1 ms on a pty) — more than an inference lasts,
so the attribution's fitted alignment fails or widens. The device's marker is high around each
sample's stages (rising just before pre-processing starts, falling just after inference ends),
and the instrument records it in the same stream as the power: sample ``i``'s region
``[r_i, f_i)`` (:func:`hilbench.power.marker_windows.sample_regions`) places its stages on the
instrument's sample clock. With one timed stage the region is that stage; with two (the
Arduino: pre-processing, then inference) they split it as the device's own timings of them
do, pre-processing ``[r_i, b_i)`` and inference ``[b_i, f_i)`` with ``b_i - r_i`` the
pre-processing share of ``p_i + n_i`` (anchoring each stage to its own edge instead made them
overlap or part by the edges' phases: +1.1 σ bias on a 90 µs inference).

Where a true edge lies: the cut follows it by ``φ + d`` (:mod:`hilbench.power.markers`), ``φ``
the sampling phase, uniform in one period ``T`` and independent from edge to edge (the device's
edges do not follow the instrument's clock), ``d`` the input latency, up to the stated ``L``
(the instrument's, plus what the device states about its own line), the same for every edge.
Each edge is placed ``(T + L)/2`` before its cut. The phases' part — the powers' slopes in the
rising and in the falling edges times ``T/√12``, averaged over the ``N`` samples — joins the
statistical part; the latency's part, ``± L/2`` common to every edge, is the budget's
``marker edges`` component (the timing component of every marker-cut window), from the
powers' change when the whole schedule moves by ``± L/2``. Where the device's stamps around
its work lie inside a region stays the attribution's ``edge_s`` (boundary mixing). On 40
synthetic 300-sample windows at 50 kS/s (1 µs stated latency) every stage power held the truth
within its 95 % interval, the errors' mean 0.01 / -0.04 of a standard uncertainty
(``tests/power/test_marker_stages.py``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import numpy as np

from hilbench.power.marker_windows import TIMING_SOURCE, RegionsAlignment
from hilbench.power.stage_attribution import StageAttribution, attribute_stage_power
from hilbench.power.stage_schedule import StageSchedule
from hilbench.power.uncertainty import InstrumentAccuracy

METHOD = ("regression on stage occupancy, each sample's stages placed by its marked region in "
          "the instrument's samples (no shift fitted); each edge's sampling phase (independent, "
          "± half a sample period) enters the statistical part, the stated latencies (common to "
          "every edge) the marker edges component")
# the device's per-sample timings each stage's interval takes its length from
STAGE_TIMINGS = {"preprocessing": "preprocess_s", "inference": "inference_s"}


def marked_schedule(regions: RegionsAlignment, samples: Mapping[str, np.ndarray],
                    stages: Sequence[str], rise_shift_s: float = 0.0,
                    fall_shift_s: float = 0.0) -> StageSchedule:
    """Where each stage of each sample ran on the instrument's sample clock (sample ``k`` at
    ``k`` periods), each edge at the middle of where its true edge may lie (see the module);
    ``rise_shift_s`` / ``fall_shift_s`` move every rising / falling edge by that much."""
    cuts = regions.cuts
    if not cuts:
        raise ValueError(f"no marked regions to place the stages by: {regions.reason}")
    period = cuts[0].sample_period_s
    centre = float(regions.edge_uncertainty_s or period) / 2.0
    rise = np.array([c.start for c in cuts], dtype=np.float64) * period - centre + rise_shift_s
    fall = np.array([c.stop for c in cuts], dtype=np.float64) * period - centre + fall_shift_s
    if "preprocessing" not in stages:  # the region is the inference
        return StageSchedule({"inference": rise}, {"inference": fall})
    pre = np.asarray(samples[STAGE_TIMINGS["preprocessing"]], dtype=np.float64)
    inference = np.asarray(samples[STAGE_TIMINGS["inference"]], dtype=np.float64)
    # the two stages split the region as the device's own timings of them do: anchoring each
    # to its own edge instead would overlap or part them by the edges' phases (a bias)
    share = np.divide(pre, pre + inference, out=np.zeros_like(pre), where=pre + inference > 0)
    boundary = rise + (fall - rise) * share
    return StageSchedule({"preprocessing": rise, "inference": boundary},
                         {"preprocessing": boundary, "inference": fall})


def marked_stage_power(watts: np.ndarray, regions: RegionsAlignment,
                       samples: Mapping[str, np.ndarray], stages: Sequence[str],
                       accuracy: InstrumentAccuracy, *, edge_s: float = 0.0
                       ) -> StageAttribution:
    """Stage powers of a marked single-stream window (see the module): ``watts`` one per
    instrument sample from the phase's first, ``samples`` the device's per-sample timings in
    the order it ran them. Raises :class:`~hilbench.power.stage_attribution.AttributionError`
    (a ValueError) as the attribution does."""
    cuts = regions.cuts
    period = cuts[0].sample_period_s
    common = (float(regions.edge_uncertainty_s or period) - period) / 2.0  # ± half the latency
    phase = period / 2.0  # each edge's own sampling phase: ± half a period
    base = marked_schedule(regions, samples, stages)
    t = np.arange(len(watts), dtype=np.float64) * period
    window = (min(float(s[0]) for s in base.starts.values()),
              max(float(e[-1]) for e in base.ends.values()))

    def powers(rise_s: float = 0.0, fall_s: float = 0.0) -> dict[str, float]:
        found = fit(marked_schedule(regions, samples, stages, rise_s, fall_s))
        return {name: e.mean_w for name, e in found.estimates.items()}

    def fit(schedule: StageSchedule) -> StageAttribution:
        return attribute_stage_power(t, watts, period, schedule, window, accuracy,
                                     max_shift_s=0.0, edge_s=edge_s, stamp_jitter=False)

    found = fit(base)
    # the sampling phase of each edge, independent from edge to edge: the powers' slopes in
    # the rising and the falling edges, times a uniform ± T/2's SD, averaged over the samples
    slopes = [{k: (up[k] - down[k]) / (2 * phase) for k in up} for up, down in (
        (powers(rise_s=phase), powers(rise_s=-phase)),
        (powers(fall_s=phase), powers(fall_s=-phase)))]
    spread = period / math.sqrt(12.0) / math.sqrt(len(cuts))
    later, earlier = (powers(common, common), powers(-common, -common)) if common > 0 else ({}, {})
    estimates = {}
    for name, e in found.estimates.items():
        phase_se = math.hypot(slopes[0][name], slopes[1][name]) * spread
        per_s = {} if common <= 0 else {
            "clock_per_s_positive": (e.mean_w - later[name]) / common,
            "clock_per_s_negative": (e.mean_w - earlier[name]) / common}
        estimates[name] = dataclasses.replace(
            e, std_error_w=math.hypot(e.std_error_w, phase_se), timing_half_width_s=common,
            timing_source=TIMING_SOURCE, method=f"{METHOD}; edge phase SE {phase_se:.3g} W "
            "in this statistical part", **per_s)
    return dataclasses.replace(found, estimates=estimates)
