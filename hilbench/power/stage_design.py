"""The regression's design for stage attribution: how much of each reading's aperture each
stage occupies, how well that separates the stages, and what the fit's error is against the
window's own time-weighted stage power.

Why apart from the fit (:mod:`hilbench.power.stage_attribution`): these are what the readings
and the schedule say before and after any alignment is chosen, each testable on its own.
"""

from __future__ import annotations

import math

import numpy as np

from hilbench.power.stage_schedule import OVERLAP_TOLERANCE_S, StageSchedule

Occupancy = list[tuple[np.ndarray, np.ndarray]]


def occupancy(schedule: StageSchedule, origin: float) -> Occupancy:
    """Per stage, knots of the cumulative time spent in it (piecewise linear, flat between)."""
    return intervals_occupancy([(schedule.starts[k], schedule.ends[k]) for k in schedule.stages],
                               origin)


def intervals_occupancy(intervals: list[tuple[np.ndarray, np.ndarray]], origin: float
                        ) -> Occupancy:
    """:func:`occupancy` of each stage's (starts, ends), sorted and disjoint within a stage."""
    out = []
    for starts, ends in intervals:
        s, e = starts - origin, ends - origin
        before = np.concatenate(([0.0], np.cumsum(e - s)[:-1]))
        out.append((np.column_stack((s, e)).ravel(),
                    np.column_stack((before, before + (e - s))).ravel()))
    return out


def columns(cum: list[np.ndarray], k: int, a: float, other: bool) -> list[np.ndarray]:
    """Design columns (stages, then OTHER) from cumulative occupancy at aperture starts (the
    aperture end of row i is the start of row i + k)."""
    cols = [(c[k:] - c[:-k]) / a for c in cum]
    return [*cols, 1.0 - sum(cols)] if other else cols


def fractions(occ: Occupancy, x: np.ndarray, a: float, other: bool) -> np.ndarray:
    """Design columns for apertures starting at ``x``: shape (m, n)."""
    cum = [np.interp(np.stack((x, x + a)), *o) for o in occ]
    return np.concatenate(columns(cum, 1, a, other))


def inflation(f: np.ndarray) -> np.ndarray:
    """SE of each column's coefficient relative to readings wholly inside that column's state."""
    try:
        diag = np.diag(np.linalg.inv(f @ f.T))
    except np.linalg.LinAlgError:
        return np.full(f.shape[0], math.inf)
    ratio = diag * f.sum(axis=1)
    return np.where(np.isfinite(ratio) & (ratio > 0), np.sqrt(np.abs(ratio)), math.inf)


def window_error(schedule: StageSchedule, origin: float, u: np.ndarray, a: float,
                  f: np.ndarray, residual: np.ndarray) -> np.ndarray:
    """Variance of each power's error against the window's own time-weighted stage power.

    Each interval j has power P_kind(j) + d_j. The fit weighs interval j by (A G)_sj (A the
    least-squares map, G_kj reading k's share of interval j), the truth by its duration share
    T_sj; d_j is part of the truth, so only c = A G - T carries it into the error:
    var_s = sum_j c_sj^2 var_kind(j) + noise^2 (X'X)^-1_ss, with the variances from the
    residuals, E r_k^2 = noise^2 + sum_s var_s sum_(j in s) G_kj^2."""
    m = f.shape[0]
    lo, hi = float(u[0]), float(u[-1] + a)
    s, e, kind = schedule.merged()
    s, e = s - origin, e - origin
    keep = (e > lo) & (s < hi)
    s, e, kind = np.clip(s[keep], lo, hi), np.clip(e[keep], lo, hi), kind[keep]
    gap_s, gap_e = np.concatenate(([lo], e)), np.concatenate((s, [hi]))
    gap = gap_e > gap_s + OVERLAP_TOLERANCE_S  # OTHER's intervals
    order = np.argsort(np.concatenate((s, gap_s[gap])), kind="stable")
    seg_s = np.concatenate((s, gap_s[gap]))[order]
    seg_e = np.maximum(np.concatenate((e, gap_e[gap]))[order], seg_s)
    kind = np.minimum(np.concatenate((kind, np.full(int(gap.sum()), m - 1)))[order], m - 1)
    i0 = np.searchsorted(seg_e, u, side="right")
    i1 = np.searchsorted(seg_s, u + a, side="left") - 1
    rk = np.concatenate([np.flatnonzero(i0 + o <= i1) for o in range(int((i1 - i0).max()) + 1)])
    rj = np.concatenate([i0[i0 + o <= i1] + o for o in range(int((i1 - i0).max()) + 1)])
    g = (np.minimum(seg_e[rj], u[rk] + a) - np.maximum(seg_s[rj], u[rk])).clip(0.0) / a
    inv = np.linalg.inv(f @ f.T)
    seen = np.stack([np.bincount(rj, f[i, rk] * g, seg_s.size) for i in range(m)])
    dur = seg_e - seg_s
    share = np.zeros((m, seg_s.size))
    share[kind, np.arange(seg_s.size)] = dur / np.bincount(kind, dur, m)[kind]
    q = np.stack([np.bincount(rk, g * g * (kind[rj] == i), u.size) for i in range(m)])
    var = np.linalg.lstsq(np.vstack((np.ones(u.size), q)).T, residual**2, rcond=None)[0]
    var = var.clip(0.0)
    return ((inv @ seen - share) ** 2 * var[1:][kind]).sum(axis=1) + var[0] * np.diag(inv)
