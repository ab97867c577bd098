"""Power of each pipeline stage from a fast meter reading throughout single-stream inference.

Why: on a CPU a stage repeated on its own runs 10-30 % faster than inside the pipeline (it keeps
the cache the other stage would take), so a window that loops one stage measures other work
than the single-stream time its power is multiplied by. Here the active window runs the
single-stream pipeline itself and a meter whose aperture is shorter than the stages reads
throughout. Each reading integrates a known mix of stages, so the stage powers follow from a
linear regression of the readings on their stage occupancy::

    watts_k = sum_s P_s f_ks(δ) + P_between f_k,between(δ) + noise

``f_ks(δ)`` is the fraction of reading k's aperture ``[t_k + δ, t_k + δ + a]`` spent in stage
s, read off cumulative time-in-stage, so any number of alignments costs one ``np.interp`` per
reading, stage and alignment; time no stage covers is :data:`OTHER`. The alignment δ (clock
offset plus meter start, often longer than a stage) is fitted by least squares over
``± max_shift_s`` (searched to twice that, so that an offset beyond it is caught rather than
fitted to a wrong pipeline cycle): a grid, then golden-section search to 1 ns (a stage power
moves ~0.05 W per µs of shift). Each batch-means block fits its own shift, and a line through
them gives the shift and its drift (a meter timebase 50 ppm off moves the shift by 250 µs over
a 5 s window), their errors from the blocks' scatter about the line.

Uncertainty, against the window's own time-weighted stage power (the device's sample-to-sample
variation is part of that truth, as for gapless readings in ``phase_power``): the regression
weighs each stage interval by where the readings happened to fall, the truth by its duration;
the variance of that difference and of the noise comes from the per-interval and per-reading
variances seen in the residuals. The alignment's error is added through the powers' slopes in
shift and drift. Batch means of the
blocks' powers, which include the device's own variation, are kept as ``spread_std_error_w``.
The instrument's gain, offset and supply bounds enter each budget as in ``phase_power``; the
clock component is 0 because δ is fitted and its error is already in the statistical part.

Assumed: a stage's power is constant within each of its intervals (it may change from one
interval to the next). A profile inside a stage breaks that: a 50 µs head 6 W above the rest
of a 317 µs inference moved the powers by -0.11 (inference), +0.29 (pre-processing) and -0.55 W
(between) and the shift by 4 µs, beyond their stated errors.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hilbench.power.align import window_coverage
from hilbench.power.estimators import (
    BATCHES,
    PowerEstimate,
    _as_arrays,
    _duration,
    _noise_from_differences,
)
from hilbench.power.stage_design import (
    Occupancy,
    columns,
    fractions,
    inflation,
    occupancy,
    window_error,
)
from hilbench.power.stage_schedule import OTHER, StageSchedule
from hilbench.power.stamp_jitter import (
    correction_half_width,
    jitter_bias,
    sample_offsets,
    stamp_jitter_s,
)
from hilbench.power.uncertainty import InstrumentAccuracy

__all__ = ["OTHER", "AttributionError", "StageAttribution", "StageSchedule",
           "attribute_stage_power"]

# Identifiability: a stage power whose standard error is more than this many times that of
# readings lying wholly inside the stage (same occupancy) would need 100x the readings; the
# readings then see nearly the same mix (120 µs aperture on 0.2-0.3 ms stages: x1.2; 2 ms: x10;
# 20 ms: x100), and the aperture is what to change.
MAX_INFLATION = 10.0
GRID_STEPS_PER_SCALE = 10  # grid: this many alignments per min(aperture, shortest stage)
MAX_GRID = 20_000  # alignments; more means the shift range is far wider than the stages
MIN_PER_BATCH = 100  # readings per block; each block refits the shift and the powers
# The best alignment must beat every alignment outside its basin by this much (ΔRSS over the
# residual variance, a likelihood ratio of ~5 sigma), or the schedule repeats too regularly
# for the readings to say which cycle they belong to.
MIN_ALIAS_CONTRAST = 25.0
SHIFT_TOLERANCE_S = 1e-9
SEARCH_FACTOR = 2.0  # shifts are searched to this multiple of max_shift_s, see below
# The shift line needs this many blocks that fix their own alignment (a line and a scatter).
MIN_ALIGNED_BLOCKS = 3
CHUNK = 2_000_000  # (alignments x readings) evaluated at once: bounds memory to ~100 MB


class AttributionError(ValueError):
    """The readings cannot separate the stages; the message says why and what to change."""


@dataclass(frozen=True)
class StageAttribution:
    """Stage powers from one window and how well the readings were aligned with the schedule."""

    estimates: dict[str, PowerEstimate]  # one per stage and OTHER; .phase = the stage name
    # Reading k integrated [t_k + δ_k, t_k + δ_k + aperture] (true time), with
    # δ_k = shift_s + drift * (t_k - shift_reference_s): the meter's timebase may run off.
    shift_s: float
    shift_std_error_s: float  # from the scatter of the blocks' shifts about that line
    max_shift_s: float
    n_readings: int
    # Identifiability: the largest standard-error inflation over the stages, sqrt(var / var
    # of readings lying wholly inside one stage, same occupancy). 1 is ideal; refused above
    # MAX_INFLATION. ``inflation`` holds every column's, OTHER's included.
    condition: float
    drift: float = 0.0  # s per s (1e-6 = 1 ppm)
    drift_std_error: float = 0.0
    shift_reference_s: float = 0.0
    inflation: dict[str, float] = field(default_factory=dict)
    batches: int = BATCHES
    alias_contrast: float = math.inf  # ΔRSS / residual variance of the best other alignment
    # Batch means of the blocks' powers: the error as an estimate of the stage's power over
    # samples like these (adds the device's own sample-to-sample variation).
    spread_std_error_w: dict[str, float] = field(default_factory=dict)
    # Blocks that fixed their own alignment (the shift line runs through these); a block that
    # saw no stage change (the device sat in one stage throughout it) follows the line.
    aligned_blocks: int = BATCHES

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": "regression on stage occupancy, alignment fitted",
            "shift_s": self.shift_s,
            "shift_std_error_s": self.shift_std_error_s,
            "shift_dof": self.aligned_blocks - 2,
            "shift_reference_s": self.shift_reference_s,
            "drift_ppm": self.drift * 1e6,
            "drift_std_error_ppm": self.drift_std_error * 1e6,
            "max_shift_s": self.max_shift_s,
            "n_readings": self.n_readings,
            "condition": self.condition,
            "inflation": dict(self.inflation),
            "batches": self.batches,
            "aligned_blocks": self.aligned_blocks,
            "alias_contrast": None if math.isinf(self.alias_contrast) else self.alias_contrast,
            "spread_std_error_w": dict(self.spread_std_error_w),
            "estimates": {k: e.to_dict() for k, e in self.estimates.items()},
        }


def _edge_effect(schedule: StageSchedule, origin: float, x: np.ndarray, a: float, other: bool,
                 y: np.ndarray, power: np.ndarray, edge_s: float) -> np.ndarray:
    """How far the powers move when every stage interval is ``edge_s`` shorter at both ends
    (an interval shorter than that keeps its middle): the stamps' own uncertainty."""
    if edge_s <= 0:
        return np.zeros(power.shape)
    starts, ends = {}, {}
    for stage in schedule.stages:
        s, e = schedule.starts[stage], schedule.ends[stage]
        middle = (s + e) / 2
        starts[stage] = np.minimum(s + edge_s, middle)
        ends[stage] = np.maximum(e - edge_s, middle)
    g = fractions(occupancy(StageSchedule(starts, ends), origin), x, a, other)
    return np.abs(np.linalg.solve(g @ g.T, g @ y) - power)


def _solve(xtx: np.ndarray, xty: np.ndarray, yty: np.ndarray | float
           ) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares coefficients and residual sum of squares from normal equations."""
    with np.errstate(all="ignore"):
        try:
            beta = np.linalg.solve(xtx, xty[..., None])[..., 0]
        except np.linalg.LinAlgError:  # a block that misses a stage: its RSS is still right
            beta = (np.linalg.pinv(xtx) @ xty[..., None])[..., 0]
        return beta, yty - (beta * xty).sum(axis=-1)


def _golden(rss: Callable[[np.ndarray], np.ndarray], lo: np.ndarray, hi: np.ndarray
            ) -> np.ndarray:
    """Minimum of several unimodal curves at once, one bracket each, to SHIFT_TOLERANCE_S: no
    parabola through grid points is that exact (the curve kinks wherever an aperture edge
    crosses a stage boundary)."""
    g = (math.sqrt(5.0) - 1.0) / 2.0
    c, d = hi - g * (hi - lo), lo + g * (hi - lo)
    fc, fd = rss(c), rss(d)
    while float(np.max(hi - lo)) > SHIFT_TOLERANCE_S:
        left = fc < fd  # the minimum lies in [lo, d]
        lo, hi = np.where(left, lo, c), np.where(left, d, hi)
        x = np.where(left, hi - g * (hi - lo), lo + g * (hi - lo))
        fx = rss(x)
        c, d, fc, fd = (np.where(left, x, d), np.where(left, c, x),
                        np.where(left, fx, fd), np.where(left, fc, fx))
    return (lo + hi) / 2.0


@dataclass
class _Blocks:
    """The readings in contiguous batch-means blocks, fitted per block and as a whole."""

    x: np.ndarray  # aperture starts, relative to the window start
    y: np.ndarray  # readings less y0 (columns sum to 1: centring only moves every power by y0)
    occ: Occupancy
    a: float
    other: bool
    batches: int

    def __post_init__(self) -> None:
        self.sizes = np.array([p.size for p in np.array_split(self.y, self.batches)])
        self.cuts = np.concatenate(([0], np.cumsum(self.sizes)[:-1]))
        self.yty = np.add.reduceat(self.y * self.y, self.cuts)

    def fit(self, cols: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For design rows ``cols`` (each (G, n)): per-block powers (G, B, m) and RSS (G, B),
        and the whole window's RSS (G,)."""
        m = len(cols)
        xtx = np.empty((cols[0].shape[0], self.batches, m, m))
        for i in range(m):
            for j in range(i, m):
                xtx[..., i, j] = xtx[..., j, i] = np.add.reduceat(cols[i] * cols[j], self.cuts,
                                                                  axis=-1)
        xty = np.stack([np.add.reduceat(c * self.y, self.cuts, axis=-1) for c in cols], axis=-1)
        p, r = _solve(xtx, xty, self.yty)
        return p, r, _solve(xtx.sum(axis=1), xty.sum(axis=1), self.yty.sum())[1]

    def at(self, shifts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``fit`` with block b at shift ``shifts[b]``."""
        f = fractions(self.occ, self.x + np.repeat(shifts, self.sizes), self.a, self.other)
        return self.fit([c[None, :] for c in f])

    def grid(self, h: float, half: int, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Per-block and whole RSS at shifts ``i * h``, |i| <= half, with ``a = k * h``."""
        ext = np.arange(-half, half + k + 1) * h
        rss, total = np.empty((2 * half + 1, self.batches)), np.empty(2 * half + 1)
        rows = max(1, CHUNK // self.x.size)
        for g0 in range(0, 2 * half + 1, rows):
            g1 = min(2 * half + 1, g0 + rows)
            cum = [np.interp(self.x[None, :] + ext[g0:g1 + k, None], *o) for o in self.occ]
            _, rss[g0:g1], total[g0:g1] = self.fit(columns(cum, k, self.a, self.other))
        return rss, total


def _check_arguments(a: float, max_shift_s: float, start: float, end: float, batches: int,
                     edge_s: float) -> None:
    """ValueError for malformed input (not a measurement that cannot be attributed)."""
    if not (math.isfinite(a) and a > 0):
        raise ValueError(f"aperture_s must be a finite positive number, got {a}")
    if not (math.isfinite(max_shift_s) and max_shift_s >= 0):
        raise ValueError(f"max_shift_s must be a finite number >= 0, got {max_shift_s}")
    if not (math.isfinite(start) and math.isfinite(end) and end > start):
        raise ValueError(f"window must be (start, end) with end after start, got {(start, end)}")
    if batches < 2:
        raise ValueError(f"batch means need at least 2 batches, got {batches}")
    if not (math.isfinite(edge_s) and edge_s >= 0):
        raise ValueError(f"edge_s must be a finite number >= 0, got {edge_s}")


def _check_separable(f: np.ndarray, n: int, stages: int, a: float, means: str,
                     max_inflation: float) -> None:
    """The readings must see different enough mixes of the stages to separate their powers."""
    infl = inflation(f) if n > len(f) else np.full(len(f), math.inf)
    if infl[:stages].max() > max_inflation:
        raise AttributionError(
            f"the {_duration(a)} aperture is long compared with the stages (mean {means}): "
            f"the readings see too similar a mix to separate the stage powers (standard error "
            f"x{infl[:stages].max():.3g} that of readings inside one stage, limit "
            f"x{max_inflation:g}); use an aperture (NPLC) shorter than the shortest stage and "
            f"a sample interval of a few apertures")


def _alignment_variance(aligned: Any, y: np.ndarray, shift: tuple[float, float],
                        drift: tuple[float, float]) -> np.ndarray:
    """The powers' variance from the alignment's error: their slopes in shift and in drift
    (central differences) times each one's standard error, added (uncorrelated: the drift is
    fitted about the blocks' mean time). ``aligned(shift, drift)`` gives the design rows."""
    var = 0.0
    for (_, value_se), move in ((shift, (1.0, 0.0)), (drift, (0.0, 1.0))):
        step = max(value_se, SHIFT_TOLERANCE_S)
        fits = [np.linalg.solve(g @ g.T, g @ y) for g in (
            aligned(shift[0] + sign * step * move[0], drift[0] + sign * step * move[1])
            for sign in (1, -1))]
        var = var + ((fits[0] - fits[1]) / (2 * step) * value_se) ** 2
    return np.asarray(var)


def _check_in_range(block_shift: np.ndarray, block_best: np.ndarray, grid_size: int,
                    limit_s: float, max_shift_s: float, search: float) -> None:
    """Every block's alignment lies inside the allowed shift and off the searched grid's ends."""
    outside = np.flatnonzero((np.abs(block_shift) > limit_s) | (block_best < 1)
                             | (block_best > grid_size - 2))
    if len(outside):
        i = int(outside[0])
        raise AttributionError(
            f"the readings fit the schedule best at a shift of {block_shift[i] * 1e3:+.3f} ms "
            f"(block {i} of {block_shift.size}), outside the ± {_duration(max_shift_s)} range "
            f"(searched to ± {_duration(search)}): the clocks are further apart than "
            f"max_shift_s allows (widen it) or the schedule is not the one that ran")


def _aligning_blocks(rss: np.ndarray, near: np.ndarray, sizes: np.ndarray, params: int,
                     yty: np.ndarray) -> np.ndarray:
    """Which blocks fix their own alignment: some shift inside the searched basin fits the
    block worse than its best by :data:`MIN_ALIAS_CONTRAST` residual variances. A block lying
    inside one stage interval (a device the OS stalled, a sample that ran long) sees no stage
    change, so every shift fits it alike and its best shift is arbitrary, not a sign of
    drift. ``yty``: each block's sum of squares, for a floor above rounding on exact data."""
    r = rss[near]
    best = r.min(axis=0)
    rise = r.max(axis=0) - best
    var = best / np.maximum(sizes - params, 1)
    return (rise > MIN_ALIAS_CONTRAST * var) & (rise > 1e-9 * yty)


def _shift_and_drift(block_shift: np.ndarray, centred: np.ndarray, scale: float,
                     aligned: np.ndarray) -> tuple[float, float, float, float]:
    """The line through the ``aligned`` blocks' own alignments (``centred``: block centres
    less their mean): shift, drift and their standard errors from those blocks' scatter about
    it. A block further than ``scale`` from the line means the readings do not follow the
    schedule."""
    index = np.flatnonzero(aligned)
    used, shifts = index.size, block_shift[index]
    design = np.column_stack((np.ones(used), centred[index]))
    (shift, drift), *_ = np.linalg.lstsq(design, shifts, rcond=None)
    off = shifts - design @ (shift, drift)
    spread = float(np.sqrt((off**2).sum() / (used - 2))) if used > 2 else 0.0
    worst = int(np.argmax(np.abs(off)))
    odd = int(index[worst])
    if abs(off[worst]) > scale:
        raise AttributionError(
            f"block {odd} of {block_shift.size} aligns at {block_shift[odd] * 1e3:+.3f} ms, "
            f"{off[worst] * 1e6:+.0f} µs from the line through the others (shift "
            f"{shift * 1e3:+.3f} ms, drift {drift * 1e6:+.1f} ppm): the readings do not "
            f"follow the schedule throughout the window")
    return (float(shift), float(drift), spread / math.sqrt(used),
            spread / math.sqrt(float((centred[index] ** 2).sum())))


@dataclass(frozen=True)
class _Aligned:
    """Each block's alignment and the line through those that fixed their own."""

    used: int  # the blocks that fixed their own shift
    block_shift: np.ndarray  # each block's; the others' on the line
    ref: float  # the aligning blocks' mean centre, about which the drift is fitted
    shift: float = 0.0
    drift: float = 0.0
    shift_se: float = 0.0
    drift_se: float = 0.0


def _align_blocks(blocks: _Blocks, rss: np.ndarray, grid: np.ndarray, near: np.ndarray,
                  scale: float, params: int, schedule: StageSchedule,
                  limits: tuple[float, float]) -> _Aligned:
    """Each block's own alignment inside the basin ``near`` of the window's, and the line
    (shift, drift) through the blocks that fix theirs; ``limits``: max_shift_s and the range
    searched. One grid point (no shift searched): every block at 0."""
    batches = blocks.batches
    centre = np.add.reduceat(blocks.x, blocks.cuts) / blocks.sizes
    if grid.size == 1:
        return _Aligned(batches, np.zeros(batches), float(centre.mean()))
    aligning = _aligning_blocks(rss, near, blocks.sizes, params, blocks.yty)
    used = int(aligning.sum())
    if used < MIN_ALIGNED_BLOCKS:
        starts, ends, _ = schedule.merged()
        raise AttributionError(
            f"only {used} of {batches} blocks of readings see a stage change (the device "
            f"stayed in one stage for {_duration(float((ends - starts).max()))} at most): "
            f"the others cannot fix the alignment; lengthen the window")
    ref = float(centre[aligning].mean())
    h = float(grid[1] - grid[0])
    block_best = np.argmin(np.where(near[:, None], rss, np.inf), axis=0)
    own = _golden(lambda d: blocks.at(d)[1][0], grid[block_best] - h, grid[block_best] + h)
    shift, drift, shift_se, drift_se = _shift_and_drift(own, centre - ref, scale, aligning)
    _check_in_range(own[aligning], block_best[aligning], grid.size, limits[0] + h, *limits)
    return _Aligned(used, np.where(aligning, own, shift + drift * (centre - ref)), ref,
                    shift, drift, shift_se, drift_se)


def _jitter_corrected(schedule: StageSchedule, origin: float, u: np.ndarray, a: float,
                      other: bool, y: np.ndarray, power: np.ndarray, measure: bool
                      ) -> tuple[np.ndarray, float, np.ndarray]:
    """The powers less the bias the stamps' jitter leaves (:mod:`hilbench.power.stamp_jitter`),
    the jitter measured (0 unless ``measure``) and the correction's error (half-width)."""
    if not measure:
        return power, 0.0, np.zeros(power.shape)

    def moved(o: Occupancy, d: float) -> np.ndarray:
        return fractions(o, u + d, a, other)

    offsets, offset_var = sample_offsets(schedule, origin, u, a, moved, y, power)
    jitter = stamp_jitter_s(offsets, offset_var)
    bias, bias_se = jitter_bias(schedule, origin, jitter, moved, power)
    return power - bias, jitter, correction_half_width(bias, bias_se, offsets.size)


def attribute_stage_power(
    t: np.ndarray,
    watts: np.ndarray,
    aperture_s: float,
    schedule: StageSchedule,
    window: tuple[float, float],
    accuracy: InstrumentAccuracy,
    max_shift_s: float,
    resolution_w: float = 0.0,
    batches: int = BATCHES,
    max_inflation: float = MAX_INFLATION,
    edge_s: float = 0.0,
    stamp_jitter: bool = True,
) -> StageAttribution:
    """Stage powers (and OTHER's) from readings ``watts`` stamped at ``t`` (start of each
    aperture, orchestrator time) over the pipeline ``schedule`` inside ``window``.

    Only readings whose aperture lies inside the window at every shift searched are used, so
    every alignment is judged on the same readings.

    ``edge_s`` is how well the schedule's stamps mark where the power changes (half-width:
    timer reads and call overhead between a stamp and the work): the powers' change when every
    stage interval is that much shorter at both ends goes into each budget as a rectangular
    component ("boundary mixing"). With ``stamp_jitter`` the jitter of the schedule's stamps is
    measured from the stamps (:mod:`hilbench.power.stamp_jitter`) and its bias enters each
    budget ("stamp jitter"); a schedule placed by the instrument's own marker edges passes
    False (its edges' error is stated by the caller). Raises
    :class:`AttributionError` when the stages cannot be separated (aperture long compared with
    the stages), the best alignment lies outside ``± max_shift_s`` (searched to twice that:
    the powers at a wrong alignment are wrong, so no figure is better) or is not unique, or
    too few readings remain; :class:`ValueError` for malformed input.
    """
    t, watts = _as_arrays(t, watts)
    start, end = (float(v) for v in window)
    a, max_shift_s = float(aperture_s), float(max_shift_s)
    _check_arguments(a, max_shift_s, start, end, batches, edge_s)
    # Alignments are searched over twice the range: a clock offset beyond max_shift_s would
    # otherwise fit a wrong pipeline cycle inside it, with wrong powers and no sign of it.
    search = SEARCH_FACTOR * max_shift_s
    use = (t - search >= start) & (t + a + search <= end)
    n = int(use.sum())
    span = f"{t[0]:g}..{t[-1]:g} s" if t.size else "none"
    if n == 0:
        raise AttributionError(
            f"no reading lies inside the window {start:g}..{end:g} s (less the ± "
            f"{_duration(search)} searched shifts and the {_duration(a)} aperture); the "
            f"readings span {span}")
    x, y = t[use] - start, watts[use]
    occ = occupancy(schedule, start)
    stages = schedule.stages
    means = ", ".join(f"{s} {_duration(schedule.mean_duration_s(s))}" for s in stages)
    f0 = fractions(occ, x, a, other=True)
    unseen = [s for s, col in zip(stages, f0, strict=False) if col.max() <= 0]
    if unseen:
        raise AttributionError(f"no reading inside the window {start:g}..{end:g} s sees "
                               f"stage(s) {unseen} (mean durations: {means})")
    other = bool(f0[-1].max() > 0)  # a schedule that tiles the window leaves no OTHER to fit
    names = [*stages, OTHER] if other else list(stages)
    _check_separable(f0 if other else f0[:-1], n, len(stages), a, means, max_inflation)
    if n < batches * MIN_PER_BATCH:
        raise AttributionError(
            f"{n} readings lie inside the {_duration(end - start)} window less the ± "
            f"{_duration(search)} searched shifts (of {t.size} given, {span}); "
            f"{batches * MIN_PER_BATCH} are needed ({batches} batches of {MIN_PER_BATCH}): "
            f"lengthen the window or shorten the meter's interval")

    # Grid step dividing the aperture, so the aperture end at shift i is the start at i + k.
    shortest = min(schedule.mean_duration_s(s) for s in stages)
    scale = min(a, shortest) if shortest > 0 else a
    k = max(1, math.ceil(GRID_STEPS_PER_SCALE * a / scale))
    h = a / k
    half = math.ceil(search / h) if max_shift_s > 0 else 0
    if 2 * half + 1 > MAX_GRID:
        raise AttributionError(
            f"a shift search of ± {_duration(search)} needs {2 * half + 1} alignments of "
            f"{_duration(h)} (limit {MAX_GRID}): narrow the clock offset's uncertainty")
    y0 = float(np.median(y))
    blocks = _Blocks(x, y - y0, occ, a, other, batches)
    grid = np.arange(-half, half + 1) * h
    rss, total = blocks.grid(h, half, k)
    best = int(np.nanargmin(total))
    far = np.abs(grid - grid[best]) > scale + h  # outside the best alignment's basin
    contrast = (float((total[far].min() - total[best]) / (total[best] / (n - len(names))))
                if far.any() else math.inf)
    if contrast < MIN_ALIAS_CONTRAST:
        raise AttributionError(
            f"the alignment is ambiguous: shifts {grid[best] * 1e3:+.3f} ms and "
            f"{grid[far][np.argmin(total[far])] * 1e3:+.3f} ms fit the readings nearly "
            f"equally (contrast {contrast:.3g}, need {MIN_ALIAS_CONTRAST:g}); the schedule "
            f"repeats too regularly for ± {_duration(max_shift_s)}: narrow the clock offset's "
            f"uncertainty")
    # Each block then finds its own alignment within half a pipeline cycle of the window's: a
    # meter timebase 50 ppm off moves the shift by 250 µs over a 5 s window, more than a stage.
    starts = schedule.starts[stages[0]]
    cycle = float(np.median(np.diff(starts))) if starts.size > 1 else scale
    near = np.abs(grid - grid[best]) <= max(cycle / 2, scale + h)
    al = _align_blocks(blocks, rss, grid, near, scale, len(names), schedule,
                       (max_shift_s, search))
    shift, drift, shift_se, drift_se, ref = al.shift, al.drift, al.shift_se, al.drift_se, al.ref
    block_shift = al.block_shift
    block_power = blocks.at(block_shift)[0][0] + y0
    if not np.isfinite(block_power).all():
        raise AttributionError(f"a batch of {n // batches} readings cannot separate the stages "
                               f"(mean {means}): lengthen the window")

    def aligned(d0: float, rate: float) -> np.ndarray:
        return fractions(occ, x + d0 + rate * (x - ref), a, other)

    used = al.used
    f = aligned(shift, drift)
    power = np.linalg.solve(f @ f.T, f @ (y - y0)) + y0
    residual = y - power @ f
    noise = _noise_from_differences(residual)
    var_fixed = window_error(schedule, start, x + shift + drift * (x - ref), a, f, residual)
    # The alignment's error through the powers' slopes in its shift and drift (uncorrelated:
    # the drift is fitted about the blocks' mean time).
    var_shift = _alignment_variance(aligned, y, (shift, shift_se), (drift, drift_se))
    se = np.sqrt(var_fixed + var_shift)
    with np.errstate(invalid="ignore", divide="ignore"):  # Welch-Satterthwaite
        dof = np.where(var_shift > 0, se**4 / (var_shift**2 / max(1, used - 2)
                                              + var_fixed**2 / (n - len(names))), n - len(names))
    infl = inflation(f)
    edge = _edge_effect(schedule, start, x + shift + drift * (x - ref), a, other, y - y0,
                        power - y0, edge_s)
    power, jitter, jitter_w = _jitter_corrected(schedule, start, x + shift + drift * (x - ref),
                                                a, other, y, power, stamp_jitter)
    quant = resolution_w / 2.0 if noise < resolution_w / 2.0 else 0.0
    coverage = window_coverage(t, start, end)
    method = (f"regression on stage occupancy, shift fitted; error of the window's own mean "
              f"from the per-interval and reading variances in the residuals, plus the "
              f"shift's (batch means of {used} blocks): the timing error is in this "
              f"statistical part, so the clock component is 0"
              + (f"; corrected for the bias of the stamps' {jitter * 1e6:.3g} µs jitter"
                 if jitter > 0 else ""))
    in_stage = [float(np.diff(np.interp([0.0, end - start], *o))[0]) for o in occ]
    estimates = {}
    for i, name in enumerate(names):
        estimates[name] = PowerEstimate(
            phase=name, mean_w=float(power[i]), std_error_w=float(se[i]),
            dof=float(dof[i]), method=method, n=n, weight_sum=float(f[i].sum()),
            straddling=int(((f[i] > 0) & (f[i] < 1)).sum()), boundary="regression",
            duration_s=in_stage[i] if i < len(stages) else end - start - sum(in_stage),
            windows=1, noise_w=noise, accuracy=accuracy, timing_half_width_s=0.0,
            clock_per_s_positive=0.0, clock_per_s_negative=0.0,
            quantisation_half_width_w=quant, mixing_half_width_w=float(edge[i]),
            coverage=coverage, jitter_half_width_w=float(jitter_w[i]), stamp_jitter_s=jitter)
    spread = np.std(block_power, axis=0, ddof=1) / math.sqrt(batches)
    return StageAttribution(
        estimates=estimates, shift_s=float(shift), shift_std_error_s=shift_se,
        drift=float(drift), drift_std_error=drift_se, shift_reference_s=start + ref,
        max_shift_s=max_shift_s, n_readings=n, condition=float(infl[:len(stages)].max()),
        inflation=dict(zip(names, map(float, infl), strict=True)), batches=batches,
        alias_contrast=contrast, aligned_blocks=used,
        spread_std_error_w=dict(zip(names, map(float, spread), strict=True)))
