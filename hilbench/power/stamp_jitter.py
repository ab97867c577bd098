"""How far the device's stage stamps jitter, measured from the readings, and the bias that
jitter leaves in the attributed stage powers, removed and its error stated.

Why: the attribution (:mod:`hilbench.power.stage_attribution`) fits one shift (and drift) for
the whole schedule; a sample whose stamps are off by their own amount has its stage edges in
the wrong place, so readings of one stage are read as another's. That is an errors-in-variables
bias (each stage power pulled toward its neighbours'), not noise the residuals average away:
with 60 µs of stamp jitter on a 90 µs inference the attribution read 7.1 mW low (truth 104 mW)
while it stated ± 1.0 mW, and the fitted shift itself moved by 11-16 µs.

Measured, not assumed: each sample's own alignment is fitted from the readings of its zone,
with the sample's own stage powers (a sample whose power differs must not read as jitter;
:func:`sample_offsets`); their robust spread (1.4826 × MAD), less in quadrature what the
readings' noise alone gives (residual variance over the RSS curvature), is the stamps' jitter.
On a synthetic window (1.5-2 ms pre-processing, 0.8-1 ms inference, 10 kS/s) it read 0.4,
18.7, 57.5 and 145 µs for 0, 20, 60 and 150 µs. A sample needs MIN_PER_SAMPLE readings per
parameter in its zone: where fewer than MIN_SAMPLES samples have them (the CPU bench of
``hilbench bench stage-attribution``: ~3 readings a sample) the jitter is not measurable and
taken as 0, which the figure's method does not then mention.

The bias: readings are simulated from the fitted powers on the schedule as stamped, the
schedule jittered by the measured amount (each sample's intervals together, never past half a
gap), the alignment refitted by two parabolic steps as the real fit would, and the powers
refitted; the mean change over a few draws is the bias at those powers, evaluated again at the
powers less it (three times: the bias shrinks the stages' contrast it depends on). The figure
is corrected by it; the correction's error (the draws' scatter and the measured jitter's own
error) is the budget's "stamp jitter" component. A schedule with no measurable jitter keeps its
figure and budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from hilbench.power.stage_design import Occupancy, intervals_occupancy
from hilbench.power.stage_schedule import StageSchedule

MAD_TO_SD = 1.4826  # a normal distribution's standard deviation per median absolute deviation
DRAWS = 6  # re-jittered schedules; their scatter is in the component
ITERATIONS = 3  # bias evaluated at the powers less the previous estimate of it
SHIFT_STEPS = 2  # parabolic steps of the refitted alignment
MAD_RELATIVE_SE = 1.16  # a MAD-based SD's relative SE times √n (normal data, 37 % efficient)
MIN_SAMPLES = 10  # samples needed to measure the jitter at all
GRID = 81  # alignments tried per sample
MIN_PER_SAMPLE = 3  # readings per fitted parameter in a sample's zone
SEED = 35  # the re-jittering is part of the analysis: the same readings give the same figure


def sample_offsets(schedule: StageSchedule, origin: float, u: np.ndarray, a: float,
                   design: Callable[[Occupancy, float], np.ndarray], y: np.ndarray,
                   power: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each sample's own alignment about the fitted one: the shift (within ± half the median
    gap between samples) that best fits the readings of its zone (from the middle of the gap
    before it to the middle of the gap after it), its stage powers fitted with it. ``u`` are
    the readings' aperture starts on the schedule's timeline at the fitted alignment. The first
    and last sample, which the window may cut, are left out. Returns the offsets and each
    one's variance from the readings' noise (residual variance over the RSS curvature)."""
    s, e, kind, (cycle, _room) = _cycles(schedule)
    cycle = cycle.astype(int)
    samples = int(cycle.max()) + 1 if cycle.size else 0
    if samples < MIN_SAMPLES + 2:
        return np.zeros(0), np.zeros(0)
    first_start = s[np.searchsorted(cycle, np.arange(samples))] - origin
    last_end = np.maximum.reduceat(e, np.searchsorted(cycle, np.arange(samples))) - origin
    gaps = first_start[1:] - last_end[:-1]
    zone = np.searchsorted((last_end[:-1] + first_start[1:]) / 2.0, u + a / 2.0)
    reach = max(float(np.median(gaps)) / 2.0, a)
    grid = np.linspace(-reach, reach, GRID)
    counts = np.bincount(zone, minlength=samples)
    m = power.size
    if np.count_nonzero(counts[1:-1] >= MIN_PER_SAMPLE * (m + 1)) < MIN_SAMPLES:
        return np.zeros(0), np.zeros(0)  # too few readings a sample: not measurable, not tried
    occ = _occupancy(s, e, kind, len(schedule.stages), origin)
    rss = np.stack([_local_rss(design(occ, d), y, zone, samples) for d in grid])
    best = np.clip(np.argmin(np.where(np.isnan(rss), np.inf, rss), axis=0), 1, GRID - 2)
    cols = np.arange(samples)
    lo, mid, hi = rss[best - 1, cols], rss[best, cols], rss[best + 1, cols]
    curve = lo - 2.0 * mid + hi
    with np.errstate(invalid="ignore", divide="ignore"):
        step = np.where(curve > 0, (lo - hi) / (2.0 * curve), 0.0).clip(-1.0, 1.0)
    h = grid[1] - grid[0]
    found = grid[best] + step * h
    noise = float(np.nansum(rss[GRID // 2])) / max(1, y.size - (m + 1) * samples)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(curve > 0, 2.0 * noise * h * h / curve, np.inf)
    seen = (counts >= MIN_PER_SAMPLE * (m + 1)) & np.isfinite(var) & np.isfinite(mid)
    seen[[0, -1]] = False
    return found[seen], var[seen]


def stamp_jitter_s(offsets: np.ndarray, fit_variance: np.ndarray) -> float:
    """The stamps' jitter: the robust spread (1.4826 × MAD) of the samples' own alignments less
    (in quadrature) the median spread the readings' noise alone gives them; 0 with fewer than
    MIN_SAMPLES of them."""
    if offsets.size < MIN_SAMPLES:
        return 0.0
    spread = MAD_TO_SD * float(np.median(np.abs(offsets - np.median(offsets))))
    return math.sqrt(max(0.0, spread**2 - float(np.median(fit_variance))))


def _cycles(schedule: StageSchedule) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Merged intervals and, per interval, the sample it belongs to; each sample's room to move
    (half the gap on either side) so re-jittered samples never overlap."""
    s, e, kind = schedule.merged()
    cycle = np.maximum(np.cumsum(kind == 0) - 1, 0)
    n = int(cycle.max()) + 1 if cycle.size else 0
    first = np.searchsorted(cycle, np.arange(n))
    last = np.searchsorted(cycle, np.arange(n), side="right") - 1
    gap = np.concatenate(([np.inf], s[first[1:]] - e[last[:-1]], [np.inf]))
    room = np.minimum(gap[:-1], gap[1:]) / 2.0
    return s, e, kind, np.stack((cycle, room[cycle]))


def _occupancy(s: np.ndarray, e: np.ndarray, kind: np.ndarray, stages: int, origin: float
               ) -> Occupancy:
    """Occupancy of merged intervals (``kind`` their stage)."""
    return intervals_occupancy([(s[kind == k], e[kind == k]) for k in range(stages)], origin)


def _parabola_step(rss: Callable[[float], float], at: float, h: float) -> float:
    """Where a parabola through the RSS at ``at - h``, ``at``, ``at + h`` is lowest (clamped
    to ``± 2 h``): the jittered RSS is smooth on the jitter's scale."""
    lo, mid, hi = rss(at - h), rss(at), rss(at + h)
    curve = lo - 2.0 * mid + hi
    if curve <= 0:
        return at - h if lo < hi else at + h
    return at + float(np.clip(h * (lo - hi) / (2.0 * curve), -2.0 * h, 2.0 * h))


def _solve(xtx: np.ndarray, xty: np.ndarray) -> np.ndarray:
    """Least squares from normal equations; a (near) singular one by pseudo-inverse."""
    try:
        return np.linalg.solve(xtx, xty[..., None])[..., 0]
    except np.linalg.LinAlgError:
        return (np.linalg.pinv(xtx) @ xty[..., None])[..., 0]


def _well_conditioned(xtx: np.ndarray, readings: np.ndarray, limit: float = 1e8) -> np.ndarray:
    """Which zones' normal matrices (symmetric, positive semi-definite) have a 2-norm condition
    number below ``limit``, from their eigenvalues; a zone with fewer readings than parameters
    is singular and not computed. Why: ``np.linalg.cond``'s SVD per zone per trial alignment was
    most of the attribution's time (101 000 3×3 matrices for a window of 3 000 readings)."""
    ok = np.zeros(len(xtx), dtype=bool)
    full = np.flatnonzero(readings >= xtx.shape[-1])
    if full.size:
        eigen = np.linalg.eigvalsh(xtx[full])
        ok[full] = eigen[:, 0] > eigen[:, -1] / limit
    return ok


def _local_rss(g: np.ndarray, y: np.ndarray, zone: np.ndarray, samples: int) -> np.ndarray:
    """Each zone's residual sum of squares with its own stage powers fitted (a sample's powers
    may differ from the window's: only its timing is asked of it); NaN where they cannot be."""
    m = g.shape[0]
    xtx = np.empty((samples, m, m))
    for i in range(m):
        for j in range(i, m):
            xtx[:, i, j] = xtx[:, j, i] = np.bincount(zone, g[i] * g[j], samples)
    xty = np.stack([np.bincount(zone, g[i] * y, samples) for i in range(m)], axis=-1)
    yty = np.bincount(zone, y * y, samples)
    ok = _well_conditioned(xtx, np.bincount(zone, minlength=samples))
    beta = np.zeros((samples, m))
    beta[ok] = _solve(xtx[ok], xty[ok])
    return np.where(ok, yty - (beta * xty).sum(axis=-1), np.nan)


def jitter_bias(schedule: StageSchedule, origin: float, jitter_s: float,
                design: Callable[[Occupancy, float], np.ndarray], power: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """Bias of each fitted power from stamp jitter ``jitter_s`` (see the module) and the
    standard error of that estimate from the draws' scatter. ``design(occupancy, d)`` gives
    the design rows for another schedule with the fitted alignment moved by ``d``."""
    zero = np.zeros(power.shape)
    if jitter_s <= 0:
        return zero, zero
    s, e, kind, (cycle, room) = _cycles(schedule)
    cycle = cycle.astype(int)
    stages = len(schedule.stages)
    rng = np.random.default_rng(SEED)
    moved = [_occupancy(s + d, e + d, kind, stages, origin) for d in (
        np.clip(rng.standard_normal(int(cycle.max()) + 1)[cycle] * jitter_s, -room, room)
        for _ in range(DRAWS))]
    f = design(_occupancy(s, e, kind, stages, origin), 0.0)
    h = jitter_s / 2.0
    model = power
    for _ in range(ITERATIONS):  # the bias at the powers less their bias
        y = model @ f
        fits = []
        for occ in moved:
            def fit(d: float, occ: Occupancy = occ, y: np.ndarray = y
                    ) -> tuple[np.ndarray, float]:
                g = design(occ, d)
                p = _solve(g @ g.T, g @ y)
                return p, float(((y - p @ g) ** 2).sum())
            d = 0.0
            for _ in range(SHIFT_STEPS):  # the alignment is refitted, as the real fit does
                d = _parabola_step(lambda v, fit=fit: fit(v)[1], d, h)
            fits.append(fit(d)[0] - model)
        biases = np.array(fits)
        model = power - biases.mean(axis=0)
    return biases.mean(axis=0), biases.std(axis=0, ddof=1) / math.sqrt(DRAWS)


def correction_half_width(bias: np.ndarray, bias_se: np.ndarray, samples: int) -> np.ndarray:
    """Half-width of the jitter correction's error: the draws' scatter (2 SE) and the measured
    jitter's own error — a MAD-based spread of ``samples`` offsets is known to 1.16/√samples
    (relative), and the bias grows at most as the jitter's square, so twice that of it."""
    relative = MAD_RELATIVE_SE / math.sqrt(max(1, samples))
    return 2.0 * relative * np.abs(bias) + 2.0 * bias_se
