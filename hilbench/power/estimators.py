"""Mean power of one phase (idle or active) from timestamped readings, with its error sources.

- *statistical*: standard error of the window mean. Readings that integrate without gaps
  (aperture ~ sample interval) see all of the device's own variation, which is then part of
  the true mean, so only instrument noise counts (estimated robustly from successive
  differences). Readings with gaps sample the device, whose structure makes neighbouring
  readings correlated, so the error comes from batch means (20 contiguous batches, Student t
  with 19 degrees of freedom). Repetitions of a phase are pooled; when their scatter exceeds
  what the within-window errors explain, the between-repetition error is used instead.
- *clock offset*: the samples' timestamps are known to ± ``timing_uncertainty_s``; the effect
  of a shifted window on the mean is measured from the samples themselves (window re-evaluated
  shifted by ± that amount).
- *quantisation*: half a resolution step, counted only when the readings are not dithered by
  noise (otherwise it is already in the scatter); *boundary mixing*: under the ``"weight"``
  policy, readings straddling a boundary carry some neighbouring power; *unobserved edges*:
  the stretches at the window's ends that no kept reading covers.

Each :class:`PowerEstimate` turns these into an
:class:`~hilbench.power.uncertainty.UncertaintyBudget`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from hilbench.power.align import (
    Aperture,
    BoundaryPolicy,
    select_window,
    tile_spans,
    typical_interval,
    window_coverage,
)
from hilbench.power.source import SourceInfo
from hilbench.power.uncertainty import (
    InstrumentAccuracy,
    UncertaintyBudget,
    UncertaintyComponent,
)

PHASES: tuple[str, ...] = ("idle", "active")
BATCHES = 20  # batch-means batches; the statistical error then has 19 degrees of freedom
GAPLESS_DUTY = 0.95  # aperture / interval above which readings are taken to tile time
SHIFT_STEPS = 8  # shifts each way at which a peaked clock response is measured
EDGE_SAMPLES = 5  # fully-inside readings used as the in-window level next to a boundary
DEFAULT_MIN_COVERAGE = 0.95  # a window whose readings cover less is refused, saying by how much
_MAD_TO_SIGMA = 1.482602218505602


@dataclass(frozen=True)
class PhaseWindow:
    """A stretch of the orchestrator timeline in one phase (``idle`` or ``active``).

    For an active window of back-to-back inferences the mean execution time is
    ``(end - start) / inferences`` unless the device's own timers gave ``mean_execution_s``.
    """

    name: str
    start: float
    end: float
    inferences: int = 0
    mean_execution_s: float | None = None
    mean_execution_std_error_s: float = 0.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.start) and math.isfinite(self.end)):
            raise ValueError(f"{self.name} window times must be finite: {self.start}..{self.end}")
        if not self.end > self.start:
            raise ValueError(
                f"{self.name} window ends at {self.end} s, not after its start {self.start} s"
            )
        if self.inferences < 0:
            raise ValueError(f"{self.name} window has negative inferences: {self.inferences}")
        if self.mean_execution_s is not None and not self.mean_execution_s > 0:
            raise ValueError(
                f"{self.name} window mean execution time must be positive, "
                f"got {self.mean_execution_s} s"
            )

    @property
    def duration_s(self) -> float:
        return self.end - self.start



@dataclass(frozen=True)
class PowerEstimate:
    """Mean power over one window (or pooled repetitions of a phase) and its error sources."""

    phase: str
    mean_w: float
    std_error_w: float  # statistical part only
    dof: float
    method: str
    n: int  # readings used
    weight_sum: float
    straddling: int  # readings crossing a boundary (weighted in or excluded, see boundary)
    boundary: str
    duration_s: float
    windows: int
    noise_w: float  # instrument noise per reading, from successive differences
    accuracy: InstrumentAccuracy
    timing_half_width_s: float
    clock_per_s_positive: float
    clock_per_s_negative: float
    quantisation_half_width_w: float
    mixing_half_width_w: float
    between_repetitions_se_w: float | None = None
    within_windows_se_w: float | None = None
    coverage: float = 1.0  # fraction of the window the readings cover (lowest over windows)
    edges_half_width_w: float = 0.0  # bound from the window's unobserved edges (see below)
    # what the timing half-width is: the clock-offset mapping, or a marker's edges (issue 35)
    timing_source: str = "clock offset"
    # stage attribution only: the error of the correction for the bias the device's stamp
    # jitter leaves (hilbench.power.stamp_jitter), and the jitter measured; 0 adds no component
    jitter_half_width_w: float = 0.0
    stamp_jitter_s: float = 0.0

    @cached_property
    def budget(self) -> UncertaintyBudget:
        a = self.accuracy
        mean = abs(self.mean_w)
        return UncertaintyBudget(
            (
                UncertaintyComponent(
                    "statistical", "student_t", self.std_error_w, self.dof, note=self.method
                ),
                UncertaintyComponent("instrument gain", "rectangular", a.relative * mean),
                UncertaintyComponent("instrument offset", "rectangular", a.absolute_w),
                UncertaintyComponent("supply voltage", "rectangular", a.supply_relative * mean),
                UncertaintyComponent(
                    self.timing_source,
                    "clock_offset",
                    self.timing_half_width_s,
                    per_s_positive=self.clock_per_s_positive,
                    per_s_negative=self.clock_per_s_negative,
                ),
                UncertaintyComponent("quantisation", "rectangular", self.quantisation_half_width_w),
                UncertaintyComponent("boundary mixing", "rectangular", self.mixing_half_width_w),
                UncertaintyComponent("unobserved edges", "rectangular", self.edges_half_width_w),
                *self._jitter_component(),
            )
        )

    def _jitter_component(self) -> tuple[UncertaintyComponent, ...]:
        if self.jitter_half_width_w <= 0:
            return ()
        return (UncertaintyComponent(
            "stamp jitter", "rectangular", self.jitter_half_width_w,
            note=f"the device's stamps jitter {self.stamp_jitter_s * 1e6:.3g} µs (spread of "
                 f"each sample's own fitted alignment, less the readings' noise); the figure is "
                 f"corrected for the bias that leaves, this is the correction's error"),)

    @property
    def uncertainty95(self) -> float:
        return self.budget.expanded95

    def to_dict(self) -> dict[str, Any]:
        marked = {} if self.timing_source == "clock offset" else {
            "timing_source": self.timing_source}
        return {
            **marked,
            "phase": self.phase,
            "mean_w": self.mean_w,
            "std_error_w": self.std_error_w,
            "dof": None if math.isinf(self.dof) else self.dof,
            "method": self.method,
            "n": self.n,
            "straddling": self.straddling,
            "boundary": self.boundary,
            "duration_s": self.duration_s,
            "windows": self.windows,
            "noise_w": self.noise_w,
            "between_repetitions_se_w": self.between_repetitions_se_w,
            "within_windows_se_w": self.within_windows_se_w,
            "coverage": self.coverage,
            "uncertainty95": self.uncertainty95,
            "budget": self.budget.to_dict(),
        }


def _as_arrays(t: np.ndarray, watts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(t, dtype=np.float64)
    watts = np.asarray(watts, dtype=np.float64)
    if t.ndim != 1 or t.shape != watts.shape:
        raise ValueError(
            f"times and watts must be 1-D of equal length, got {t.shape}, {watts.shape}"
        )
    if not (np.isfinite(t).all() and np.isfinite(watts).all()):
        raise ValueError("times and watts must be finite numbers")
    if t.shape[0] >= 2 and not (np.diff(t) > 0).all():
        bad = int(np.flatnonzero(np.diff(t) <= 0)[0]) + 1
        raise ValueError(f"sample times must increase; sample {bad} at {t[bad]} s does not")
    return t, watts


def _noise_from_differences(x: np.ndarray) -> float:
    """Per-reading white-noise level, blind to steps and slow drifts of the device's power."""
    if x.shape[0] < 3:
        return float(np.std(x, ddof=1)) if x.shape[0] == 2 else 0.0
    return float(_MAD_TO_SIGMA * np.median(np.abs(np.diff(x))) / math.sqrt(2.0))


def _statistical_error(
    x: np.ndarray, w: np.ndarray, gapless: bool, noise: float
) -> tuple[float, float, str]:
    """Standard error of the weighted mean, its degrees of freedom, and how it was found."""
    n = x.shape[0]
    shrink = math.sqrt(float((w**2).sum())) / float(w.sum())  # 1/sqrt(n) for equal weights
    if gapless:
        return (
            noise * shrink,
            float(n - 1),
            "gapless readings: instrument noise from successive differences",
        )
    if n >= 2 * BATCHES:
        parts = np.array_split(np.arange(n), BATCHES)
        means = np.array([np.average(x[p], weights=w[p]) for p in parts])
        return (
            float(np.std(means, ddof=1) / math.sqrt(BATCHES)),
            float(BATCHES - 1),
            f"batch means ({BATCHES} contiguous batches, robust to correlated readings)",
        )
    return (
        float(np.std(x, ddof=1)) * shrink,
        float(n - 1),
        f"independent readings assumed (only {n}, too few for batch means)",
    )


def _window_mean(
    t: np.ndarray,
    x: np.ndarray,
    start: float,
    end: float,
    aperture: Aperture,
    boundary: BoundaryPolicy,
) -> float | None:
    """Mean of the readings a window would select (None if it selects none)."""
    sel = select_window(t, start, end, aperture_s=aperture, boundary=boundary)
    if sel.weight_sum <= 0:
        return None
    return float(np.average(x[sel.indices], weights=sel.weights))


def phase_power(
    t: np.ndarray,
    watts: np.ndarray,
    window: PhaseWindow,
    info: SourceInfo,
    *,
    boundary: BoundaryPolicy = "exclude",
    aperture_s: float | None = None,
    gapless: bool | None = None,
    timing_uncertainty_s: float | None = None,
    resolution: float = 0.0,
    supply_relative_uncertainty: float = 0.0,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
) -> PowerEstimate:
    """Mean power over ``window`` from readings ``watts`` taken at orchestrator times ``t``.

    The readings that cover the window are used; a window they cover less than
    ``min_coverage`` of (a log that starts late or stops early) is refused, saying by how much.

    ``aperture_s`` is each reading's integration time (default: the sample interval; for a
    source whose readings tile time, each reading's span to the next one's stamp).
    ``gapless`` says whether readings tile time without gaps; by default it is true for such a
    source, else only when an aperture of at least 95 % of the interval was given.
    ``timing_uncertainty_s`` is the half-width of the timestamps' offset error (default: one
    sample interval). ``resolution`` is the reading's least significant digit in the source's
    unit.
    """
    t, watts = _as_arrays(t, watts)
    if t.shape[0] < 2:
        raise ValueError("need at least two readings to estimate a mean power")
    interval = typical_interval(t)
    if aperture_s is not None and not aperture_s > 0:
        raise ValueError(f"aperture must be positive, got {aperture_s} s")
    tiled = info.readings_tile_time and aperture_s is None
    # An energy counter's reading spans up to the next poll, a late one too: each weighs by
    # the time it spans, so the window's mean is its energy over its length.
    aperture: Aperture = tile_spans(t, interval) if tiled else (
        interval if aperture_s is None else aperture_s)
    if gapless is None:
        gapless = tiled or (aperture_s is not None and aperture_s >= GAPLESS_DUTY * interval)
    timing = interval if timing_uncertainty_s is None else timing_uncertainty_s
    if timing < 0:
        raise ValueError(f"timing uncertainty must be >= 0, got {timing} s")
    accuracy = InstrumentAccuracy.from_source(
        info, resolution=resolution, supply_relative=supply_relative_uncertainty
    )

    coverage = window_coverage(t, window.start, window.end, tiled=info.readings_tile_time)
    if coverage < min_coverage:
        raise ValueError(
            f"{window.name} window {window.start:g}..{window.end:g} s: the readings "
            f"({t[0]:g}..{t[-1]:g} s) cover {100 * coverage:.1f} % of it, "
            f"{100 * (min_coverage - coverage):.1f} points below the minimum "
            f"{100 * min_coverage:g} %"
        )
    sel = select_window(t, window.start, window.end, aperture_s=aperture, boundary=boundary)
    if sel.n < 2:
        # Said so that a reader sees the cause (a window shorter than two readings) and the
        # same cause reads the same in every run of a table (durations to 2 digits).
        raise ValueError(
            f"too short for a power figure: the {_duration(window.end - window.start)} "
            f"{window.name} window holds {sel.n} whole meter reading(s) (one every "
            f"{_duration(interval)}, boundary policy {boundary!r}); at least 2 are needed"
        )
    x = watts[sel.indices]
    w = sel.weights
    mean = float(np.average(x, weights=w))
    noise = _noise_from_differences(x)
    se, dof, method = _statistical_error(x, w, gapless, noise)

    # A timestamp error δ > 0 (true time = stamped time + δ) means the window truly spans the
    # stamped interval [start - δ, end - δ]; the difference from that window's mean is the error.
    per_s_pos, per_s_neg = (_clock_slopes(t, watts, window, mean, timing, aperture, boundary)
                            if timing > 0 else (0.0, 0.0))

    quant = accuracy.resolution_w / 2.0 if noise < accuracy.resolution_w / 2.0 else 0.0
    mixing = (
        _boundary_mixing(x, sel.fractions, t[sel.indices], window) if boundary == "weight" else 0.0
    )
    edges = _unobserved_edges(t, watts, sel.indices, window, aperture)

    return PowerEstimate(
        phase=window.name,
        mean_w=mean,
        std_error_w=se,
        dof=dof,
        method=method,
        n=sel.n,
        weight_sum=sel.weight_sum,
        straddling=sel.straddling,
        boundary=boundary,
        duration_s=window.duration_s,
        windows=1,
        noise_w=noise,
        accuracy=accuracy,
        timing_half_width_s=timing,
        clock_per_s_positive=per_s_pos,
        clock_per_s_negative=per_s_neg,
        quantisation_half_width_w=quant,
        mixing_half_width_w=mixing,
        coverage=coverage,
        edges_half_width_w=edges,
    )


def _clock_slopes(t: np.ndarray, watts: np.ndarray, window: PhaseWindow, mean: float,
                  timing: float, aperture: Aperture, boundary: BoundaryPolicy
                  ) -> tuple[float, float]:
    """How the window's mean moves per second of timestamp error, each way.

    A timestamp error δ > 0 (true time = stamped time + δ) means the window truly spans the
    stamped interval [start - δ, end - δ]; the difference from that window's mean is the error.
    Where the mean answers a shift with a peak (a window whose edges sit on power steps: the
    peak is the true alignment, anywhere within ± ``timing``), the two chords to ± ``timing``
    point the same way and understate the error of an offset near its bound (bench
    power-accuracy without markers: coverage 91 % instead of 95 %). The mean's largest change
    over shifts of ``timing * j / SHIFT_STEPS`` either way then bounds both sides.
    A shifted window without readings says nothing about the shift's effect: never take that
    as zero. Use the other side's slope, or with neither the widest the mean could move (the
    range of readings around the window)."""
    earlier = _window_mean(t, watts, window.start - timing, window.end - timing, aperture,
                           boundary)
    later = _window_mean(t, watts, window.start + timing, window.end + timing, aperture, boundary)
    if earlier is not None and later is not None:
        positive, negative = (mean - earlier) / timing, (mean - later) / timing
        widest = _largest_change(t, watts, window, mean, timing, aperture, boundary) / timing
        return (math.copysign(max(abs(positive), widest), positive),
                math.copysign(max(abs(negative), widest), negative))
    if earlier is not None:  # a linear trend moves the mean the other way
        return (mean - earlier) / timing, -(mean - earlier) / timing
    if later is not None:
        return -(mean - later) / timing, (mean - later) / timing
    worst = _worst_shift_per_s(t, watts, window, timing, aperture)
    return worst, worst


def _largest_change(t: np.ndarray, watts: np.ndarray, window: PhaseWindow, mean: float,
                    timing: float, aperture: Aperture, boundary: BoundaryPolicy) -> float:
    """The mean's largest change over shifts within ± ``timing`` (readings near the window)."""
    lo, hi = np.searchsorted(t, [window.start - timing - float(np.max(aperture)),
                                 window.end + timing])
    near = slice(max(0, lo - 1), hi + 1)
    near_t, near_w = t[near], watts[near]
    if np.ndim(aperture):
        aperture = np.asarray(aperture)[near]
    widest = 0.0
    for j in range(1, SHIFT_STEPS + 1):
        for sign in (-1.0, 1.0):
            shift = sign * timing * j / SHIFT_STEPS
            shifted = _window_mean(near_t, near_w, window.start + shift, window.end + shift,
                                   aperture, boundary)
            if shifted is not None:
                widest = max(widest, abs(mean - shifted))
    # Constant readings: the means of different runs of them differ only by rounding.
    return widest if widest > 1e-12 * abs(mean) else 0.0


def _worst_shift_per_s(
    t: np.ndarray, watts: np.ndarray, window: PhaseWindow, timing: float, aperture: Aperture
) -> float:
    """Bound (W/s of shift) when no shifted window can be evaluated: the mean can move at most
    by the range of the readings within reach of the shifted window."""
    near = (t + aperture >= window.start - timing) & (t <= window.end + timing)
    x = watts[near]
    return float(x.max() - x.min()) / timing if x.shape[0] >= 2 else 0.0


def _boundary_mixing(
    x: np.ndarray, fractions: np.ndarray, t: np.ndarray, window: PhaseWindow
) -> float:
    """Bound on the neighbouring power carried into the mean by weighted boundary readings:
    a reading a fraction f inside contributes f * (reading - in-window level)."""
    inside = fractions >= 1.0
    if not inside.any():
        return 0.0
    level_start = float(x[inside][:EDGE_SAMPLES].mean())
    level_end = float(x[inside][-EDGE_SAMPLES:].mean())
    partial = ~inside
    level = np.where(t[partial] < window.start, level_start, level_end)
    excess = fractions[partial] * np.abs(x[partial] - level)
    return float(excess.sum() / fractions.sum())


def _unobserved_edges(t: np.ndarray, watts: np.ndarray, indices: np.ndarray,
                      window: PhaseWindow, aperture: Aperture) -> float:
    """Bound on the mean's error from the window's edges that no kept reading covers.

    Between the window's start and the first kept reading, and between the last kept
    reading's end and the window's end, the device was not observed; that is where it starts
    and stops work (a QUBO solver ending 2 ms before its fixed runtime did, inside the 6 ms a
    10 ms meter interval left unread: 0.5 % off with 0.09 % stated, measured). The power there
    lies between the edge reading and its neighbour across the edge (one step at most), so
    each edge adds its length × their difference, over the window's length; without a
    neighbour, the range of the kept readings."""
    if indices.size == 0:
        return 0.0
    first, last = int(indices[0]), int(indices[-1])
    spread = float(watts[indices].max() - watts[indices].min())
    gap_start = max(0.0, float(t[first]) - window.start)
    last_span = float(np.asarray(aperture)[last]) if np.ndim(aperture) else float(aperture)
    gap_end = max(0.0, window.end - (float(t[last]) + last_span))
    step_start = abs(float(watts[first] - watts[first - 1])) if first > 0 else spread
    step_end = abs(float(watts[last] - watts[last + 1])) if last + 1 < t.shape[0] else spread
    return (gap_start * step_start + gap_end * step_end) / (window.end - window.start)


def pool_estimates(estimates: Sequence[PowerEstimate]) -> PowerEstimate:
    """Combine repeated windows of one phase into one estimate (weighted by readings used)."""
    if not estimates:
        raise ValueError("no windows to pool")
    if len(estimates) == 1:
        return estimates[0]
    first = estimates[0]
    for e in estimates[1:]:
        if e.phase != first.phase:
            raise ValueError(f"cannot pool {first.phase!r} with {e.phase!r} windows")
        if e.accuracy != first.accuracy:
            raise ValueError(f"{first.phase} windows were measured with different settings")
    weights = np.array([e.weight_sum for e in estimates])
    share = weights / weights.sum()
    means = np.array([e.mean_w for e in estimates])
    mean = float((share * means).sum())
    ses = np.array([e.std_error_w for e in estimates])
    dofs = np.array([e.dof for e in estimates])
    within = float(math.sqrt(((share * ses) ** 2).sum()))
    denominator = float(((share * ses) ** 4 / dofs).sum())
    within_dof = within**4 / denominator if denominator > 0 else float(dofs.sum())
    m = len(estimates)
    between = float(np.std(means, ddof=1) / math.sqrt(m))
    if between > within:
        se, dof = between, float(m - 1)
        method = f"scatter between {m} repetitions (exceeds within-window error)"
    else:
        se, dof = within, within_dof
        method = f"pooled within-window errors of {m} repetitions"

    def avg(values: Sequence[float]) -> float:
        return float((share * np.asarray(values)).sum())

    # Each window has its own timing error (its phase's offset probe and meter start), so
    # their effects add in quadrature: one clock component of the largest half-width whose
    # slopes give that combined spread.
    timing = max(e.timing_half_width_s for e in estimates)

    def independent_slope(attr: str) -> float:
        if timing == 0:
            return 0.0
        terms = [s * getattr(e, attr) * e.timing_half_width_s for s, e in zip(share, estimates,
                                                                             strict=True)]
        signed = math.copysign(1.0, sum(terms)) if any(terms) else 1.0
        return signed * math.sqrt(sum(x * x for x in terms)) / timing

    return PowerEstimate(
        phase=first.phase,
        mean_w=mean,
        std_error_w=se,
        dof=dof,
        method=method,
        n=sum(e.n for e in estimates),
        weight_sum=float(weights.sum()),
        straddling=sum(e.straddling for e in estimates),
        boundary=first.boundary,
        duration_s=sum(e.duration_s for e in estimates),
        windows=sum(e.windows for e in estimates),
        noise_w=avg([e.noise_w for e in estimates]),
        accuracy=first.accuracy,
        timing_half_width_s=timing,
        clock_per_s_positive=independent_slope("clock_per_s_positive"),
        clock_per_s_negative=independent_slope("clock_per_s_negative"),
        quantisation_half_width_w=max(e.quantisation_half_width_w for e in estimates),
        mixing_half_width_w=avg([e.mixing_half_width_w for e in estimates]),
        between_repetitions_se_w=between,
        within_windows_se_w=within,
        coverage=min(e.coverage for e in estimates),
        edges_half_width_w=avg([e.edges_half_width_w for e in estimates]),
        jitter_half_width_w=avg([e.jitter_half_width_w for e in estimates]),
        stamp_jitter_s=max(e.stamp_jitter_s for e in estimates),
        timing_source=" and ".join(sorted({e.timing_source for e in estimates})),
    )


def _duration(seconds: float) -> str:
    """``1.0 ms``, ``25 ms``, ``1.2 s``: two significant digits, for messages."""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(seconds) >= scale or unit == "µs":
            return f"{seconds / scale:.2g} {unit}" if seconds / scale < 10 else \
                f"{seconds / scale:.0f} {unit}"
    return f"{seconds:g} s"
