"""How a measured phase's power window is placed: cut by the device's marker in the instrument's
own samples, or (the fallback) mapped in software, and which one each figure used.

A phase is marker-cut when the device declares a marker (capabilities ``marker``) and the
instrument recorded exactly one marked region in the phase's samples: the device held its
marker high around the timed region (a repeat window). The window is then the samples between
the two edges, placed on the instrument's own sample index, and its timing uncertainty is the
edge uncertainty — one sample period plus the stated input latency
(:func:`hilbench.power.markers.edge_uncertainty_s`) — instead of the clock-offset mapping's.
Anything else (no marker declared, an instrument without marker inputs, no region or several)
keeps the software window, and says why.

A single-stream window (:func:`sample_regions`) holds one marked region per sample the device
ran (its marker high around each sample's stages); it is marker-cut when the instrument
recorded exactly as many regions as the device says it ran samples, and its stages are then
placed from those regions (:mod:`hilbench.power.marker_stages`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hilbench.power.estimators import BoundaryPolicy, PhaseWindow, PowerEstimate, phase_power
from hilbench.power.markers import MarkedWindow, MarkerEdges, Pairing, cut_windows
from hilbench.power.source import SourceInfo

MARKER_CUT = "marker-cut"
SOFTWARE = "software"
TIMING_SOURCE = "marker edges"  # the budget's timing component for a marker-cut window


@dataclass(frozen=True)
class WindowAlignment:
    """How one window was placed: ``cut`` when by marker, else ``reason`` says why not."""

    cut: MarkedWindow | None
    reason: str | None = None

    @property
    def method(self) -> str:
        return MARKER_CUT if self.cut is not None else SOFTWARE

    @property
    def edge_uncertainty_s(self) -> float | None:
        return None if self.cut is None else self.cut.edge_uncertainty_s

    def to_dict(self) -> dict[str, Any]:
        if self.cut is None:
            return {"alignment": SOFTWARE, "alignment_reason": self.reason}
        c = self.cut
        return {"alignment": MARKER_CUT, "marker_channel": c.channel,
                "marker_samples": [c.start, c.stop],
                "edge_uncertainty_s": c.edge_uncertainty_s,
                "marker_duration_s": c.duration_s}


def phase_alignment(markers: Sequence[MarkerEdges] | None, info: SourceInfo, samples: int,
                    device_marks: bool, device_latency_s: float = 0.0) -> WindowAlignment:
    """The marked region of a phase (see the module), or why the window stays software's.
    ``device_latency_s``: what the device states about its own line's edges against the work
    (a host GPIO's), added to each edge's uncertainty."""
    found, reason = _marked_regions(markers, info, samples, device_marks, device_latency_s)
    if reason is not None:
        return WindowAlignment(None, reason)
    if len(found) != 1:
        return WindowAlignment(None, f"{len(found)} marked regions in the phase's {samples} "
                                     "samples, expected 1")
    return WindowAlignment(found[0])


@dataclass(frozen=True)
class RegionsAlignment:
    """How a single-stream window was placed: ``cuts`` (one marked region per sample run, in
    order) when by marker, else ``reason`` says why not."""

    cuts: tuple[MarkedWindow, ...]
    reason: str | None = None

    @property
    def method(self) -> str:
        return MARKER_CUT if self.cuts else SOFTWARE

    @property
    def edge_uncertainty_s(self) -> float | None:
        return max(c.edge_uncertainty_s for c in self.cuts) if self.cuts else None

    def to_dict(self) -> dict[str, Any]:
        if not self.cuts:
            return {"alignment": SOFTWARE, "alignment_reason": self.reason}
        first, last = self.cuts[0], self.cuts[-1]
        return {"alignment": MARKER_CUT, "marker_channel": first.channel,
                "marker_regions": len(self.cuts), "marker_samples": [first.start, last.stop],
                "edge_uncertainty_s": self.edge_uncertainty_s}


def sample_regions(markers: Sequence[MarkerEdges] | None, info: SourceInfo, samples: int,
                   device_marks: bool, ran: int, device_latency_s: float = 0.0
                   ) -> RegionsAlignment:
    """The marked regions of a single-stream window in which the device ran ``ran`` samples
    (see the module), or why the window stays software's."""
    found, reason = _marked_regions(markers, info, samples, device_marks, device_latency_s)
    if reason is not None:
        return RegionsAlignment((), reason)
    if len(found) != ran:
        return RegionsAlignment((), f"{len(found)} marked regions in the window's {samples} "
                                    f"samples, but the device ran {ran} samples in it")
    return RegionsAlignment(tuple(found))


def _marked_regions(markers: Sequence[MarkerEdges] | None, info: SourceInfo, samples: int,
                    device_marks: bool, device_latency_s: float = 0.0
                    ) -> tuple[list[MarkedWindow], str | None]:
    """Every marked region in a phase's ``samples`` samples, or why none is looked for."""
    if not device_marks:
        return [], "the device declares no marker around this window (capabilities marker)"
    if markers is None or info.sample_period_s is None or info.marker_latency_s is None:
        return [], f"{info.name} records no marker input in its stream"
    return [w for edges in markers for w in cut_windows(
        edges, sample_period_s=info.sample_period_s,
        marker_latency_s=info.marker_latency_s + device_latency_s,
        pairing=pairing_of(edges), n_samples=samples)], None


def stated_device_latency(latency_s: float) -> dict[str, Any]:
    """A marker-cut window's meta for the device's stated line latency (none when 0)."""
    return {"device_marker_latency_s": latency_s} if latency_s else {}


def device_marker_latency_s(marker: Mapping[str, Any] | None) -> float | None:
    """What a device's declared marker (capabilities ``marker``) states about its line's edges
    against the work it marks (``latency_s``, 0 when not stated: a pin the firmware drives
    itself); None when it declares no marker or states a latency that is no number of seconds
    0 or more (a claim that would shrink the edges' uncertainty is not taken)."""
    if marker is None:
        return None
    value = marker.get("latency_s", 0.0)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def pairing_of(edges: MarkerEdges) -> Pairing:
    """A line's edges alternate in level; events of one kind (an LPM01A's ``eventsrc``, a
    trigger input) repeat it: those delimit windows in turn, a start event and an end event."""
    repeated = len(edges) > 1 and bool(np.all(edges.level == edges.level[0]))
    return "alternate" if repeated else "level"


def marked_estimate(name: str, watts: np.ndarray, cut: MarkedWindow, info: SourceInfo, *,
                    boundary: BoundaryPolicy) -> PowerEstimate:
    """Mean power of the samples inside ``cut``, on the instrument's own sample clock (sample
    ``k`` at ``k`` periods), the edges' uncertainty as its timing. As the marker bench
    (:mod:`hilbench.bench.power_accuracy_marker`): the window ends one period before the
    second cut, so every sample used begins after the region's true start."""
    period = cut.sample_period_s
    t = np.arange(len(watts), dtype=np.float64) * period
    window = PhaseWindow(name, cut.start * period, (cut.stop - 1) * period)
    estimate = phase_power(t, watts, window, info, boundary=boundary, aperture_s=period,
                           timing_uncertainty_s=cut.edge_uncertainty_s)
    return dataclasses.replace(estimate, timing_source=TIMING_SOURCE)


def alignment_summary(alignments: Sequence[WindowAlignment | RegionsAlignment]
                      ) -> dict[str, Any]:
    """What a figure pooled from these windows says about their placement."""
    methods = sorted({a.method for a in alignments})
    out: dict[str, Any] = {"alignment": methods[0] if len(methods) == 1 else "mixed"}
    cuts = [a.edge_uncertainty_s for a in alignments if a.edge_uncertainty_s is not None]
    if cuts:
        out["edge_uncertainty_s"] = max(cuts)
        out["marker_windows"] = len(cuts)
    reasons = sorted({a.reason for a in alignments if a.reason})
    if reasons:
        out["alignment_reason"] = "; ".join(reasons)
    return out
