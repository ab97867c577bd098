"""Turning the JS220 driver's stream messages into samples and marker edges (no I/O).

A message (what ``pyjoulescope_driver`` hands a subscriber of ``{p}/s/p/!data`` or
``{p}/s/gpi/N/!data``) carries ``sample_id`` counted at ``sample_rate`` (2 MHz) whatever the
output rate, the ``decimate_factor`` to the output rate, a ``time_map`` from counter to host
UTC (time64: 2**30 per second since 2018-01-01) and ``data``: float32 samples, or GPI levels
packed 8 to a byte, least significant bit first. Samples are indexed from the acquisition's
first one; GPI edges are put on that index: the first signal sample that starts at or after
the edge (so an edge is late by less than one signal sample, plus the input latency).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hilbench.power.markers import MarkerEdges, edges_from_levels

TIME64_SCALE = 1 << 30
TIME64_EPOCH = 1514764800.0  # 2018-01-01T00:00:00Z


def clock_times(message: dict[str, Any], sample_id: np.ndarray | int,
                utc_minus_clock: float) -> np.ndarray:
    """Each sample id's time on a clock that runs ``utc_minus_clock`` behind host UTC, through
    the message's time map. The offset is taken off the map's origin before the samples are
    added: UTC in seconds (1.7e9) has float64 steps of 0.24 µs, a clock near 1e6 s of 0.2 ns."""
    tm = message["time_map"]
    origin = (tm["offset_time"] / TIME64_SCALE + TIME64_EPOCH) - utc_minus_clock
    ids = np.asarray(sample_id, dtype=np.float64)
    return origin + (ids - float(tm["offset_counter"])) / float(tm["counter_rate"])


@dataclass
class SignalStream:
    """One acquisition's signal samples: what arrived, and what went missing."""

    first_id: int | None = None
    next_id: int | None = None
    decimate: int | None = None
    missing: int = 0  # samples skipped by the instrument or the host
    received: int = 0

    def accept(self, message: dict[str, Any]) -> tuple[np.ndarray, np.ndarray] | None:
        """(sample ids, values) of the new samples in ``message``; duplicates are dropped,
        gaps counted in :attr:`missing`."""
        data = np.asarray(message["data"], dtype=np.float64)
        decimate = int(message["decimate_factor"])
        start = int(message["sample_id"])
        if self.first_id is None:
            self.first_id, self.next_id, self.decimate = start, start, decimate
        if decimate != self.decimate:
            raise ValueError(f"decimation changed from {self.decimate} to {decimate} "
                             "during an acquisition")
        assert self.next_id is not None
        ids = start + decimate * np.arange(len(data), dtype=np.int64)
        if start > self.next_id:
            self.missing += (start - self.next_id) // decimate
        keep = ids >= self.next_id
        ids, data = ids[keep], data[keep]
        if len(ids):
            self.next_id = int(ids[-1]) + decimate
            self.received += len(ids)
        return (ids, data) if len(ids) else None

    def index_of(self, ids: np.ndarray) -> np.ndarray:
        assert self.first_id is not None and self.decimate is not None
        return (np.asarray(ids, dtype=np.int64) - self.first_id) // self.decimate


@dataclass
class GpiStream:
    """One GPI's edges, put on the signal stream's sample index."""

    channel: str
    level: int | None = None  # the last level seen
    next_id: int | None = None
    pending: list[dict[str, Any]] = field(default_factory=list)  # before the signal started

    def accept(self, message: dict[str, Any], signal: SignalStream) -> MarkerEdges:
        self.pending.append(message)
        if signal.first_id is None:
            return MarkerEdges.empty(self.channel)
        parts = [self._edges(m, signal) for m in self.pending]
        self.pending = []
        return MarkerEdges.concat(parts, self.channel)

    def _edges(self, message: dict[str, Any], signal: SignalStream) -> MarkerEdges:
        packed = np.asarray(message["data"], dtype=np.uint8)
        levels = np.unpackbits(packed, bitorder="little")
        start = int(message["sample_id"])
        step = int(message["decimate_factor"])
        if self.next_id is not None and start < self.next_id:  # an overlap: skip what we have
            skip = math.ceil((self.next_id - start) / step)
            levels, start = levels[skip:], start + skip * step
        if levels.size == 0:
            return MarkerEdges.empty(self.channel)
        edges = edges_from_levels(levels, self.channel, previous=self.level)
        self.level = int(levels[-1])
        self.next_id = start + step * len(levels)
        assert signal.first_id is not None and signal.decimate is not None
        gpi_ids = start + step * edges.index
        # the first signal sample starting at or after each edge
        index = -((signal.first_id - gpi_ids) // signal.decimate)
        keep = index >= 1  # an edge before the first sample is outside the acquisition
        return MarkerEdges(index[keep], edges.level[keep], self.channel)
