"""How an ASC power description says where its windows came from: cut by the device's marker in
the instrument's own samples (with each window's edge uncertainty), or placed in software."""

from __future__ import annotations

from typing import Any

from hilbench.power.marker_windows import MARKER_CUT
from hilbench.workloads.asc.contract import STAGES

SINGLE_STREAM = "single_stream"  # a single-stream power window's stage in the figures' windows
LABELS = {SINGLE_STREAM: "single-stream"}


def marker_parts(runs: list[dict[str, dict[str, Any]]]) -> list[str]:
    """The description's lines for marker-cut windows over ``runs`` (their metrics by name);
    none when no window was cut by a marker (the software description stands)."""
    windows = [w for run in runs
               for w in ((run.get("idle_power_w") or {}).get("meta") or {}).get("windows") or []
               if isinstance(w, dict)]
    cut = [w for w in windows if w.get("alignment") == MARKER_CUT]
    if not cut:
        return []
    edges = [float(w["edge_uncertainty_s"]) for w in cut if w.get("edge_uncertainty_s")]
    by_stage = ", ".join(
        f"{LABELS.get(stage, stage)} {sum(w.get('stage') == stage for w in cut)}/"
        f"{sum(w.get('stage') == stage for w in windows)}" for stage in (*STAGES, SINGLE_STREAM)
        if any(w.get("stage") == stage for w in windows))
    regions = sum(int(w.get("marker_regions") or 0) for w in cut)
    if regions:  # single stream: one marked region per sample run
        by_stage += f"; {regions} samples each placed by its own marked region"
    software = sorted({str(w.get("alignment_reason")) for w in windows
                       if w.get("alignment") != MARKER_CUT and w.get("stage") != "idle"})
    device = max((float(w.get("device_marker_latency_s") or 0.0) for w in cut), default=0.0)
    device_part = (f" + the device's stated marker latency, {1e6 * device:.3g} µs" if device
                   else "")
    parts = [
        f"active windows MARKER-CUT ({by_stage}): the samples between the device's marker "
        "edges in the instrument's own stream, edge uncertainty ± "
        f"{1e6 * max(edges):.3g} µs per window (one sample period + the stated input "
        f"latency{device_part})",
        "idle window: software (the orchestrator's own; the marker stays low)",
    ]
    if software:
        parts.append(f"active windows in SOFTWARE alignment: {'; '.join(software)}")
    return parts
