"""Power figures from a device's own on-board power monitor (e.g. the Xylo Audio 2 HDK's
per-rail monitor), used when the device declares ``capabilities.asc.onboard_power`` and no
external instrument measures its agent.

The device reports, for each idle and active window it ran, the readings of every rail
(``power.samples_w``, ``rate_hz``); the readings of one window are spread evenly over the
window the device itself timed (they come from the same board, drained at the window's start
and end), summed over the rails, and go through the same estimators as an external meter's
(:func:`hilbench.power.estimators.phase_power`). The monitor's calibration accuracy is not stated
by the vendor, so the budget holds the statistical and timing parts only, and the meta says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hilbench.power.estimators import (
    PhaseWindow,
    PowerEstimate,
    phase_power,
)
from hilbench.power.source import SourceInfo

if TYPE_CHECKING:
    from hilbench.orchestrator.client import AgentClient
    from hilbench.procedures.asc_power import _Window
    from hilbench.procedures.asc_single_stream import StageTimes

CATEGORY = "on-board instrument"
CALIBRATION = ("the on-board monitor's calibration accuracy is not stated by the vendor: the "
               "budget holds statistical and timing errors only")


def declares_onboard_power(client: AgentClient) -> bool:
    """The device reports measured on-board power in its idle and active window replies."""
    caps = client.info.get("capabilities") or {}
    return bool((caps.get("asc") or {}).get("onboard_power"))


def window_readings(power: dict[str, Any], start: float, end: float
                    ) -> tuple[np.ndarray, np.ndarray, dict[str, float]]:
    """Timestamps (spread evenly over the window), total watts per reading, mean per rail."""
    samples = power.get("samples_w") or {}
    if not power.get("measured") or not samples:
        raise ValueError(power.get("reason") or "the device sent no on-board power readings")
    n = min(len(v) for v in samples.values())
    if n < 2:
        raise ValueError(f"{n} on-board reading(s) per rail in a {end - start:.3g} s window; "
                         "need at least 2 (raise the power sampling rate or the window)")
    rails = {rail: np.asarray(v[:n], dtype=float) for rail, v in samples.items()}
    total = np.sum(list(rails.values()), axis=0)
    step = (end - start) / n
    t = start + (np.arange(n) + 0.5) * step
    return t, total, {rail: float(v.mean()) for rail, v in rails.items()}


def onboard_figures(
    windows: list[_Window],
    boundary: str,
    times: StageTimes,
    loop_times: dict[str, tuple[float, float]],
) -> dict[str, Any]:
    """Idle, active, dynamic power and energy per stage from the device's own readings, in the
    shape :func:`hilbench.procedures.asc_power._power_figures` returns."""
    from hilbench.procedures.asc_power import stage_power_figures

    estimates: dict[str, list[PowerEstimate]] = {}
    rails_w: dict[str, list[dict[str, float]]] = {}
    first: dict[str, Any] = {}
    try:
        for w in windows:
            power = (w.loop or {}).get("power") or {}
            t, watts, rails = window_readings(power, w.start, w.end)
            first = first or power
            info = SourceInfo(name=str(power.get("source", "on-board")), unit="W",
                              time_resolution_s=float(t[1] - t[0]),
                              domains=tuple(sorted(rails)))
            step = float(t[1] - t[0])
            phase = "idle" if w.stage == "idle" else "active"
            estimates.setdefault(w.stage, []).append(phase_power(
                t, watts, PhaseWindow(phase, w.start, w.end), info,
                boundary=boundary,  # type: ignore[arg-type]
                aperture_s=step, gapless=True, timing_uncertainty_s=step))
            rails_w.setdefault(w.stage, []).append(rails)
    except ValueError as exc:
        return {"reason": f"on-board power: {exc}"}
    if "idle" not in estimates:
        return {"reason": "on-board power: no idle window"}

    def per_rail(stage: str) -> dict[str, float]:
        found = rails_w[stage]
        return {rail: float(np.mean([r[rail] for r in found])) for rail in found[0]}

    out = stage_power_figures(estimates, loop_times, times,
                              lambda stage: {"rails_w": per_rail(stage)})
    rails = sorted(per_rail("idle"))
    rate = first.get("rate_hz")
    out["meta"] = {
        "category": CATEGORY,
        "source": str(first.get("source", "on-board")),
        "instrument": f"the device's on-board power monitor ({len(rails)} rails"
                      + (f" at {rate:g} Hz)" if rate else ")"),
        "rails": rails,
        "domains": rails,
        "simulated": False,
        "boundary": boundary,
        "calibration": CALIBRATION,
        "uncertainty": "95 % expanded (GUM-S1 Monte Carlo); " + CALIBRATION,
        "windows": [{"stage": w.stage, "repetition": w.repetition, "start": w.start,
                     "end": w.end} for w in windows],
    }
    return out
