"""Windows cut by marker edges that an instrument records in its own sample stream.

A device marks its timed region on a digital line (a GPIO it toggles around the region) that
the instrument samples on the same clock as its power samples: the Joulescope JS220's general
purpose inputs, the ST LPM01A's ``eventsrc`` input, the trigger input of a DMM. An edge is then
known by *sample index* — the first sample at which the new level shows — and a window is cut
by index, so no mapping between clocks enters it.

Why one sample period plus the stated latency bounds an edge: let the instrument read the line
at sample time ``t_k`` as it was at ``t_k - d``, ``d`` its input latency, ``0 <= d <= L`` with
``L`` what the instrument states (:attr:`SourceInfo.marker_latency_s`). An edge at true time
``t_e`` shows first at the smallest ``k`` with ``t_k - d >= t_e``, so
``t_e + d <= t_k < t_e + d + T`` (``T`` the sample period): the cut lies after the true edge by
less than ``T + L``. That is each edge's uncertainty (:func:`edge_uncertainty_s`); a window's
duration is off by less than the same amount, since both edges are late by the same kind of
delay. None of the instruments states a per-window uncertainty; hilbench stores this one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

import numpy as np

from hilbench.power.source import SourceInfo

Pairing = Literal["level", "alternate"]


@dataclass(frozen=True)
class MarkerEdges:
    """Edges of one digital input, by sample index in the instrument's stream.

    ``index[i]`` is the first sample (counted from the acquisition's first sample, over all its
    batches) at which the line shows ``level[i]`` (1 after a rising edge, 0 after a falling
    one). An instrument that reports only events of one kind (the LPM01A) gives every edge the
    same level.
    """

    index: np.ndarray
    level: np.ndarray
    channel: str

    def __post_init__(self) -> None:
        index = np.asarray(self.index, dtype=np.int64).reshape(-1)
        level = np.asarray(self.level, dtype=np.uint8).reshape(-1)
        if index.shape != level.shape:
            raise ValueError(f"marker {self.channel}: {len(index)} indices but {len(level)} "
                             "levels")
        if np.any(np.diff(index) < 0):
            raise ValueError(f"marker {self.channel}: edge indices are not in order")
        if np.any(level > 1):
            raise ValueError(f"marker {self.channel}: levels must be 0 or 1")
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "level", level)

    @classmethod
    def empty(cls, channel: str) -> MarkerEdges:
        return cls(np.empty(0, np.int64), np.empty(0, np.uint8), channel)

    @classmethod
    def concat(cls, parts: Iterable[MarkerEdges], channel: str) -> MarkerEdges:
        """One channel's edges from several drains, in order."""
        mine = [p for p in parts if p.channel == channel]
        if not mine:
            return cls.empty(channel)
        return cls(np.concatenate([p.index for p in mine]),
                   np.concatenate([p.level for p in mine]), channel)

    def __len__(self) -> int:
        return int(self.index.shape[0])


def edges_from_levels(levels: np.ndarray, channel: str, *, first_index: int = 0,
                      previous: int | None = None) -> MarkerEdges:
    """The edges in a run of sampled line levels (0/1 per sample) that starts at sample
    ``first_index``; ``previous`` is the level of the sample before it (None: the first sample
    only sets the level, it is no edge)."""
    levels = np.asarray(levels).astype(np.uint8).reshape(-1)
    if levels.size == 0:
        return MarkerEdges.empty(channel)
    before = levels[0] if previous is None else np.uint8(previous)
    changed = np.flatnonzero(np.diff(levels, prepend=before) != 0)
    return MarkerEdges(changed + first_index, levels[changed], channel)


@runtime_checkable
class MarkerSource(Protocol):
    """A power source that also records marker edges in its own sample stream."""

    info: SourceInfo

    def markers(self) -> list[MarkerEdges]:
        """Edges recorded since the previous call, one entry per channel (possibly empty),
        indexed from the current acquisition's first sample."""


def edge_uncertainty_s(sample_period_s: float, marker_latency_s: float) -> float:
    """How far a cut edge may lie after the true edge: one sample period plus the stated
    input latency (see the module)."""
    if not (sample_period_s > 0 and math.isfinite(sample_period_s)):
        raise ValueError(f"sample period must be positive, got {sample_period_s!r} s")
    if not (marker_latency_s >= 0 and math.isfinite(marker_latency_s)):
        raise ValueError(f"marker latency must be 0 or more, got {marker_latency_s!r} s")
    return sample_period_s + marker_latency_s


def info_edge_uncertainty_s(info: SourceInfo) -> float:
    """:func:`edge_uncertainty_s` from what a source declares; ValueError naming what it does
    not declare."""
    if info.sample_period_s is None or info.marker_latency_s is None:
        missing = [name for name in ("sample_period_s", "marker_latency_s")
                   if getattr(info, name) is None]
        raise ValueError(f"{info.name} does not state {', '.join(missing)}: its marker edges "
                         "have no stated uncertainty")
    return edge_uncertainty_s(info.sample_period_s, info.marker_latency_s)


@dataclass(frozen=True)
class MarkedWindow:
    """Samples ``[start, stop)`` of an acquisition, cut by two marker edges."""

    start: int  # first sample inside
    stop: int  # first sample after
    channel: str
    sample_period_s: float
    edge_uncertainty_s: float  # each edge lies up to this much before its cut

    @property
    def samples(self) -> int:
        return self.stop - self.start

    @property
    def duration_s(self) -> float:
        return self.samples * self.sample_period_s

    @property
    def duration_uncertainty_s(self) -> float:
        """Both edges are late by a delay in ``[0, edge_uncertainty_s)``: their difference is
        smaller than one such delay."""
        return self.edge_uncertainty_s

    def energy_j(self, watts: np.ndarray) -> float:
        """Energy of the window: the samples inside times the sample period."""
        self._check(watts)
        return float(np.sum(watts[self.start:self.stop], dtype=np.float64) * self.sample_period_s)

    def edge_energy_uncertainty_j(self, watts: np.ndarray) -> float:
        """What the edges' uncertainty can do to :meth:`energy_j`: at each edge the true edge
        lies up to ``edge_uncertainty_s`` before the cut, so the energy in between is at most
        that time at the largest power seen there (the samples from the edge's earliest
        possible place to the cut). The start's share is missed and the stop's counted in
        excess; with power that is never negative they partly cancel, so the larger of the
        two bounds the error, else their sum."""
        self._check(watts)
        reach = math.ceil(self.edge_uncertainty_s / self.sample_period_s)
        shares, lowest = [], 0.0
        for edge in (self.start, self.stop):
            lo, hi = max(0, edge - reach), min(len(watts), edge + 1)
            if hi > lo:
                near = watts[lo:hi]
                shares.append(float(np.max(np.abs(near))) * self.edge_uncertainty_s)
                lowest = min(lowest, float(np.min(near)))
        if not shares:
            return 0.0
        return max(shares) if lowest >= 0 else sum(shares)

    def _check(self, watts: np.ndarray) -> None:
        if self.stop > len(watts):
            raise ValueError(f"window {self.start}..{self.stop} of marker {self.channel} "
                             f"reaches past the {len(watts)} samples given")


def cut_windows(edges: MarkerEdges, *, sample_period_s: float, marker_latency_s: float,
                pairing: Pairing = "level", active_level: int = 1,
                n_samples: int | None = None) -> list[MarkedWindow]:
    """Windows delimited by ``edges``.

    ``pairing="level"``: a window runs from each edge to ``active_level`` to the next edge away
    from it (the line is high during the region). ``pairing="alternate"``: events of one kind
    (a pulse at the start and one at the end, as MLPerf Tiny's runner has the device give the
    LPM01A) delimit windows in turn: events 0–1, 2–3, …. A window still open at the end of the
    stream (or, with ``n_samples``, past it) is left out: its end is unknown.
    """
    u = edge_uncertainty_s(sample_period_s, marker_latency_s)
    idx, lvl = edges.index, edges.level
    bounds: list[tuple[int, int]] = []
    if pairing == "level":
        opened: int | None = None
        for i, level in zip(idx.tolist(), lvl.tolist(), strict=True):
            if level == active_level and opened is None:
                opened = i
            elif level != active_level and opened is not None:
                bounds.append((opened, i))
                opened = None
    elif pairing == "alternate":
        bounds = list(zip(idx[0::2].tolist(), idx[1::2].tolist(), strict=False))
    else:
        raise ValueError(f"pairing must be 'level' or 'alternate', got {pairing!r}")
    return [MarkedWindow(a, b, edges.channel, sample_period_s, u) for a, b in bounds
            if b > a and (n_samples is None or b <= n_samples)]
