"""Idle, active and dynamic power and energy per inference, each with a stated uncertainty.

NeuroBench asks for idle power (device configured and ready), active power (mean while
processing), dynamic power = active - idle, and energy per inference = dynamic power x mean
execution time. The per-phase estimates come from :mod:`hilbench.power.estimators`; here they
are combined. Both phases are read by the same instrument, so in the dynamic power the gain
error scales the difference and the offset cancels, while each phase's timing error (its own
offset probe and meter start) stays independent. Budgets are in
:mod:`hilbench.power.uncertainty`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hilbench.power.align import BoundaryPolicy
from hilbench.power.estimators import (
    DEFAULT_MIN_COVERAGE,
    PHASES,
    PhaseWindow,
    PowerEstimate,
    phase_power,
    pool_estimates,
)
from hilbench.power.source import SourceInfo
from hilbench.power.uncertainty import Quantity, UncertaintyBudget, UncertaintyComponent


def dynamic_power(idle: PowerEstimate, active: PowerEstimate) -> Quantity:
    """Active minus idle power. The shared instrument's gain error scales the difference, its
    offset cancels; idle and active windows come from separate phases with separate offset
    probes and meter starts, so their timing errors are independent."""
    if idle.accuracy != active.accuracy:
        raise ValueError("idle and active power were measured with different instrument settings")
    value = active.mean_w - idle.mean_w
    a = active.accuracy
    components = (
        UncertaintyComponent(
            "statistical (active)", "student_t", active.std_error_w, active.dof, note=active.method
        ),
        UncertaintyComponent(
            "statistical (idle)", "student_t", idle.std_error_w, idle.dof, note=idle.method
        ),
        UncertaintyComponent("instrument gain", "rectangular", a.relative * abs(value)),
        UncertaintyComponent(
            "instrument offset", "rectangular", 0.0, note="same instrument and range: cancels"
        ),
        UncertaintyComponent("supply voltage", "rectangular", a.supply_relative * abs(value)),
        UncertaintyComponent(
            "clock offset (active)",
            "clock_offset",
            active.timing_half_width_s,
            per_s_positive=active.clock_per_s_positive,
            per_s_negative=active.clock_per_s_negative,
            note="the active windows' own timing error",
        ),
        UncertaintyComponent(
            "clock offset (idle)",
            "clock_offset",
            idle.timing_half_width_s,
            per_s_positive=-idle.clock_per_s_positive,
            per_s_negative=-idle.clock_per_s_negative,
            note="the idle windows' timing error, independent of the active ones'",
        ),
        UncertaintyComponent(
            "quantisation (active)", "rectangular", active.quantisation_half_width_w
        ),
        UncertaintyComponent("quantisation (idle)", "rectangular", idle.quantisation_half_width_w),
        UncertaintyComponent("boundary mixing (active)", "rectangular", active.mixing_half_width_w),
        UncertaintyComponent("boundary mixing (idle)", "rectangular", idle.mixing_half_width_w),
    )
    return Quantity("dynamic power", value, "W", UncertaintyBudget(components))


def energy_per_inference(
    dynamic: Quantity, mean_execution_s: float, mean_execution_std_error_s: float = 0.0
) -> Quantity:
    """Dynamic energy per inference = dynamic power x mean execution time (NeuroBench)."""
    if not mean_execution_s > 0:
        raise ValueError(f"mean execution time must be positive, got {mean_execution_s} s")
    components = [c.scaled(mean_execution_s) for c in dynamic.budget.components]
    components.append(
        UncertaintyComponent(
            "execution time",
            "student_t",
            abs(dynamic.value) * mean_execution_std_error_s,
            note="standard error of the mean execution time",
        )
    )
    return Quantity(
        "energy per inference",
        dynamic.value * mean_execution_s,
        "J",
        UncertaintyBudget(tuple(components)),
    )


@dataclass(frozen=True)
class ExecutionTime:
    mean_s: float
    std_error_s: float
    source: str


def mean_execution_time(windows: Sequence[PhaseWindow]) -> ExecutionTime | None:
    """Mean execution time over the active windows: the device timers' figure where given,
    else window duration / inferences (back-to-back stream); None if neither is known."""
    active = [w for w in windows if w.name == "active"]
    if not active:
        return None
    values, errors, counts, sources = [], [], [], set()
    for w in active:
        if w.mean_execution_s is not None:
            values.append(w.mean_execution_s)
            errors.append(w.mean_execution_std_error_s)
            sources.add("device timers")
        elif w.inferences > 0:
            values.append(w.duration_s / w.inferences)
            errors.append(0.0)
            sources.add("window duration / inferences")
        else:
            return None
        counts.append(max(w.inferences, 1))
    share = np.asarray(counts, dtype=np.float64) / sum(counts)
    return ExecutionTime(
        mean_s=float((share * np.asarray(values)).sum()),
        std_error_s=float(math.sqrt(((share * np.asarray(errors)) ** 2).sum())),
        source=" and ".join(sorted(sources)),
    )


# --- everything at once ----------------------------------------------------------------------


@dataclass(frozen=True)
class PowerAnalysis:
    """The published power figures of one measurement, with how each was obtained."""

    idle: PowerEstimate
    active: PowerEstimate
    dynamic: Quantity
    energy_per_inference: Quantity | None
    execution: ExecutionTime | None
    windows: tuple[PowerEstimate, ...]
    boundary: str
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_json_dict(self) -> dict[str, float | None]:
        """The headline figures; every ``*_uncertainty`` is a 95 % expanded uncertainty
        (half-width of the interval centred on the value), in the figure's unit."""
        energy = self.energy_per_inference
        return {
            "idle_coverage": self.idle.coverage,
            "active_coverage": self.active.coverage,
            "idle_w": self.idle.mean_w,
            "idle_w_uncertainty": self.idle.uncertainty95,
            "active_w": self.active.mean_w,
            "active_w_uncertainty": self.active.uncertainty95,
            "dynamic_w": self.dynamic.value,
            "dynamic_w_uncertainty": self.dynamic.uncertainty95,
            "energy_per_inference_j": None if energy is None else energy.value,
            "energy_per_inference_j_uncertainty": None if energy is None else energy.uncertainty95,
        }

    def to_dict(self) -> dict[str, Any]:
        """Everything, for the store: figures, budgets, per-window estimates, policies."""
        execution = self.execution
        return {
            "figures": self.to_json_dict(),
            "idle": self.idle.to_dict(),
            "active": self.active.to_dict(),
            "dynamic": self.dynamic.to_dict(),
            "energy_per_inference": None
            if self.energy_per_inference is None
            else self.energy_per_inference.to_dict(),
            "mean_execution": None
            if execution is None
            else {
                "mean_s": execution.mean_s,
                "std_error_s": execution.std_error_s,
                "source": execution.source,
            },
            "windows": [w.to_dict() for w in self.windows],
            "boundary": self.boundary,
            "notes": list(self.notes),
        }


def analyze(
    t: np.ndarray,
    watts: np.ndarray,
    windows: Sequence[PhaseWindow],
    info: SourceInfo,
    *,
    boundary: BoundaryPolicy = "exclude",
    aperture_s: float | None = None,
    gapless: bool | None = None,
    timing_uncertainty_s: float | None = None,
    resolution: float = 0.0,
    supply_relative_uncertainty: float = 0.0,
    min_coverage: float = DEFAULT_MIN_COVERAGE,
) -> PowerAnalysis:
    """Idle, active and dynamic power and energy per inference from one trace and its windows;
    repeated windows of a phase are pooled. Keyword options as in :func:`phase_power`."""
    unknown = sorted({w.name for w in windows} - set(PHASES))
    if unknown:
        raise ValueError(f"window phase must be 'idle' or 'active', got {', '.join(unknown)}")
    for phase in PHASES:
        if not any(w.name == phase for w in windows):
            raise ValueError(f"no {phase} window given; need at least one idle and one active")
    options: dict[str, Any] = {
        "boundary": boundary,
        "aperture_s": aperture_s,
        "gapless": gapless,
        "timing_uncertainty_s": timing_uncertainty_s,
        "resolution": resolution,
        "supply_relative_uncertainty": supply_relative_uncertainty,
        "min_coverage": min_coverage,
    }
    per_window = tuple(phase_power(t, watts, w, info, **options) for w in windows)
    idle = pool_estimates([e for e in per_window if e.phase == "idle"])
    active = pool_estimates([e for e in per_window if e.phase == "active"])
    dynamic = dynamic_power(idle, active)
    execution = mean_execution_time(windows)
    notes = [
        f"boundary readings: {boundary} ({idle.straddling} idle, {active.straddling} active)",
        f"statistical error: idle {idle.method}; active {active.method}",
        "uncertainties: 95 % expanded, GUM-S1 Monte Carlo of the listed components",
        "coverage of each window by the readings: "
        + ", ".join(f"{e.phase} {100 * e.coverage:.1f} %" for e in per_window),
    ]
    energy = None
    if execution is None:
        notes.append("energy per inference: no inferences or execution time in active windows")
    else:
        energy = energy_per_inference(dynamic, execution.mean_s, execution.std_error_s)
        notes.append(f"mean execution time {execution.mean_s:.6g} s from {execution.source}")
    return PowerAnalysis(
        idle=idle,
        active=active,
        dynamic=dynamic,
        energy_per_inference=energy,
        execution=execution,
        windows=per_window,
        boundary=boundary,
        notes=tuple(notes),
    )
