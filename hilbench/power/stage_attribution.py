"""Power of each pipeline stage from a fast meter reading throughout single-stream inference.

Why: on a CPU a stage repeated on its own runs 10-30 % faster than inside the pipeline (it keeps
the cache the other stage would have taken), so a window that loops one stage measures other
work than the single-stream time its power is multiplied by. Here the active window runs the
single-stream pipeline itself, and a meter whose aperture is shorter than the stages reads
throughout. Each reading integrates a known mix of stages, so the stage powers follow from a
linear regression of the readings on their stage occupancy::

    watts_k = sum_s P_s f_ks(δ) + P_between f_k,between(δ) + noise

``f_ks(δ)`` is the fraction of reading k's aperture ``[t_k + δ, t_k + δ + a]`` spent in stage
s (from cumulative time-in-stage, so any number of alignments costs two ``np.interp`` per
stage); the time covered by no stage is :data:`OTHER`. The alignment δ (clock offset plus meter
start, often larger than a stage) is not known well enough to be assumed: it is fitted by least
squares over ``± max_shift_s`` (coarse grid, then a parabola through the best points).

Uncertainty: batch means over contiguous blocks of readings, each block refitting δ and the
powers, so the error holds when power varies from sample to sample or readings are correlated,
and includes δ's own error. The instrument's gain, offset and supply bounds enter each
:class:`~hilbench.power.estimators.PowerEstimate` budget as for ``phase_power``; its clock
component is 0 because δ is fitted and its error is already in the statistical part.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
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
from hilbench.power.uncertainty import InstrumentAccuracy

OTHER = "between"
# A stage power whose standard error is more than this many times that of readings lying wholly
# inside the stage (same occupancy) is refused: the readings see nearly the same mix of stages.
MAX_INFLATION = 10.0
GRID_STEPS_PER_SCALE = 10  # coarse grid: this many alignments per aperture / shortest stage
MAX_GRID = 20_000  # alignments; more means the shift range is far wider than the stages
MIN_PER_BATCH = 100  # readings per block; each half refits the shift and the powers
# The best alignment must beat every alignment outside its basin by this much (ΔRSS over the
# residual variance, a likelihood ratio of ~5 sigma); otherwise the schedule repeats too
# regularly for the readings to say which cycle they belong to.
MIN_ALIAS_CONTRAST = 25.0
OVERLAP_TOLERANCE_S = 1e-9  # stages that touch may overlap by rounding, not more
SHIFT_TOLERANCE_S = 1e-9  # a stage power moves ~0.05 W per µs of shift
CHUNK = 2_000_000  # (alignments x readings) evaluated at once, bounds memory to ~100 MB


class AttributionError(ValueError):
    """The readings cannot separate the stages; the message says why and what to change."""


@dataclass(frozen=True)
class StageSchedule:
    """Where each stage ran, on the orchestrator timeline (agent times already mapped by the
    phase's clock offset). Intervals of all stages are disjoint; time inside the window that
    no stage covers is the remainder state :data:`OTHER` (load/unload, harness, round trips)."""

    starts: dict[str, np.ndarray]
    ends: dict[str, np.ndarray]

    def __post_init__(self) -> None:
        if set(self.starts) != set(self.ends) or not self.starts:
            raise ValueError(f"schedule needs the same stages in starts and ends, got "
                             f"{sorted(self.starts)} and {sorted(self.ends)}")
        if OTHER in self.starts:
            raise ValueError(f"{OTHER!r} is the time no stage covers; it cannot be a stage")
        starts, ends = {}, {}
        for stage in self.starts:
            s = np.asarray(self.starts[stage], dtype=np.float64)
            e = np.asarray(self.ends[stage], dtype=np.float64)
            if s.ndim != 1 or s.shape != e.shape:
                raise ValueError(f"stage {stage!r}: starts and ends must be 1-D of equal length, "
                                 f"got {s.shape} and {e.shape}")
            if not (np.isfinite(s).all() and np.isfinite(e).all()):
                raise ValueError(f"stage {stage!r}: interval times must be finite numbers")
            if (e < s).any():
                i = int(np.flatnonzero(e < s)[0])
                raise ValueError(f"stage {stage!r}: interval {i} ends ({e[i]} s) before it "
                                 f"starts ({s[i]} s)")
            if (s[1:] < e[:-1]).any():
                i = int(np.flatnonzero(s[1:] < e[:-1])[0]) + 1
                raise ValueError(f"stage {stage!r}: intervals must be sorted and disjoint; "
                                 f"interval {i} starts at {s[i]} s, before {i - 1} ends")
            starts[stage], ends[stage] = s, e
        object.__setattr__(self, "starts", starts)  # float arrays, the caller's dicts untouched
        object.__setattr__(self, "ends", ends)
        stage_of = np.concatenate([np.full(len(self.starts[k]), i)
                                   for i, k in enumerate(self.starts)])
        s = np.concatenate(list(self.starts.values()))
        e = np.concatenate([self.ends[k] for k in self.starts])
        order = np.argsort(s, kind="stable")
        s, e, stage_of = s[order], e[order], stage_of[order]
        bad = np.flatnonzero(s[1:] < e[:-1] - OVERLAP_TOLERANCE_S)
        if bad.size:
            i = int(bad[0])
            names = list(self.starts)
            raise ValueError(f"stages overlap: {names[stage_of[i]]!r} runs until {e[i]} s, "
                             f"{names[stage_of[i + 1]]!r} starts at {s[i + 1]} s")

    @classmethod
    def consecutive(cls, t_start: np.ndarray, durations: Mapping[str, np.ndarray]
                    ) -> StageSchedule:
        """Stages that run back to back from each sample's ``t_start``, in ``durations``' order
        (the single-stream pipeline: pre-processing, then inference)."""
        t = np.asarray(t_start, dtype=np.float64)
        starts, ends = {}, {}
        for stage, d in durations.items():
            starts[stage] = t
            t = t + np.asarray(d, dtype=np.float64)
            ends[stage] = t
        return cls(starts, ends)

    @property
    def stages(self) -> tuple[str, ...]:
        return tuple(self.starts)

    def mean_duration_s(self, stage: str) -> float:
        d = self.ends[stage] - self.starts[stage]
        return float(d.mean()) if d.size else 0.0


@dataclass(frozen=True)
class StageAttribution:
    """Stage powers from one window and how well the readings were aligned with the schedule."""

    estimates: dict[str, PowerEstimate]  # one per stage and OTHER; .phase = the stage name
    shift_s: float  # reading k integrated [t_k + shift, t_k + shift + aperture] (true time)
    shift_std_error_s: float  # batch means of the per-block shifts, ``batches - 1`` dof
    max_shift_s: float
    n_readings: int
    # Identifiability: the largest SE inflation over the stages, sqrt(var_s / var_s ideal),
    # where "ideal" is readings lying wholly inside one stage with the same occupancy. 1 is
    # perfect; above MAX_INFLATION the attribution is refused.
    condition: float
    inflation: dict[str, float] = field(default_factory=dict)
    batches: int = BATCHES
    alias_contrast: float = math.inf  # ΔRSS / residual variance of the best other alignment
    # Batch means of whole blocks: the error as an estimate of the stage's mean over samples
    # like these (adds the device's own sample-to-sample variation to std_error_w's error).
    spread_std_error_w: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": "regression on stage occupancy, alignment fitted",
            "shift_s": self.shift_s,
            "shift_std_error_s": self.shift_std_error_s,
            "shift_dof": self.batches - 1,
            "max_shift_s": self.max_shift_s,
            "n_readings": self.n_readings,
            "condition": self.condition,
            "inflation": dict(self.inflation),
            "batches": self.batches,
            "alias_contrast": None if math.isinf(self.alias_contrast) else self.alias_contrast,
            "spread_std_error_w": dict(self.spread_std_error_w),
            "estimates": {k: e.to_dict() for k, e in self.estimates.items()},
        }


def _occupancy(schedule: StageSchedule, origin: float) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per stage, knots of the cumulative time spent in it (piecewise linear, flat between)."""
    out = []
    for stage in schedule.stages:
        s, e = schedule.starts[stage] - origin, schedule.ends[stage] - origin
        before = np.concatenate(([0.0], np.cumsum(e - s)[:-1]))
        out.append((np.column_stack((s, e)).ravel(),
                    np.column_stack((before, before + (e - s))).ravel()))
    return out


def _fractions(occ: list[tuple[np.ndarray, np.ndarray]], x: np.ndarray, a: float,
               other: bool) -> list[np.ndarray]:
    """Design columns (stages, then OTHER) for apertures starting at ``x``."""
    cols = [(np.interp(x + a, kx, ky) - np.interp(x, kx, ky)) / a for kx, ky in occ]
    if other:
        cols.append(1.0 - sum(cols))
    return cols


def _block_stats(f: list[np.ndarray], y: np.ndarray, cuts: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """X'X and X'y per block for design columns ``f`` (each (G, n)): shapes (G, B, m, m) and
    (G, B, m)."""
    m = len(f)
    xtx = np.empty((f[0].shape[0], cuts.size, m, m))
    for i in range(m):
        for j in range(i, m):
            xtx[..., i, j] = xtx[..., j, i] = np.add.reduceat(f[i] * f[j], cuts, axis=-1)
    xty = np.stack([np.add.reduceat(f[i] * y, cuts, axis=-1) for i in range(m)], axis=-1)
    return xtx, xty


def _solve(xtx: np.ndarray, xty: np.ndarray, yty: np.ndarray | float
           ) -> tuple[np.ndarray, np.ndarray]:
    beta = np.linalg.solve(xtx, xty[..., None])[..., 0]
    return beta, yty - (beta * xty).sum(axis=-1)


def _inflation(f: np.ndarray) -> np.ndarray:
    """SE of each column's coefficient relative to readings wholly inside that column's state."""
    xtx = f @ f.T
    try:
        diag = np.diag(np.linalg.inv(xtx))
    except np.linalg.LinAlgError:
        return np.full(f.shape[0], math.inf)
    with np.errstate(invalid="ignore"):
        ratio = diag * f.sum(axis=1)
    return np.where(np.isfinite(ratio) & (ratio > 0), np.sqrt(np.abs(ratio)), math.inf)


def _golden(rss: Callable[[np.ndarray], np.ndarray], lo: np.ndarray, hi: np.ndarray,
            tol: float) -> np.ndarray:
    """Minimum of each of several unimodal curves, one bracket per curve, all at once: a
    stage power moves ~0.05 W per µs of shift, so the shift is wanted to ~1 ns, which no
    parabola through a grid gives (the curve has a kink wherever an aperture edge crosses a
    stage boundary)."""
    g = (math.sqrt(5.0) - 1.0) / 2.0
    c, d = hi - g * (hi - lo), lo + g * (hi - lo)
    fc, fd = rss(c), rss(d)
    while float(np.max(hi - lo)) > tol:
        left = fc < fd  # the minimum lies in [lo, d]
        lo, hi = np.where(left, lo, c), np.where(left, d, hi)
        x = np.where(left, hi - g * (hi - lo), lo + g * (hi - lo))
        fx = rss(x)
        c, d, fc, fd = (np.where(left, x, d), np.where(left, c, x),
                        np.where(left, fx, fd), np.where(left, fc, fx))
    return (lo + hi) / 2.0


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
) -> StageAttribution:
    """Stage powers (and OTHER's) from readings ``watts`` stamped at ``t`` (start of each
    aperture, orchestrator time) over the pipeline ``schedule`` inside ``window``.

    Only readings whose aperture lies inside the window at every shift in ``± max_shift_s``
    are used, so every alignment is judged on the same readings. Raises
    :class:`AttributionError` when the stages cannot be separated (aperture long compared with
    the stages), when the best alignment lies at the edge of the shift range or is not unique,
    or when too few readings remain; :class:`ValueError` for malformed input.
    """
    t, watts = _as_arrays(t, watts)
    start, end = (float(v) for v in window)
    a = float(aperture_s)
    for name, v in (("aperture_s", a), ("max_shift_s", max_shift_s)):
        if not (math.isfinite(v) and v >= 0) or (name == "aperture_s" and v == 0):
            raise ValueError(f"{name} must be a finite positive number, got {v}")
    if not (math.isfinite(start) and math.isfinite(end) and end > start):
        raise ValueError(f"window must be (start, end) with end after start, got {window}")
    if batches < 2:
        raise ValueError(f"batch means need at least 2 batches, got {batches}")
    use = (t - max_shift_s >= start) & (t + a + max_shift_s <= end)
    n = int(use.sum())
    span = f"{t[0]:g}..{t[-1]:g} s" if t.size else "none"
    if n == 0:
        raise AttributionError(
            f"no reading lies inside the window {start:g}..{end:g} s (less the ± "
            f"{_duration(max_shift_s)} shift range and the {_duration(a)} aperture); the "
            f"readings span {span}")
    x, y = t[use] - start, watts[use]
    occ = _occupancy(schedule, start)
    stages = list(schedule.stages)
    means = ", ".join(f"{s} {_duration(schedule.mean_duration_s(s))}" for s in stages)
    f0 = np.stack(_fractions(occ, x, a, other=True))
    unseen = [s for s, col in zip(stages, f0, strict=False) if col.max() <= 0]
    if unseen:
        raise AttributionError(f"no reading inside the window {start:g}..{end:g} s sees "
                               f"stage(s) {unseen} (mean durations: {means})")
    other = f0[-1].max() > 0  # a schedule that tiles the window leaves no OTHER to fit
    names = [*stages, OTHER] if other else stages
    f0 = f0 if other else f0[:-1]
    infl = _inflation(f0) if n > len(names) else np.full(len(names), math.inf)
    if infl[:len(stages)].max() > max_inflation:
        raise AttributionError(
            f"the {_duration(a)} aperture is long compared with the stages (mean {means}): "
            f"the readings see too similar a mix to separate the stage powers (standard error "
            f"x{infl[:len(stages)].max():.3g} that of readings inside one stage, limit "
            f"x{max_inflation:g}); use an aperture (NPLC) shorter than the shortest stage and "
            f"a sample interval of a few apertures")
    need = batches * MIN_PER_BATCH
    if n < need:
        raise AttributionError(
            f"{n} readings lie inside the {_duration(end - start)} window less the ± "
            f"{_duration(max_shift_s)} shift range (of {t.size} given, {span}); {need} are "
            f"needed ({batches} batches of {MIN_PER_BATCH}): lengthen the window or shorten "
            f"the meter's interval")

    # Coarse grid with a step dividing the aperture, so the aperture end at shift g is the
    # aperture start at shift g + k: one interpolation per reading, stage and alignment.
    shortest = min(schedule.mean_duration_s(s) for s in stages)
    scale = min(a, shortest) if shortest > 0 else a
    k = max(1, math.ceil(GRID_STEPS_PER_SCALE * a / scale))
    h = a / k
    half = math.ceil(max_shift_s / h) if max_shift_s > 0 else 0
    if 2 * half + 1 > MAX_GRID:
        raise AttributionError(
            f"a shift range of ± {_duration(max_shift_s)} needs {2 * half + 1} alignments of "
            f"{_duration(h)} (limit {MAX_GRID}): narrow the clock offset's uncertainty")
    # Each contiguous block is split into its even and odd readings: the halves see the same
    # stretch of the device's behaviour at other phases of the pipeline, so their difference
    # is the measurement's own error (noise, where the readings fell, the shift), while the
    # device's sample-to-sample variation, which is part of the window's true mean, cancels.
    y0 = float(np.median(y))  # columns sum to 1, so centring y only moves every power by y0
    block = np.repeat(np.arange(batches), [p.size for p in np.array_split(np.arange(n), batches)])
    group = 2 * block + np.arange(n) % 2
    order = np.argsort(group, kind="stable")
    xs, ys = x[order], y[order] - y0
    sizes = np.bincount(group, minlength=2 * batches)
    cuts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    yty = np.add.reduceat(ys * ys, cuts)

    def stats(cols: list[np.ndarray]) -> tuple[np.ndarray, ...]:
        """Per-group fits (powers, RSS) and the global fit's RSS, for each row of ``cols``."""
        xtx, xty = _block_stats(cols, ys, cuts)
        with np.errstate(all="ignore"):
            p, r = _solve(xtx, xty, yty)
            return p, r, _solve(xtx.sum(axis=1), xty.sum(axis=1), yty.sum())[1]

    def at(shifts: np.ndarray) -> tuple[np.ndarray, ...]:
        """``stats`` with each group at its own shift (``shifts`` one per group)."""
        cols = _fractions(occ, xs + np.repeat(shifts, sizes), a, other)
        return stats([c[None, :] for c in cols])

    grid = np.arange(-half, half + 1) * h
    rss, total = np.empty((grid.size, 2 * batches)), np.empty(grid.size)
    ext = np.arange(-half, half + k + 1) * h
    rows = max(1, CHUNK // n)
    for g0 in range(0, grid.size, rows):
        g1 = min(grid.size, g0 + rows)
        cum = [np.interp(xs[None, :] + ext[g0:g1 + k, None], kx, ky) for kx, ky in occ]
        cols = [(c[k:] - c[:-k]) / a for c in cum]
        if other:
            cols.append(1.0 - sum(cols))
        _, rss[g0:g1], total[g0:g1] = stats(cols)
    best = int(np.nanargmin(total))
    if half and (best < 1 or best > grid.size - 2):
        raise AttributionError(
            f"the readings fit the schedule best at a shift of {grid[best] * 1e3:+.3f} ms, the "
            f"edge of the ± {_duration(max_shift_s)} range: the clocks are further apart than "
            f"max_shift_s allows (widen it) or the schedule is not the one that ran")
    # Alignments outside the best basin (one scale either side) must fit clearly worse.
    far = np.abs(grid - grid[best]) > scale + h
    contrast = (float((total[far].min() - total[best]) / (total[best] / (n - len(names))))
                if far.any() else math.inf)
    if contrast < MIN_ALIAS_CONTRAST:
        alt = float(grid[far][np.argmin(total[far])])
        raise AttributionError(
            f"the alignment is ambiguous: shifts {grid[best] * 1e3:+.3f} ms and "
            f"{alt * 1e3:+.3f} ms fit the readings nearly equally (contrast {contrast:.3g}, "
            f"need {MIN_ALIAS_CONTRAST:g}); the schedule repeats too regularly for "
            f"± {_duration(max_shift_s)}: narrow the clock offset's uncertainty")

    # The global shift, then each half-block's own inside the global basin (coarse best ± h).
    if half:
        shift = float(_golden(lambda d: at(np.repeat(d, 2 * batches))[2],
                              grid[best:best + 1] - h, grid[best:best + 1] + h,
                              SHIFT_TOLERANCE_S)[0])
        lo, hi = max(0, best - k), min(grid.size, best + k + 1)
        centre = grid[lo:hi][np.argmin(rss[lo:hi], axis=0)]
        group_shift = _golden(lambda d: at(d)[1][0], centre - h, centre + h, SHIFT_TOLERANCE_S)
    else:
        shift, group_shift = 0.0, np.zeros(2 * batches)
    group_power = at(group_shift)[0][0] + y0
    if not np.isfinite(group_power).all():
        raise AttributionError(f"{n // (2 * batches)} readings (half a batch) cannot separate "
                               f"the stages (mean {means}): lengthen the window")
    halves = group_power.reshape(batches, 2, -1)
    se = np.sqrt(np.mean((halves[:, 0] - halves[:, 1]) ** 2, axis=0) / (4 * batches))
    spread_se = np.std(halves.mean(axis=1), axis=0, ddof=1) / math.sqrt(batches)
    block_shift = group_shift.reshape(batches, 2).mean(axis=1)
    f = np.stack(_fractions(occ, x + shift, a, other))
    power = np.linalg.solve(f @ f.T, f @ (y - y0)) + y0
    noise = _noise_from_differences(y - power @ f)
    infl = _inflation(f)
    quant = resolution_w / 2.0 if noise < resolution_w / 2.0 else 0.0
    coverage = window_coverage(t, start, end)
    method = (f"regression on stage occupancy, shift fitted; error from {batches} contiguous "
              f"blocks, each split into even and odd readings refitting shift and powers (the "
              f"timing error is in this statistical part, so the clock component is 0)")
    in_window = np.array([np.diff(np.interp([0.0, end - start], kx, ky))[0] for kx, ky in occ])
    estimates = {}
    for i, name in enumerate(names):
        occupied = float(in_window[i]) if i < len(stages) else float(end - start - in_window.sum())
        estimates[name] = PowerEstimate(
            phase=name, mean_w=float(power[i]), std_error_w=float(se[i]),
            dof=float(batches), method=method, n=n, weight_sum=float(f[i].sum()),
            straddling=int(((f[i] > 0) & (f[i] < 1)).sum()), boundary="regression",
            duration_s=occupied, windows=1, noise_w=noise, accuracy=accuracy,
            timing_half_width_s=0.0, clock_per_s_positive=0.0, clock_per_s_negative=0.0,
            quantisation_half_width_w=quant, mixing_half_width_w=0.0, coverage=coverage)
    return StageAttribution(
        estimates=estimates, shift_s=shift,
        shift_std_error_s=float(np.std(block_shift, ddof=1) / math.sqrt(batches)),
        max_shift_s=float(max_shift_s), n_readings=n, condition=float(infl[:len(stages)].max()),
        inflation=dict(zip(names, map(float, infl), strict=True)), batches=batches,
        alias_contrast=contrast,
        spread_std_error_w=dict(zip(names, map(float, spread_se), strict=True)))
