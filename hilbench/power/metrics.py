"""Idle, active and dynamic power and energy per inference, each with a stated uncertainty.

NeuroBench asks for idle power (device configured and ready), active power (mean while
processing), dynamic power = active - idle, and energy per inference = dynamic power x mean
execution time. Each figure here carries an :class:`UncertaintyBudget` naming its components:

- *statistical*: standard error of the window mean. Readings that integrate without gaps
  (aperture ~ sample interval) see all of the device's own variation, which is then part of
  the true mean, so only instrument noise counts (estimated robustly from successive
  differences). Readings with gaps sample the device, whose structure makes neighbouring
  readings correlated, so the error comes from batch means (20 contiguous batches, Student t
  with 19 degrees of freedom). Repetitions of a phase are pooled; when their scatter exceeds
  what the within-window errors explain, the between-repetition error is used instead.
- *instrument gain* (± relative x reading) and *instrument offset* (± absolute), rectangular
  as a data sheet bound is. Both phases are read by the same instrument, so in the dynamic
  power the gain error scales the difference and the offset cancels.
- *clock offset*: the samples' timestamps are known to ± ``timing_uncertainty_s``; the effect
  of a shifted window on the mean is measured from the samples themselves (window re-evaluated
  shifted by ± that amount), and the same shift applies to idle and active windows together.
- *quantisation*: half a resolution step, counted only when the readings are not dithered by
  noise (otherwise it is already in the scatter); *boundary mixing*: under the ``"weight"``
  policy, readings straddling a boundary carry some neighbouring power.

The expanded uncertainty is the half-width of the interval centred on the estimate that holds
the true value with 95 % probability under those component distributions, found by Monte Carlo
propagation (GUM Supplement 1) with a fixed seed so that results are reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import numpy as np

from hilbench.power.align import (
    BoundaryPolicy,
    select_window,
    typical_interval,
    window_coverage,
)
from hilbench.power.source import SourceInfo

PHASES: tuple[str, ...] = ("idle", "active")
BATCHES = 20  # batch-means batches; the statistical error then has 19 degrees of freedom
GAPLESS_DUTY = 0.95  # aperture / interval above which readings are taken to tile time
EDGE_SAMPLES = 5  # fully-inside readings used as the in-window level next to a boundary
DEFAULT_MIN_COVERAGE = 0.95  # a window whose readings cover less is refused, saying by how much
MC_DRAWS = 20_000
MC_SEED = 0x5EED
_MAD_TO_SIGMA = 1.482602218505602

Distribution = Literal["student_t", "rectangular", "clock_offset"]


# --- uncertainty -----------------------------------------------------------------------------


@dataclass(frozen=True)
class UncertaintyComponent:
    """One source of error in a figure, with the distribution used to propagate it.

    ``student_t``: ``scale`` is a standard error with ``dof`` degrees of freedom.
    ``rectangular``: ``scale`` is the half-width of a ± bound.
    ``clock_offset``: ``scale`` is the half-width (s) of the timing error δ; the figure changes
    by ``per_s_positive * δ`` for δ > 0 and by ``per_s_negative * |δ|`` for δ < 0.
    """

    name: str
    distribution: Distribution
    scale: float
    dof: float = math.inf
    per_s_positive: float = 0.0
    per_s_negative: float = 0.0
    note: str = ""

    @property
    def standard_uncertainty(self) -> float:
        """Root-mean-square error this component contributes (GUM standard uncertainty)."""
        if self.distribution == "student_t":
            return abs(self.scale)
        if self.distribution == "rectangular":
            return abs(self.scale) / math.sqrt(3.0)
        mean_square_slope = (self.per_s_positive**2 + self.per_s_negative**2) / 2.0
        return abs(self.scale) / math.sqrt(3.0) * math.sqrt(mean_square_slope)

    def scaled(self, factor: float, name: str | None = None) -> UncertaintyComponent:
        """The same component for ``factor`` x the figure (e.g. power -> energy)."""
        if self.distribution == "clock_offset":
            return UncertaintyComponent(
                name or self.name,
                "clock_offset",
                self.scale,
                per_s_positive=self.per_s_positive * factor,
                per_s_negative=self.per_s_negative * factor,
                note=self.note,
            )
        return UncertaintyComponent(
            name or self.name, self.distribution, abs(self.scale * factor), self.dof, note=self.note
        )

    def draw(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """Random errors from this component, for Monte Carlo propagation."""
        if self.scale == 0.0:
            return np.zeros(size)
        if self.distribution == "student_t":
            if math.isinf(self.dof) or self.dof > 1e6:
                return rng.standard_normal(size) * self.scale
            return rng.standard_t(max(self.dof, 1.0), size) * self.scale
        if self.distribution == "rectangular":
            return rng.uniform(-self.scale, self.scale, size)
        delta = rng.uniform(-self.scale, self.scale, size)
        return np.where(delta > 0, self.per_s_positive * delta, -self.per_s_negative * delta)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "distribution": self.distribution,
            "standard_uncertainty": self.standard_uncertainty,
            "scale": self.scale,
        }
        if self.distribution == "student_t":
            out["dof"] = None if math.isinf(self.dof) else self.dof
        if self.distribution == "clock_offset":
            out["per_s_positive"] = self.per_s_positive
            out["per_s_negative"] = self.per_s_negative
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class UncertaintyBudget:
    """The components of a figure's error, their combination, and the 95 % expanded value."""

    components: tuple[UncertaintyComponent, ...]

    @property
    def combined(self) -> float:
        """Combined standard uncertainty: root sum of squares of the components."""
        return math.sqrt(sum(c.standard_uncertainty**2 for c in self.components))

    @cached_property
    def expanded95(self) -> float:
        """Half-width of the 95 % interval centred on the estimate (Monte Carlo, fixed seed)."""
        if self.combined == 0.0:
            return 0.0
        rng = np.random.default_rng(MC_SEED)
        total = np.zeros(MC_DRAWS)
        for component in self.components:
            total += component.draw(rng, MC_DRAWS)
        return float(np.quantile(np.abs(total), 0.95))

    @property
    def coverage_factor(self) -> float:
        return self.expanded95 / self.combined if self.combined else float("nan")

    def component(self, name: str) -> UncertaintyComponent:
        for c in self.components:
            if c.name == name:
                return c
        raise KeyError(f"no uncertainty component {name!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "combined_standard_uncertainty": self.combined,
            "expanded_uncertainty_95": self.expanded95,
            "coverage_factor": None if self.combined == 0 else self.coverage_factor,
            "method": f"GUM-S1 Monte Carlo, {MC_DRAWS} draws, symmetric 95 % interval",
            "components": [c.to_dict() for c in self.components],
        }


@dataclass(frozen=True)
class Quantity:
    """A derived figure (dynamic power, energy per inference) with its budget."""

    name: str
    value: float
    unit: str
    budget: UncertaintyBudget

    @property
    def uncertainty95(self) -> float:
        return self.budget.expanded95

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "uncertainty95": self.uncertainty95,
            "budget": self.budget.to_dict(),
        }


# --- inputs ----------------------------------------------------------------------------------


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
class InstrumentAccuracy:
    """What the instrument contributes, in watts: ± (relative x reading + absolute_w)."""

    relative: float = 0.0
    absolute_w: float = 0.0
    resolution_w: float = 0.0
    supply_relative: float = 0.0  # a nominal supply voltage used to turn amps into watts

    @classmethod
    def from_source(
        cls, info: SourceInfo, *, resolution: float = 0.0, supply_relative: float = 0.0
    ) -> InstrumentAccuracy:
        """Convert a source's declared accuracy and resolution (in its own unit) to watts."""
        if info.unit == "W":
            factor = 1.0
        elif info.unit == "A":
            if info.supply_voltage_v is None:
                raise ValueError(
                    f"source {info.name!r} measures amps but declares no supply voltage"
                )
            factor = info.supply_voltage_v
        else:
            raise ValueError(f"source {info.name!r} measures {info.unit}, not power or current")
        for label, value in (
            ("accuracy_relative", info.accuracy_relative),
            ("accuracy_absolute", info.accuracy_absolute),
            ("resolution", resolution),
            ("supply relative uncertainty", supply_relative),
        ):
            if value < 0 or not math.isfinite(value):
                raise ValueError(f"source {info.name!r}: {label} must be >= 0, got {value}")
        return cls(
            relative=info.accuracy_relative,
            absolute_w=info.accuracy_absolute * factor,
            resolution_w=resolution * factor,
            supply_relative=supply_relative,
        )


# --- one phase -------------------------------------------------------------------------------


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
                    "clock offset",
                    "clock_offset",
                    self.timing_half_width_s,
                    per_s_positive=self.clock_per_s_positive,
                    per_s_negative=self.clock_per_s_negative,
                ),
                UncertaintyComponent("quantisation", "rectangular", self.quantisation_half_width_w),
                UncertaintyComponent("boundary mixing", "rectangular", self.mixing_half_width_w),
            )
        )

    @property
    def uncertainty95(self) -> float:
        return self.budget.expanded95

    def to_dict(self) -> dict[str, Any]:
        return {
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
    aperture: float,
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

    ``aperture_s`` is each reading's integration time (default: the sample interval).
    ``gapless`` says whether readings tile time without gaps; by default it is true only when
    an aperture of at least 95 % of the interval was given. ``timing_uncertainty_s`` is the
    half-width of the timestamps' offset error (default: one sample interval). ``resolution``
    is the reading's least significant digit in the source's unit.
    """
    t, watts = _as_arrays(t, watts)
    if t.shape[0] < 2:
        raise ValueError("need at least two readings to estimate a mean power")
    interval = typical_interval(t)
    aperture = interval if aperture_s is None else aperture_s
    if not aperture > 0:
        raise ValueError(f"aperture must be positive, got {aperture} s")
    if gapless is None:
        gapless = aperture_s is not None and aperture_s >= GAPLESS_DUTY * interval
    timing = interval if timing_uncertainty_s is None else timing_uncertainty_s
    if timing < 0:
        raise ValueError(f"timing uncertainty must be >= 0, got {timing} s")
    accuracy = InstrumentAccuracy.from_source(
        info, resolution=resolution, supply_relative=supply_relative_uncertainty
    )

    coverage = window_coverage(t, window.start, window.end)
    if coverage < min_coverage:
        raise ValueError(
            f"{window.name} window {window.start:g}..{window.end:g} s: the readings "
            f"({t[0]:g}..{t[-1]:g} s) cover {100 * coverage:.1f} % of it, "
            f"{100 * (min_coverage - coverage):.1f} points below the minimum "
            f"{100 * min_coverage:g} %"
        )
    sel = select_window(t, window.start, window.end, aperture_s=aperture, boundary=boundary)
    if sel.n < 2:
        raise ValueError(
            f"{window.name} window {window.start:g}..{window.end:g} s holds {sel.n} usable "
            f"reading(s) under boundary policy {boundary!r} "
            f"(readings span {t[0]:g}..{t[-1] + aperture:g} s); need at least 2"
        )
    x = watts[sel.indices]
    w = sel.weights
    mean = float(np.average(x, weights=w))
    noise = _noise_from_differences(x)
    se, dof, method = _statistical_error(x, w, gapless, noise)

    # A timestamp error δ > 0 (true time = stamped time + δ) means the window truly spans the
    # stamped interval [start - δ, end - δ]; the difference from that window's mean is the error.
    per_s_pos = per_s_neg = 0.0
    if timing > 0:
        earlier = _window_mean(
            t, watts, window.start - timing, window.end - timing, aperture, boundary
        )
        later = _window_mean(
            t, watts, window.start + timing, window.end + timing, aperture, boundary
        )
        # A shifted window without readings says nothing about the shift's effect: never
        # take that as zero. Use the other side's slope, or with neither the widest the mean
        # could move (the range of readings around the window).
        if earlier is not None and later is not None:
            per_s_pos, per_s_neg = (mean - earlier) / timing, (mean - later) / timing
        elif earlier is not None:  # a linear trend moves the mean the other way
            per_s_pos = (mean - earlier) / timing
            per_s_neg = -per_s_pos
        elif later is not None:
            per_s_neg = (mean - later) / timing
            per_s_pos = -per_s_neg
        else:
            per_s_pos = per_s_neg = _worst_shift_per_s(t, watts, window, timing, aperture)

    quant = accuracy.resolution_w / 2.0 if noise < accuracy.resolution_w / 2.0 else 0.0
    mixing = (
        _boundary_mixing(x, sel.fractions, t[sel.indices], window) if boundary == "weight" else 0.0
    )

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
    )


def _worst_shift_per_s(
    t: np.ndarray, watts: np.ndarray, window: PhaseWindow, timing: float, aperture: float
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


# --- repetitions, dynamic power, energy --------------------------------------------------------


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
    )


def dynamic_power(idle: PowerEstimate, active: PowerEstimate) -> Quantity:
    """Active minus idle power. The shared instrument's gain error scales the difference, its
    offset cancels; idle and active windows come from separate phases with separate offset
    probes and meter starts, so their timing errors are independent."""
    if idle.accuracy != active.accuracy:
        raise ValueError("idle and active power were measured with different instrument settings")
    value = active.mean_w - idle.mean_w
    a = active.accuracy
    components = (
        UncertaintyComponent(
            "statistical (active)", "student_t", active.std_error_w, active.dof, note=active.method
        ),
        UncertaintyComponent(
            "statistical (idle)", "student_t", idle.std_error_w, idle.dof, note=idle.method
        ),
        UncertaintyComponent("instrument gain", "rectangular", a.relative * abs(value)),
        UncertaintyComponent(
            "instrument offset", "rectangular", 0.0, note="same instrument and range: cancels"
        ),
        UncertaintyComponent("supply voltage", "rectangular", a.supply_relative * abs(value)),
        UncertaintyComponent(
            "clock offset (active)",
            "clock_offset",
            active.timing_half_width_s,
            per_s_positive=active.clock_per_s_positive,
            per_s_negative=active.clock_per_s_negative,
            note="the active windows' own timing error",
        ),
        UncertaintyComponent(
            "clock offset (idle)",
            "clock_offset",
            idle.timing_half_width_s,
            per_s_positive=-idle.clock_per_s_positive,
            per_s_negative=-idle.clock_per_s_negative,
            note="the idle windows' timing error, independent of the active ones'",
        ),
        UncertaintyComponent(
            "quantisation (active)", "rectangular", active.quantisation_half_width_w
        ),
        UncertaintyComponent("quantisation (idle)", "rectangular", idle.quantisation_half_width_w),
        UncertaintyComponent("boundary mixing (active)", "rectangular", active.mixing_half_width_w),
        UncertaintyComponent("boundary mixing (idle)", "rectangular", idle.mixing_half_width_w),
    )
    return Quantity("dynamic power", value, "W", UncertaintyBudget(components))


def energy_per_inference(
    dynamic: Quantity, mean_execution_s: float, mean_execution_std_error_s: float = 0.0
) -> Quantity:
    """Dynamic energy per inference = dynamic power x mean execution time (NeuroBench)."""
    if not mean_execution_s > 0:
        raise ValueError(f"mean execution time must be positive, got {mean_execution_s} s")
    components = [c.scaled(mean_execution_s) for c in dynamic.budget.components]
    components.append(
        UncertaintyComponent(
            "execution time",
            "student_t",
            abs(dynamic.value) * mean_execution_std_error_s,
            note="standard error of the mean execution time",
        )
    )
    return Quantity(
        "energy per inference",
        dynamic.value * mean_execution_s,
        "J",
        UncertaintyBudget(tuple(components)),
    )


@dataclass(frozen=True)
class ExecutionTime:
    mean_s: float
    std_error_s: float
    source: str


def mean_execution_time(windows: Sequence[PhaseWindow]) -> ExecutionTime | None:
    """Mean execution time over the active windows: the device timers' figure where given,
    else window duration / inferences (back-to-back stream); None if neither is known."""
    active = [w for w in windows if w.name == "active"]
    if not active:
        return None
    values, errors, counts, sources = [], [], [], set()
    for w in active:
        if w.mean_execution_s is not None:
            values.append(w.mean_execution_s)
            errors.append(w.mean_execution_std_error_s)
            sources.add("device timers")
        elif w.inferences > 0:
            values.append(w.duration_s / w.inferences)
            errors.append(0.0)
            sources.add("window duration / inferences")
        else:
            return None
        counts.append(max(w.inferences, 1))
    share = np.asarray(counts, dtype=np.float64) / sum(counts)
    return ExecutionTime(
        mean_s=float((share * np.asarray(values)).sum()),
        std_error_s=float(math.sqrt(((share * np.asarray(errors)) ** 2).sum())),
        source=" and ".join(sorted(sources)),
    )


# --- everything at once ----------------------------------------------------------------------


@dataclass(frozen=True)
class PowerAnalysis:
    """The published power figures of one measurement, with how each was obtained."""

    idle: PowerEstimate
    active: PowerEstimate
    dynamic: Quantity
    energy_per_inference: Quantity | None
    execution: ExecutionTime | None
    windows: tuple[PowerEstimate, ...]
    boundary: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_json_dict(self) -> dict[str, float | None]:
        """The headline figures; every ``*_uncertainty`` is a 95 % expanded uncertainty
        (half-width of the interval centred on the value), in the figure's unit."""
        energy = self.energy_per_inference
        return {
            "idle_coverage": self.idle.coverage,
            "active_coverage": self.active.coverage,
            "idle_w": self.idle.mean_w,
            "idle_w_uncertainty": self.idle.uncertainty95,
            "active_w": self.active.mean_w,
            "active_w_uncertainty": self.active.uncertainty95,
            "dynamic_w": self.dynamic.value,
            "dynamic_w_uncertainty": self.dynamic.uncertainty95,
            "energy_per_inference_j": None if energy is None else energy.value,
            "energy_per_inference_j_uncertainty": None if energy is None else energy.uncertainty95,
        }

    def to_dict(self) -> dict[str, Any]:
        """Everything, for the store: figures, budgets, per-window estimates, policies."""
        execution = self.execution
        return {
            "figures": self.to_json_dict(),
            "idle": self.idle.to_dict(),
            "active": self.active.to_dict(),
            "dynamic": self.dynamic.to_dict(),
            "energy_per_inference": None
            if self.energy_per_inference is None
            else self.energy_per_inference.to_dict(),
            "mean_execution": None
            if execution is None
            else {
                "mean_s": execution.mean_s,
                "std_error_s": execution.std_error_s,
                "source": execution.source,
            },
            "windows": [w.to_dict() for w in self.windows],
            "boundary": self.boundary,
            "notes": list(self.notes),
        }


def analyze(
    t: np.ndarray,
    watts: np.ndarray,
    windows: Sequence[PhaseWindow],
    info: SourceInfo,
    *,
    boundary: BoundaryPolicy = "exclude",
    aperture_s: float | None = None,
    gapless: bool | None = None,
    timing_uncertainty_s: float | None = None,
    resolution: float = 0.0,
    supply_relative_uncertainty: float = 0.0,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
) -> PowerAnalysis:
    """Idle, active and dynamic power and energy per inference from one trace and its windows;
    repeated windows of a phase are pooled. Keyword options as in :func:`phase_power`."""
    unknown = sorted({w.name for w in windows} - set(PHASES))
    if unknown:
        raise ValueError(f"window phase must be 'idle' or 'active', got {', '.join(unknown)}")
    for phase in PHASES:
        if not any(w.name == phase for w in windows):
            raise ValueError(f"no {phase} window given; need at least one idle and one active")
    options: dict[str, Any] = {
        "boundary": boundary,
        "aperture_s": aperture_s,
        "gapless": gapless,
        "timing_uncertainty_s": timing_uncertainty_s,
        "resolution": resolution,
        "supply_relative_uncertainty": supply_relative_uncertainty,
        "min_coverage": min_coverage,
    }
    per_window = tuple(phase_power(t, watts, w, info, **options) for w in windows)
    idle = pool_estimates([e for e in per_window if e.phase == "idle"])
    active = pool_estimates([e for e in per_window if e.phase == "active"])
    dynamic = dynamic_power(idle, active)
    execution = mean_execution_time(windows)
    notes = [
        f"boundary readings: {boundary} ({idle.straddling} idle, {active.straddling} active)",
        f"statistical error: idle {idle.method}; active {active.method}",
        "uncertainties: 95 % expanded, GUM-S1 Monte Carlo of the listed components",
        "coverage of each window by the readings: "
        + ", ".join(f"{e.phase} {100 * e.coverage:.1f} %" for e in per_window),
    ]
    energy = None
    if execution is None:
        notes.append("energy per inference: no inferences or execution time in active windows")
    else:
        energy = energy_per_inference(dynamic, execution.mean_s, execution.std_error_s)
        notes.append(f"mean execution time {execution.mean_s:.6g} s from {execution.source}")
    return PowerAnalysis(
        idle=idle,
        active=active,
        dynamic=dynamic,
        energy_per_inference=energy,
        execution=execution,
        windows=per_window,
        boundary=boundary,
        notes=tuple(notes),
    )
