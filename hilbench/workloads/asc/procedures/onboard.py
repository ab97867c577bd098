"""Power figures from a device's own on-board power monitor (e.g. the Xylo Audio 2 HDK's
per-rail monitor), used when the device declares ``capabilities.asc.onboard_power`` and no
external instrument measures its agent.

The device reports, for each idle and active window it ran, the readings of every rail
(``power.samples_w``, ``rate_hz``); the readings of one window are spread evenly over the
window the device itself timed (they come from the same board, drained at the window's start
and end), summed over the rails, and go through the same estimators as an external meter's
(:func:`hilbench.power.estimators.phase_power`).

The monitor is the device's, read by the agent: every figure is the agent's own report
(:mod:`hilbench.power.provenance`). Its uncertainty is what the report states (``accuracy``:
gain, offset, resolution); where it states none, as the Xylo HDK's does not, the figures'
uncertainty is "not stated" (the statistical and timing part alone is kept in the meta as
``partial_uncertainty95``, and the physics check uses it) and they stay out of leaderboard rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hilbench.contracts.power import PowerReport
from hilbench.power.estimators import (
    PhaseWindow,
    PowerEstimate,
    phase_power,
)
from hilbench.power.provenance import META_KEY, NOT_STATED, PowerOrigin
from hilbench.power.source import SourceInfo
from hilbench.workloads.asc.procedures.figures import PowerWindow, stage_power_figures

if TYPE_CHECKING:
    from hilbench.workloads.asc.procedures.single_stream import StageTimes

CATEGORY = "on-board instrument"
CALIBRATION = ("the on-board monitor's calibration accuracy is not stated by the vendor: the "
               "budget holds statistical and timing errors only")


def window_readings(power: PowerReport | None, start: float, end: float
                    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Timestamps (spread evenly over the window) and the readings of every rail."""
    samples = (power.samples_w if power is not None else None) or {}
    if power is None or not power.measured or not samples:
        reason = power.reason if power is not None else None
        raise ValueError(reason or "the device sent no on-board power readings")
    n = min(len(v) for v in samples.values())
    if n < 2:
        raise ValueError(f"{n} on-board reading(s) per rail in a {end - start:.3g} s window; "
                         "need at least 2 (raise the power sampling rate or the window)")
    rails = {rail: np.asarray(v[:n], dtype=float) for rail, v in samples.items()}
    step = (end - start) / n
    return start + (np.arange(n) + 0.5) * step, rails


# complexity: its two inner helpers (estimates over a set of rails, per-rail means) share the
# windows' readings; the stages whose windows report fewer rails are a second pass over them
def onboard_figures(  # noqa: C901
    windows: list[PowerWindow],
    boundary: str,
    times: StageTimes,
    loop_times: dict[str, tuple[float, float]],
    agent: str = "",
) -> dict[str, Any]:
    """Idle, active, dynamic power and energy per stage from the device's own readings, in the
    shape :func:`hilbench.workloads.asc.procedures.power._power_figures` returns.

    A stage whose windows report only some rails (the Xylo's pre-processing on its analog
    front end: the AFE rails) is compared with the idle windows' readings of those same rails,
    so its dynamic power is that of the rails that do its work."""
    readings: list[tuple[PowerWindow, np.ndarray, dict[str, np.ndarray]]] = []
    first: PowerReport | None = None
    try:
        for w in windows:
            t, rails = window_readings(w.power, w.start, w.end)
            first = first or w.power
            readings.append((w, t, rails))
    except ValueError as exc:
        return {"reason": f"on-board power: {exc}"}
    assert first is not None
    stated = first.stated_accuracy
    if not any(w.stage == "idle" for w, _, _ in readings):
        return {"reason": "on-board power: no idle window"}
    rail_sets = {w.stage: tuple(sorted(rails)) for w, _, rails in readings}
    all_rails = rail_sets["idle"]
    source = first.source or "on-board"

    def estimates(stages: set[str], rails: tuple[str, ...]) -> dict[str, list[PowerEstimate]]:
        found: dict[str, list[PowerEstimate]] = {}
        for w, t, by_rail in readings:
            if w.stage not in stages:
                continue
            watts = np.sum([by_rail[r] for r in rails], axis=0)
            step = float(t[1] - t[0])
            info = SourceInfo(name=source, unit="W", time_resolution_s=step, domains=rails,
                              accuracy_relative=stated.relative if stated else 0.0,
                              accuracy_absolute=stated.absolute_w if stated else 0.0,
                              resolution=first.resolution_w)
            phase = "idle" if w.stage == "idle" else "active"
            found.setdefault(w.stage, []).append(phase_power(
                t, watts, PhaseWindow(phase, w.start, w.end), info,
                boundary=boundary,  # type: ignore[arg-type]
                aperture_s=step, gapless=True, timing_uncertainty_s=step))
        return found

    def per_rail(stage: str, rails: tuple[str, ...] | None = None) -> dict[str, float]:
        names = rails or rail_sets[stage]
        found = [by_rail for w, _, by_rail in readings if w.stage == stage]
        return {r: float(np.mean([by_rail[r].mean() for by_rail in found])) for r in names}

    whole = {stage for stage, rails in rail_sets.items() if rails == all_rails}
    out = stage_power_figures(
        estimates(whole, all_rails),
        {s: v for s, v in loop_times.items() if s in whole}, times,
        lambda stage: {"rails_w": per_rail(stage)})
    for stage, rails in rail_sets.items():
        if stage in whole or stage not in loop_times:
            continue
        if not set(rails) <= set(all_rails):
            return {"reason": f"on-board power: the {stage} windows report rails {rails} the "
                              f"idle windows do not ({all_rails})"}
        idle_same = per_rail("idle", rails)
        part = stage_power_figures(
            estimates({"idle", stage}, rails), {stage: loop_times[stage]}, times,
            lambda s, rails=rails, idle_same=idle_same: {
                "rails_w": per_rail(s, rails),
                **({"idle_same_rails_w": idle_same, "rails": list(rails)} if s != "idle"
                   else {})})
        out.update({k: v for k, v in part.items() if k != "idle_power_w"})
    if stated is None:
        out = {name: _not_stated(*figure) for name, figure in out.items()}
    out["meta"] = _meta(first, source, list(all_rails), rail_sets, boundary, agent, windows)
    return out


def _meta(first: PowerReport, source: str, rails: list[str],
          rail_sets: dict[str, tuple[str, ...]], boundary: str, agent: str,
          windows: list[PowerWindow]) -> dict[str, Any]:
    """What every on-board figure says about how it was read: the agent's report, its rails
    and rate, and the accuracy the report states (or that it states none)."""
    stated = first.stated_accuracy
    all_rails = tuple(rails)
    rate = first.rate_hz
    origin = PowerOrigin.of_agent(agent, source, stated=stated is not None,
                                  description=f"on-board monitor, rails {', '.join(rails)}")
    return {
        META_KEY: origin.to_dict(),
        "category": CATEGORY,
        "source": source,
        "instrument": f"the device's on-board power monitor ({len(rails)} rails"
                      + (f" at {rate:g} Hz)" if rate else ")"),
        "rails": rails,
        "domains": rails,
        "stage_rails": {s: list(r) for s, r in rail_sets.items() if r != all_rails},
        "simulated": False,
        "boundary": boundary,
        "calibration": CALIBRATION if stated is None else (
            f"stated by the agent's report: ± ({stated.relative:g} × reading + "
            f"{stated.absolute_w:g} W)" + (f", {stated.basis}" if stated.basis else "")),
        "uncertainty": (f"{NOT_STATED}: " + CALIBRATION if stated is None else
                        "95 % expanded (GUM-S1 Monte Carlo) with the report's stated accuracy"),
        "windows": [{"stage": w.stage, "repetition": w.repetition, "start": w.start,
                     "end": w.end} for w in windows],
    }


def _not_stated(value: float | None, uncertainty: float | None, meta: dict[str, Any]
                ) -> tuple[float | None, None, dict[str, Any]]:
    """A figure from a monitor whose accuracy is not stated: no uncertainty, the part known
    (statistical, timing, resolution) kept beside it."""
    return value, None, {**meta, "partial_uncertainty95": uncertainty,
                         "uncertainty_note": f"{NOT_STATED}: {CALIBRATION}"}
