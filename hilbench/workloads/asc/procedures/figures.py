"""Power figures of ASC power windows, whoever read the windows (an external meter or the
device's own on-board monitor): the window record, loop time, the loop-time consistency check,
and idle / active / dynamic power and energy per inference from pooled window estimates.

Two physics checks hold for every source: active power whose dynamic power's 95 % interval lies
entirely below 0 (``active_below_idle``) is flagged by name and gives no dynamic power or energy
figure; and no figure carries an uncertainty of exactly 0 (constant readings from a source that
states neither accuracy nor resolution): its uncertainty is then "not stated".

:mod:`.asc_power` (external instruments) and :mod:`.asc_onboard` (on-board monitor) both use
this module; neither imports the other.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import numpy as np

from hilbench.contracts.power import PowerReport
from hilbench.power.estimators import PhaseWindow, PowerEstimate, phase_power, pool_estimates
from hilbench.power.marker_windows import WindowAlignment, marked_estimate, phase_alignment
from hilbench.power.markers import MarkerEdges
from hilbench.power.metrics import dynamic_power, energy_per_inference
from hilbench.power.provenance import META_KEY, NOT_STATED, PowerOrigin
from hilbench.power.source import SampleBatch
from hilbench.power.timing import aperture_s, timing_uncertainty_s, to_watts
from hilbench.power.uncertainty import Quantity
from hilbench.sdk import Instrument, Phase
from hilbench.workloads.asc.contract import AscWindowResult

Z95 = 1.959963984540054


class StageLoop(Protocol):
    """What the loop time reads of a stage's device loop in a power window: a repeat or
    stream window's reply (:class:`AscWindowResult`), or one stage of a single-stream window
    (:meth:`hilbench.workloads.asc.procedures.pipeline.PipelineWindow.loop`)."""

    @property
    def iterations(self) -> int: ...

    @property
    def mean_s(self) -> float | None: ...

    @property
    def std_error_s(self) -> float | None: ...


@dataclass
class PowerWindow:
    """One measured window: its stage, where it lies on the orchestrator timeline, the
    samples of the phase it belongs to, (active windows) the device's loop report, and the
    device's own power reading over the window, when its reply carried one."""

    stage: str  # "idle" or one of hilbench.workloads.asc.contract.STAGES
    repetition: int
    start: float
    end: float
    batch: SampleBatch | None
    offset_uncertainty_s: float  # this phase's clock-offset probe
    start_uncertainty_s: float | None  # this phase's acquisition start, when the meter says
    loop: AscWindowResult | None = None
    # what the meter's interval estimate leaves open at the window's end, and the estimate
    drift_residual_s: float = 0.0
    interval: dict[str, Any] | None = None
    # further instruments on the same device: their phase_readings, by instrument id
    others: dict[str, dict[str, Any]] = field(default_factory=dict)
    # marker edges the instrument recorded in the phase, and whether the device marks the
    # window (capabilities marker): together they cut it by sample index (issue 35)
    markers: list[MarkerEdges] | None = None
    device_marks: bool = False
    device_marker_latency_s: float = 0.0  # what the device states about its line's edges
    power: PowerReport | None = None  # the agent's claim (an on-board monitor, RAPL)

    def alignment(self, inst: Instrument) -> WindowAlignment:
        """How this window is placed in ``inst``'s samples: marker-cut or software."""
        if self.stage == "idle":
            return WindowAlignment(None, "the idle window is the orchestrator's own; the "
                                         "device's marker stays low in it")
        samples = 0 if self.batch is None else len(self.batch)
        return phase_alignment(self.markers, inst.info, samples, self.device_marks,
                               self.device_marker_latency_s)

    def seen_by(self, instrument_id: str) -> PowerWindow:
        """The same window as a further instrument read it."""
        readings = {"drift_residual_s": 0.0, "interval": None, **self.others[instrument_id]}
        return replace(self, **readings, others={})


def other_readings(phase: Phase, instruments: Sequence[Instrument], inst: Instrument | None,
                   end: float) -> dict[str, dict[str, Any]]:
    """:func:`phase_readings` of every instrument but the headline ``inst``, by id."""
    return {o.spec.id: phase_readings(phase, o, end) for o in instruments if o is not inst}


def phase_readings(phase: Phase, inst: Instrument | None, end: float) -> dict[str, Any]:
    """What a power window takes from its phase's acquisition by ``inst``, as keyword
    arguments of :class:`PowerWindow` (or a single-stream window): the readings, the meter's
    start uncertainty, and its interval estimate (readings already restamped with it) with the
    stamp uncertainty it leaves at the window's ``end``, the latest reading that counts."""
    if inst is None:
        return {"batch": None, "start_uncertainty_s": None}
    key = inst.spec.id
    out: dict[str, Any] = {"batch": phase.samples.get(key),
                           "start_uncertainty_s": phase.start_uncertainty_s.get(key),
                           "markers": phase.markers.get(key)}
    if key in phase.interval_estimates:
        out["drift_residual_s"] = phase.drift_residual_s(key, end)
        out["interval"] = phase.interval_estimates[key].to_dict()
    return out


def window_readings(batch: SampleBatch | None, inst: Instrument, where: str
                    ) -> tuple[np.ndarray, np.ndarray]:
    """A window's reading times and watts; a window without readings has no figure."""
    if batch is None or len(batch) == 0:
        raise ValueError(f"no readings from {inst.spec.id} in {where}")
    return batch.t, to_watts(inst.info, batch.values)


def window_estimate(w: PowerWindow, inst: Instrument, boundary: str
                    ) -> tuple[PowerEstimate, float]:
    """Mean power of one window from an external instrument's readings, and the timing
    uncertainty it was computed with. Each window's timing is known as well as its own
    phase's offset probe and acquisition start: the errors of different windows are
    independent."""
    t, watts = window_readings(w.batch, inst, f"the {w.stage} window (repetition "
                                              f"{w.repetition})")
    cut = w.alignment(inst).cut
    if cut is not None:
        return (marked_estimate("active", watts, cut, inst.info,
                                boundary=boundary),  # type: ignore[arg-type]
                cut.edge_uncertainty_s)
    timing = timing_uncertainty_s(inst, w.offset_uncertainty_s, w.start_uncertainty_s,
                                  w.drift_residual_s)
    estimate = phase_power(
        t, watts,
        PhaseWindow("idle" if w.stage == "idle" else "active", w.start, w.end), inst.info,
        boundary=boundary,  # type: ignore[arg-type]
        aperture_s=aperture_s(inst), timing_uncertainty_s=timing,
    )
    return estimate, timing


def instrument_meta(inst: Instrument, boundary: str, aperture: float | None) -> dict[str, Any]:
    """What every power figure from an external instrument says about how it was read."""
    info = inst.info
    origin = PowerOrigin("simulation" if inst.simulated else "instrument", inst.spec.id,
                         description=inst.description)
    return {
        META_KEY: origin.to_dict(),
        "source": inst.spec.id,
        "instrument": inst.description,
        "simulated": inst.simulated,
        "domains": list(info.domains),
        "sample_interval_s": info.time_resolution_s,
        "aperture_s": aperture,
        "boundary": boundary,
        "uncertainty": "95 % expanded (GUM-S1 Monte Carlo)",
    }


def loop_time(loops: Sequence[StageLoop]) -> tuple[float, float]:
    """Per-sample mean time over the active windows (device timers), weighted by samples."""
    counts = np.array([float(lp.iterations) for lp in loops])
    share = counts / counts.sum()
    means = np.array([float(lp.mean_s) for lp in loops])  # type: ignore[arg-type]
    errors = np.array([float(lp.std_error_s or 0.0) for lp in loops])
    return float((share * means).sum()), float(math.sqrt(((share * errors) ** 2).sum()))


def time_consistency(single_stream: tuple[float, float], loop: tuple[float, float],
                     pass_spread_s: float | None = None) -> dict[str, Any]:
    """Does the loop time in the power window agree with the single-stream time? Flagged when
    they differ by more than 1.96 × their combined standard error.

    ``pass_spread_s``: when the windows ran single stream itself, the spread (SD) of one
    sample list's mean over the windows' lists. The single-stream time is one such pass, and
    a pass's mean moves with the machine's speed while it ran, which the samples' standard
    error within the pass does not see; the pass is then as uncertain as the larger of the
    two."""
    (ss, ss_se), (lp, lp_se) = single_stream, loop
    ss_u = ss_se if pass_spread_s is None else max(ss_se, pass_spread_s)
    combined = math.hypot(ss_u, lp_se)
    difference = lp - ss
    out = {
        "single_stream_s": ss, "single_stream_std_error_s": ss_se,
        "loop_s": lp, "loop_std_error_s": lp_se,
        "relative_difference": difference / ss if ss else None,
        "mismatch": abs(difference) > Z95 * combined,
    }
    if pass_spread_s is not None:
        out["pass_spread_s"] = pass_spread_s
        out["test"] = ("|loop - single stream| > 1.96 x hypot(max(single-stream standard "
                       "error, SD of one sample list's mean in the windows), loop standard "
                       "error)")
    return out


def energy_figure(dynamic: Quantity, single_stream: tuple[float, float],
                  loop: tuple[float, float], pass_spread_s: float | None = None
                  ) -> tuple[Quantity, dict[str, Any]]:
    """Energy per inference from the single-stream time, and the loop-time check beside it."""
    mean_s, se_s = single_stream
    energy = energy_per_inference(dynamic, mean_s, se_s)
    check = time_consistency(single_stream, loop, pass_spread_s)
    return energy, {
        "budget": energy.budget.to_dict(),
        "execution_time_s": mean_s, "execution_time_std_error_s": se_s,
        "formula": "dynamic power × mean single-stream time of this stage over the test set",
        "loop_time": check,
        "flag": ("power-window loop time differs from the single-stream time beyond their "
                 "uncertainties: the device ran differently while its power was measured"
                 if check["mismatch"] else None),
    }


def stage_power_figures(
    estimates: dict[str, list[PowerEstimate]],
    loop_times: dict[str, Any],
    times: Any,
    extra: Callable[[str], dict[str, Any]] = lambda stage: {},
    pass_spreads: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Idle, active and dynamic power and energy per inference from pooled window estimates:
    one rule whether the windows were read by an external meter or by a device's on-board
    monitor. Energy = dynamic power x the stage's mean single-stream time (the rules); the
    loop time inside the power windows only goes beside it as a check. ``extra(stage)`` adds
    source-specific detail (e.g. per-rail watts) to the idle and active figures;
    ``pass_spreads`` the spread of a pass's mean stage time (see :func:`time_consistency`)."""
    idle = pool_estimates(estimates["idle"])
    out: dict[str, Any] = {"idle_power_w": (idle.mean_w, idle.uncertainty95,
                                            {"estimate": idle.to_dict(), **extra("idle")})}
    for stage in loop_times:
        active = pool_estimates(estimates[stage])
        dyn = dynamic_power(idle, active)
        out[f"active_power_w.{stage}"] = (active.mean_w, active.uncertainty95,
                                          {"estimate": active.to_dict(), **extra(stage)})
        below = active_below_idle(dyn.value, dyn.uncertainty95)
        if below is not None:  # the window is not physics: no dynamic or energy figure
            out[f"active_power_w.{stage}"][2].update(below)
            out[f"dynamic_power_w.{stage}"] = (None, None, {
                **below, "measured": dyn.value, "measured_uncertainty": dyn.uncertainty95,
                "budget": dyn.budget.to_dict()})
            out[f"energy_per_inference_j.{stage}"] = (None, None, dict(below))
            continue
        out[f"dynamic_power_w.{stage}"] = (dyn.value, dyn.uncertainty95,
                                           {"budget": dyn.budget.to_dict()})
        mean_s, se_s = times.means[stage]
        if mean_s is None:
            out[f"energy_per_inference_j.{stage}"] = (None, None, {
                "reason": f"the device does not measure its {stage} time"})
            continue
        energy, extra_energy = energy_figure(dyn, (mean_s, se_s or 0.0), loop_times[stage],
                                             (pass_spreads or {}).get(stage))
        out[f"energy_per_inference_j.{stage}"] = (energy.value, energy.uncertainty95,
                                                  extra_energy)
    return {name: never_zero(*figure) for name, figure in out.items()}


ACTIVE_BELOW_IDLE = "active_below_idle"
# A spread this many ulps of the value or less is float64's rounding, not a measured spread.
ROUNDING_ULPS = 64


def active_below_idle(dynamic_w: float, uncertainty_w: float) -> dict[str, Any] | None:
    """The flag when dynamic power's 95 % interval lies entirely below 0 (active power below
    idle: the windows measured something other than the work, e.g. a mislabelled window or a
    device that idles harder than it works), else None."""
    if not dynamic_w + uncertainty_w < 0:
        return None
    known = (f"± {uncertainty_w:.2g} W, its 95 % interval entirely below 0" if uncertainty_w > 0
             else "W, below 0 by more than anything the readings or their source state")
    why = (f"{ACTIVE_BELOW_IDLE}: active power lies below idle power (dynamic "
           f"{dynamic_w:.6g} {known}); no dynamic power or energy figure from these windows")
    return {"physics": ACTIVE_BELOW_IDLE, "flag": why, "reason": why}


def never_zero(value: float | None, uncertainty: float | None, meta: dict[str, Any]
               ) -> tuple[float | None, float | None, dict[str, Any]]:
    """A measured figure whose uncertainty came out exactly 0 (constant readings, and a source
    that states neither accuracy nor resolution) has an uncertainty not stated, never ± 0.
    Exactly 0 up to float64's rounding of the value: a mean of constant readings can leave a
    spread of a few ulps (6.6e-19 W on a 1 mW rail), which is no measured spread."""
    if value is None or uncertainty is None or uncertainty > ROUNDING_ULPS * math.ulp(value):
        return value, uncertainty, meta
    return value, None, {**meta, "uncertainty_note": (
        f"{NOT_STATED}: the readings were constant and the source states no accuracy or "
        "resolution that bounds them")}

