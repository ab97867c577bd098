"""The power trace of one run from its stored raw samples, with the idle and active windows its
figures were computed over shaded.

Readings are turned into watts as the campaign did (amps × the supply voltage stored with each
batch) and restamped with the run's ``instrument_interval`` records (the meter's real sample
interval), so the trace sits where the analysis saw it. Windows come from the metrics' own
metadata (``windows`` of ASC power figures, ``window`` of a QUBO run's average power). Long
traces are decimated into :data:`BINS` time bins: each bin's min..max band drawn light (every
peak stays visible) and its mean drawn as a line on it (so the idle and active phases read as
levels, not as a solid block of noise). The power axis starts at 0 W.
"""

from __future__ import annotations

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
# Time bins of a decimated trace: about one per two pixel columns of the 8 in figure at 100
# dpi, so the band and the mean line stay apart where the power changes phase.
BINS = 400


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


@dataclass(frozen=True)
class Envelope:
    """A trace decimated to time bins: each bin's centre time, minimum, mean and maximum."""

    t: np.ndarray
    low: np.ndarray
    mean: np.ndarray
    high: np.ndarray


def envelope(t: np.ndarray, w: np.ndarray, bins: int = BINS) -> Envelope | None:
    """The trace in ``bins`` equal time bins (empty bins left out); None when it has no more
    than ``2 × bins`` readings (then it is drawn as it is)."""
    if len(t) <= 2 * bins:
        return None
    edges = np.linspace(float(t[0]), float(t[-1]), bins + 1)
    index = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, bins - 1)
    count = np.bincount(index, minlength=bins)
    used = count > 0
    total = np.bincount(index, weights=w, minlength=bins)
    low = np.full(bins, np.inf)
    high = np.full(bins, -np.inf)
    np.minimum.at(low, index, w)
    np.maximum.at(high, index, w)
    centre = (edges[:-1] + edges[1:]) / 2
    return Envelope(centre[used], low[used], total[used] / count[used], high[used])


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
        top = 0.0
        for i, (source, (t, w)) in enumerate(sorted(trace.sources.items())):
            colour = COLOURS[i % len(COLOURS)]
            style = LINESTYLES[i % len(LINESTYLES)]
            band = envelope(t, w)
            top = max(top, float(np.max(w)))
            if band is None:
                ax.plot(t - trace.t0, w, color=colour, linestyle=style, linewidth=0.9,
                        drawstyle="steps-post", label=f"{source} ({len(t)} readings)")
                continue
            ax.fill_between(band.t - trace.t0, band.low, band.high, color=colour, alpha=0.18,
                            linewidth=0, step="mid",
                            label=f"{source}: min..max per {len(t) / len(band.t):.0f} readings")
            ax.plot(band.t - trace.t0, band.mean, color=colour, linestyle=style, linewidth=1.1,
                    drawstyle="steps-mid", label=f"{source}: mean ({len(t)} readings)")
        ax.set_ylim(0.0, top * 1.08 if top > 0 else 1.0)  # from 0 W: levels read as levels
        ax.set_xlabel("time since run start (s)")
        ax.set_ylabel("power (W), axis from 0")
        handles, labels = ax.get_legend_handles_labels()
        unique = dict(zip(labels, handles, strict=False))
        fig.legend(unique.values(), unique.keys(), loc="outside lower center", ncols=4)
        set_title(fig, f"Power trace of run {trace.run_uid[:8]} ({trace.unit_key})",
                  [trace.simulation] if trace.simulation else [])
        return save(fig, out_dir, stem)
