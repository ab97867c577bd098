"""Power traces for `hilbench serve`: a run's stored samples drawn by the report's own figure
code (:func:`hilbench.report.figures.trace.trace_figure`, min/max envelope, axis from 0 W) as
SVG, whole or only its last seconds (the live plot of a running run).

A finished run's trace does not change, so it is drawn once; a running run's is drawn again
whenever it has stored more samples. Drawing holds one lock: matplotlib's settings are
process-wide.
"""

from __future__ import annotations

import tempfile
import threading
from dataclasses import replace
from pathlib import Path

import numpy as np

from hilbench.report.figures.trace import Trace, load_trace, trace_figure
from hilbench.store import Store

# The live plot shows this many seconds up to the newest sample.
LIVE_WINDOW_S = 60.0
# Traces kept drawn (a few hundred kB each); the oldest goes first.
MAX_KEPT = 64


def last_seconds(trace: Trace, seconds: float) -> Trace:
    """``trace`` cut to the ``seconds`` before its newest reading (windows cut alike)."""
    ends = [float(t[-1]) for t, _ in trace.sources.values() if len(t)]
    if not ends:
        return trace
    start = max(ends) - seconds
    sources = {}
    for name, (t, w) in trace.sources.items():
        keep = t >= start
        if np.any(keep):
            sources[name] = (t[keep], w[keep])
    windows = [(label, max(a, start), b) for label, a, b in trace.windows if b > start]
    return replace(trace, sources=sources, windows=windows)


class TraceImages:
    """SVG power traces of runs, drawn into a private folder and kept while unchanged."""

    def __init__(self, db_path: Path, root: Path, lock: threading.Lock) -> None:
        self.db_path = db_path
        self.root = root
        self._lock = lock
        self._made: dict[tuple[str, float | None], tuple[tuple[int, str], bytes]] = {}

    def _version(self, run_uid: str) -> tuple[int, str]:
        with Store(self.db_path) as store:
            n = sum(int(s["n"] or 0) for s in store.sample_sources(run_uid))
            return n, store.run(run_uid)["status"]

    def svg(self, run_uid: str, window_s: float | None = None) -> bytes | None:
        """The run's trace (``window_s``: its last seconds only) as SVG; None without power
        readings."""
        version = self._version(run_uid)
        key = (run_uid, window_s)
        with self._lock:  # one drawing at a time, and the cache changed by one thread
            made = self._made.get(key)
            if made and made[0] == version:
                return made[1]
            trace = load_trace(self.db_path, run_uid)
            if window_s is not None:
                trace = last_seconds(trace, window_s)
            self.root.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=self.root) as folder:
                paths = trace_figure(trace, Path(folder), "trace")
                body = paths[1].read_bytes() if paths else None
            if body is not None:
                if len(self._made) >= MAX_KEPT:
                    self._made.pop(next(iter(self._made)))
                self._made[key] = (version, body)
            return body
