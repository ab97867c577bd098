"""The power trace of one run from its stored raw samples, with the idle and active windows its
figures were computed over shaded.

Readings are turned into watts as the campaign did (amps × the supply voltage stored with each
batch) and restamped with the run's ``instrument_interval`` records (the meter's real sample
interval), so the trace sits where the analysis saw it. Windows come from the metrics' own
metadata (``windows`` of ASC power figures, ``window`` of a QUBO run's average power). Long
traces are drawn as a min/max envelope per pixel column, which keeps every peak visible.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hilbench.power.align import IntervalEstimate
from hilbench.report.figures.style import (
    COLOURS,
    LINESTYLES,
    figure_context,
    new_figure,
    save,
    set_title,
)
from hilbench.store import Store

IDLE_FILL, IDLE_HATCH = "#ececec", "..."
ACTIVE_FILL = ("#c8c8c8", "#a8a8a8", "#d8d8d8")
ACTIVE_HATCH = ("///", "\\\\\\", "xx")
MAX_POINTS = 4000  # per source, before an envelope is drawn instead


@dataclass
class Trace:
    run_uid: str
    unit_key: str
    t0: float  # the run's start (orchestrator clock): the figure's time zero
    sources: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # t, W
    windows: list[tuple[str, float, float]] = field(default_factory=list)  # label, start, end
    simulation: str = ""


def _to_watts(values: np.ndarray, unit: str, meta: dict[str, Any]) -> np.ndarray | None:
    if unit == "W":
        return values
    volts = meta.get("supply_voltage_v")
    if unit == "A" and volts:
        return values * float(volts)
    return None


def _windows(metrics: list[dict[str, Any]]) -> list[tuple[str, float, float]]:
    """Distinct (label, start, end) windows named in the metrics' metadata."""
    found: dict[tuple[float, float], str] = {}
    for m in metrics:
        meta = m.get("meta") or {}
        for w in meta.get("windows") or []:
            stage = str(w.get("stage", "active"))
            label = "idle" if stage == "idle" else f"active: {stage}"
            found.setdefault((float(w["start"]), float(w["end"])), label)
        window = meta.get("window")
        if isinstance(window, list) and len(window) == 2:
            found.setdefault((float(window[0]), float(window[1])), "active")
    return sorted(((label, a, b) for (a, b), label in found.items()), key=lambda w: w[1])


def load_trace(store_path: Path, run_uid: str) -> Trace:
    """The run's power readings in watts on the orchestrator's clock, and its windows."""
    with Store(store_path) as store:
        run = store.run(run_uid)
        trace = Trace(run_uid, run["unit_key"], run["t_start"],
                      simulation=run["simulation"] if run["simulated"] else "")
        estimates = {
            (e["phase_uid"], e["data"].get("instrument")): IntervalEstimate.from_dict(e["data"])
            for e in store.events(run_uid, "instrument_interval")
        }
        parts: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        sources = sorted({s["source"] for s in store.sample_sources(run_uid)})
        batches = (b for source in sources for b in store.sample_batches(run_uid, source))
        for batch in batches:
            watts = _to_watts(batch["values"], batch["unit"], batch["meta"])
            if watts is None:
                continue
            t = batch["t"]
            estimate = estimates.get((batch["phase_uid"], batch["source"]))
            if estimate is not None and estimate.t0 is not None:
                t = estimate.restamp(t)
            parts.setdefault(batch["source"], []).append((t, watts))
        for source, chunks in parts.items():
            trace.sources[source] = (np.concatenate([c[0] for c in chunks]),
                                     np.concatenate([c[1] for c in chunks]))
        trace.windows = _windows(store.metrics(run_uid))
    return trace


def envelope(t: np.ndarray, w: np.ndarray, bins: int = MAX_POINTS // 2) -> tuple[np.ndarray,
                                                                                  np.ndarray]:
    """At most ``2 × bins`` points: each bin's minimum and maximum, in time order."""
    if len(t) <= 2 * bins:
        return t, w
    edges = np.linspace(0, len(t), bins + 1).astype(int)
    ts, ws = [], []
    for a, b in itertools.pairwise(edges):
        seg = w[a:b]
        i, j = int(np.argmin(seg)), int(np.argmax(seg))
        for k in sorted((i, j)):
            ts.append(t[a + k])
            ws.append(seg[k])
    return np.asarray(ts), np.asarray(ws)


def trace_figure(trace: Trace, out_dir: Path, stem: str) -> tuple[Path, Path] | None:
    """Watts against seconds from the run's start, windows shaded (idle: dotted hatch, active:
    diagonal hatch), one line per source; None when the run stored no power readings."""
    if not trace.sources:
        return None
    with figure_context():
        fig = new_figure(8.0, 3.4)
        fig.set_layout_engine("constrained")
        ax = fig.add_subplot()
        active = list(dict.fromkeys(label for label, _, _ in trace.windows if label != "idle"))
        for label, start, end in trace.windows:
            fill, hatch = (IDLE_FILL, IDLE_HATCH) if label == "idle" else (
                ACTIVE_FILL[active.index(label) % 3], ACTIVE_HATCH[active.index(label) % 3])
            ax.axvspan(start - trace.t0, end - trace.t0, facecolor=fill, hatch=hatch,
                       edgecolor="#6e6e6e", linewidth=0.0, alpha=0.6, label=f"{label} window")
        for i, (source, (t, w)) in enumerate(sorted(trace.sources.items())):
            te, we = envelope(t, w)
            ax.plot(te - trace.t0, we, color=COLOURS[i % len(COLOURS)],
                    linestyle=LINESTYLES[i % len(LINESTYLES)], linewidth=0.9,
                    drawstyle="steps-post", label=f"{source} ({len(t)} readings)")
        ax.set_xlabel("time since run start (s)")
        ax.set_ylabel("power (W)")
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles, strict=False))
        fig.legend(unique.values(), unique.keys(), loc="outside lower center", ncols=4)
        set_title(fig, f"Power trace of run {trace.run_uid[:8]} ({trace.unit_key})",
                  [trace.simulation] if trace.simulation else [])
        return save(fig, out_dir, stem)
