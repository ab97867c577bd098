"""Put instrument samples on the orchestrator timeline and pick the ones that belong to a window.

A meter that samples on its own timebase reports readings by *index*; the orchestrator knows
when the acquisition started (``t0``, on :func:`hilbench.clock.now`) and the nominal interval,
so reading ``i`` began at ``t0 + i * dt``. When the orchestrator also timed the last reading,
the interval is re-derived from it and the difference from nominal is reported as drift.

Convention: a sample's time is the *start* of its integration (aperture); the reading is the
mean power over ``[t, t + aperture]``. A sample whose aperture crosses a window boundary is
either weighted by the fraction inside the window (``"weight"``) or dropped (``"exclude"``);
the choice is recorded with every result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

BoundaryPolicy = Literal["weight", "exclude"]
BOUNDARY_POLICIES: tuple[str, ...] = ("weight", "exclude")
GAP_FACTOR = 1.5  # readings further apart than this many typical intervals leave a gap


@dataclass(frozen=True)
class SampleTimeline:
    """Orchestrator times of an instrument's readings and how the interval was established."""

    t: np.ndarray  # start of each reading's aperture, orchestrator seconds
    t0: float
    dt_nominal_s: float
    dt_s: float  # interval actually used: nominal, or measured from the last reading's time
    drift: float  # dt_s / dt_nominal_s - 1 (0.0 when no end time was measured)

    @property
    def drift_ppm(self) -> float:
        return self.drift * 1e6


def sample_times(n: int, t0: float, dt: float, *, t_last: float | None = None) -> SampleTimeline:
    """Times ``t_i = t0 + i * dt`` of ``n`` readings; with ``t_last`` (the orchestrator time of
    reading ``n - 1``) the interval is measured instead of assumed, so timebase drift does not
    accumulate into a misalignment at the end of long acquisitions."""
    if n < 0:
        raise ValueError(f"sample count must not be negative, got {n}")
    if not dt > 0:
        raise ValueError(f"sample interval must be positive, got {dt} s")
    dt_used = dt
    if t_last is not None and n >= 2:
        if t_last <= t0:
            raise ValueError(f"last sample time {t_last} s is not after the first, {t0} s")
        dt_used = (t_last - t0) / (n - 1)
    t = t0 + np.arange(n, dtype=np.float64) * dt_used
    return SampleTimeline(t=t, t0=t0, dt_nominal_s=dt, dt_s=dt_used, drift=dt_used / dt - 1.0)


def typical_interval(t: np.ndarray) -> float:
    """The median spacing of sample times (robust to an occasional late reading)."""
    t = np.asarray(t, dtype=np.float64)
    if t.shape[0] < 2:
        raise ValueError("need at least two samples to know the sample interval")
    return float(np.median(np.diff(t)))


Aperture = float | np.ndarray  # one for every reading, or each reading's own (tiled readings)


def tile_spans(t: np.ndarray, interval: float) -> np.ndarray:
    """What each reading of an energy counter spans: up to the next reading's stamp (however
    late that poll came); the last one, whose next poll is not known, one ``interval``."""
    return np.append(np.diff(np.asarray(t, dtype=np.float64)), interval)


def overlap_fractions(t: np.ndarray, aperture_s: Aperture, start: float, end: float
                      ) -> np.ndarray:
    """Fraction of each reading's aperture ``[t, t + aperture_s]`` that lies in ``[start, end]``."""
    if not np.all(np.asarray(aperture_s) > 0):
        raise ValueError(f"aperture must be positive, got {np.min(aperture_s)} s")
    t = np.asarray(t, dtype=np.float64)
    lo = np.maximum(t, start)
    hi = np.minimum(t + aperture_s, end)
    return np.clip((hi - lo) / aperture_s, 0.0, 1.0)


def window_coverage(t: np.ndarray, start: float, end: float, *, tiled: bool = False) -> float:
    """Fraction of ``[start, end]`` that the readings cover: reading i covers
    ``[t_i, t_i + step_i]`` with step_i its spacing to the next reading, at most 1.5 typical
    intervals (jitter is covered, a gap of lost readings is not; the last reading covers one
    interval). ``tiled``: each reading is the mean up to the next one's stamp (an energy
    counter), so its spacing is what it covers however long it is."""
    t = np.asarray(t, dtype=np.float64)
    if not end > start:
        raise ValueError(f"window end {end} s must be after its start {start} s")
    if t.shape[0] == 0:
        return 0.0
    step = typical_interval(t) if t.shape[0] >= 2 else 0.0
    spacing = tile_spans(t, step)
    reach = t + (spacing if tiled else np.minimum(spacing, GAP_FACTOR * step))
    covered = np.clip(np.minimum(reach, end) - np.maximum(t, start), 0.0, None).sum()
    return float(min(1.0, covered / (end - start)))


@dataclass(frozen=True)
class WindowSelection:
    """Which samples stand for a window, with what weight, and how boundaries were treated."""

    indices: np.ndarray  # into the sample arrays, ascending
    # 1.0 inside; the overlap fraction for boundary samples under "weight"; times the reading's
    # aperture over the typical one where each reading has its own (a long reading weighs more)
    weights: np.ndarray
    fractions: np.ndarray  # overlap fraction of each selected sample (1.0 when fully inside)
    straddling: int  # samples whose aperture crossed a boundary (weighted in or excluded)
    policy: str

    @property
    def n(self) -> int:
        return int(self.indices.shape[0])

    @property
    def weight_sum(self) -> float:
        return float(self.weights.sum())


def select_window(
    t: np.ndarray,
    start: float,
    end: float,
    *,
    aperture_s: Aperture,
    boundary: BoundaryPolicy = "exclude",
) -> WindowSelection:
    """Samples belonging to ``[start, end]``: fully inside ones with weight 1, and the ones
    crossing a boundary weighted by their overlap (``"weight"``) or left out (``"exclude"``).
    With an aperture per reading (an energy counter polled late now and then), each weight is
    also scaled by its reading's share of time, so the mean is the energy over the time."""
    if boundary not in BOUNDARY_POLICIES:
        raise ValueError(f"boundary policy must be 'weight' or 'exclude', got {boundary!r}")
    if not end > start:
        raise ValueError(f"window end {end} s must be after its start {start} s")
    frac = overlap_fractions(t, aperture_s, start, end)
    # Decide "inside" on the timestamps themselves: a fraction computed from timestamps near
    # 1e3..1e6 s (a monotonic clock's uptime) carries rounding far above 1e-12.
    t = np.asarray(t, dtype=np.float64)
    inside = (t >= start) & (t + aperture_s <= end)
    partial = (frac > 0.0) & ~inside
    keep = inside | partial if boundary == "weight" else inside
    indices = np.flatnonzero(keep)
    fractions = np.where(inside[indices], 1.0, frac[indices])
    weights = fractions if boundary == "weight" else np.ones(indices.shape[0])
    spans = np.asarray(aperture_s, dtype=np.float64)
    if spans.ndim:
        weights = weights * spans[indices] / float(np.median(spans))
    return WindowSelection(
        indices=indices,
        weights=weights,
        fractions=fractions,
        straddling=int(partial.sum()),
        policy=boundary,
    )


@dataclass(frozen=True)
class IntervalEstimate:
    """A meter's real sample interval, learned from how many readings it took by a known time."""

    dt_s: float  # best estimate of the real interval
    half_width_s: float  # the real interval lies within dt_s ± this
    dt_nominal_s: float
    t0: float | None = None  # orchestrator time of the first reading, when known
    count: int = 0  # readings the estimate was learned from

    @property
    def drift_ppm(self) -> float:
        return (self.dt_s / self.dt_nominal_s - 1.0) * 1e6

    def stamp_half_width_s(self, t: float, t0: float | None = None) -> float:
        """How far the stamp of a reading taken at ``t`` may be off because of the interval's
        residual uncertainty: the error grows with the number of intervals since ``t0``
        (default: the estimate's own first-reading time)."""
        start = self.t0 if t0 is None else t0
        if start is None:
            raise ValueError("the estimate does not know its first reading's time; give t0")
        return abs(t - start) / self.dt_s * self.half_width_s

    def restamp(self, t: np.ndarray) -> np.ndarray:
        """Times stamped ``t0 + i × nominal interval`` moved to ``t0 + i × estimated
        interval``: the readings' index is recovered from the nominal stamp, so the stored raw
        stamps and this record give the corrected ones back."""
        if self.t0 is None:
            raise ValueError("the estimate does not know its first reading's time")
        t = np.asarray(t, dtype=np.float64)
        index = np.rint((t - self.t0) / self.dt_nominal_s)
        return self.t0 + index * self.dt_s

    def to_dict(self) -> dict[str, float | int | None]:
        """What the store keeps so that a report can trace the restamping."""
        return {
            "t0": self.t0,
            "count": self.count,
            "dt_nominal_s": self.dt_nominal_s,
            "dt_s": self.dt_s,
            "half_width_s": self.half_width_s,
            "drift_ppm": self.drift_ppm,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IntervalEstimate:
        """The estimate back from what :meth:`to_dict` stored (an ``instrument_interval``
        event), so raw stamps can be turned into the ones a figure used."""
        return cls(dt_s=data["dt_s"], half_width_s=data["half_width_s"],
                   dt_nominal_s=data["dt_nominal_s"], t0=data["t0"], count=data["count"])


def estimate_interval(
    count: int,
    t0: float,
    t_end: float,
    dt_nominal_s: float,
    aperture_s: float,
    *,
    time_half_width_s: float = 0.0,
    timebase_ppm: float | None = None,
) -> IntervalEstimate:
    """The interval of a meter that, started at ``t0``, had finished ``count`` readings (and not
    ``count + 1``) by ``t_end``: ``t0 + (count-1)·dt + aperture <= t_end < t0 + count·dt +
    aperture``. ``time_half_width_s`` bounds the error of ``t_end``. An error δ of ``t0``
    needs no term here: stamps ``t0 + i·dt_s`` run from ``t0`` to the exact end, so they carry
    δ·(1 - i/count), never more than the start uncertainty already in the timing budget. The
    result is the middle of the possible range and its half-width, so a drifting timebase is
    corrected and what remains goes into the timing budget."""
    if count < 2:
        raise ValueError(f"need at least two readings to measure the sample interval, got {count}")
    if not dt_nominal_s > 0:
        raise ValueError(f"sample interval must be positive, got {dt_nominal_s} s")
    span = t_end - t0 - aperture_s
    if span <= 0:
        raise ValueError(f"end time {t_end} s is not after start {t0} s plus one aperture")
    lo = (span - time_half_width_s) / count
    hi = (span + time_half_width_s) / (count - 1)
    if timebase_ppm is not None:
        # The meter's specified timebase accuracy bounds the interval too: over a short
        # acquisition that bound is the tighter one (the count only knows the interval to
        # about 1/(2·count)), so the estimate stays at the nominal interval; a meter found
        # outside its spec is taken at its count.
        spec_lo = dt_nominal_s * (1 - timebase_ppm * 1e-6)
        spec_hi = dt_nominal_s * (1 + timebase_ppm * 1e-6)
        if max(lo, spec_lo) <= min(hi, spec_hi):
            lo, hi = max(lo, spec_lo), min(hi, spec_hi)
    return IntervalEstimate(
        dt_s=(lo + hi) / 2,
        half_width_s=(hi - lo) / 2,
        dt_nominal_s=dt_nominal_s,
        t0=t0,
        count=count,
    )
