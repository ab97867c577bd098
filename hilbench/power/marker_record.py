"""Marker edges as a phase stores them: one ``marker_edges`` event per channel, beside the
phase's ``Samples`` of the same instrument, so a replay or ``audit verify`` cuts the same
windows from the store without the instrument.

The event's data: ``instrument`` (id), ``channel``, ``index`` and ``level`` (the edges, by
sample index from the phase's first stored sample of that instrument), ``samples`` (how many
samples the instrument stored in the phase, so an edge past them is seen), and what bounds an
edge: ``sample_period_s``, ``marker_latency_s``, ``edge_uncertainty_s``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from hilbench.clock import now
from hilbench.documents import Event
from hilbench.power.markers import MarkerEdges, MarkerSource, info_edge_uncertainty_s

EVENT_KIND = "marker_edges"


def recorded_markers(source: Any, emit: Callable[[Event], None], run_uid: str, phase_uid: str,
                     instrument_id: str, samples: int) -> list[MarkerEdges] | None:
    """The edges a marker source recorded during a phase (read once its acquisition stopped),
    each channel stored as a ``marker_edges`` event; None for a source without marker inputs."""
    if not isinstance(source, MarkerSource) or not source.info.marker_channels:
        return None
    info = source.info
    edges = source.markers()
    try:
        bound: float | None = info_edge_uncertainty_s(info)
    except ValueError:  # edges kept, but no window is cut by them (marker_windows says why)
        bound = None
    for channel in edges:
        emit(Event(run_uid, phase_uid, EVENT_KIND, now(), {
            "instrument": instrument_id, "channel": channel.channel,
            "index": channel.index.tolist(), "level": channel.level.tolist(),
            "samples": int(samples), "sample_period_s": info.sample_period_s,
            "marker_latency_s": info.marker_latency_s, "edge_uncertainty_s": bound,
        }))
    return edges


def edges_from_event(data: Mapping[str, Any]) -> MarkerEdges:
    """One stored ``marker_edges`` event's edges; ValueError naming the bad key."""
    for key in ("channel", "index", "level"):
        if key not in data:
            raise ValueError(f"{EVENT_KIND} event: no {key!r}")
    return MarkerEdges(data["index"], data["level"], str(data["channel"]))
