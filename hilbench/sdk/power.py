"""Power figures any workload's procedure takes from a phase: an instrument's mean power over
a window of the orchestrator's timeline, and the agent's own report, each a
:class:`PowerFigure` whose meta says where it comes from (:mod:`hilbench.power.provenance`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hilbench.contracts.power import PowerReport
from hilbench.orchestrator.instruments import Instrument
from hilbench.orchestrator.phases import Phase
from hilbench.power.estimators import PhaseWindow, phase_power
from hilbench.power.provenance import META_KEY, PowerOrigin, stated_uncertainty95
from hilbench.power.timing import aperture_s, timing_uncertainty_s, to_watts


@dataclass(frozen=True)
class PowerFigure:
    """A power figure as stored: value and 95 % uncertainty (None: not measured, or not
    stated), and the meta that says where it comes from and how."""

    value: float | None
    uncertainty: float | None
    meta: dict[str, Any] = field(default_factory=dict)

    def times(self, seconds: float, method: str) -> PowerFigure:
        """The energy over ``seconds`` at this power (uncertainty scaled alike)."""
        return PowerFigure(
            None if self.value is None else self.value * seconds,
            None if self.uncertainty is None else self.uncertainty * seconds,
            {**self.meta, "method": method, "duration_s": seconds})


def instrument_power(phase: Phase, agent: str, inst: Instrument, start: float, end: float
                     ) -> PowerFigure:
    """Mean power of ``inst``'s readings over [start, end] on the orchestrator's timeline."""
    offset = phase.offsets[agent]
    batch = phase.samples.get(inst.spec.id)
    origin = PowerOrigin("simulation" if inst.simulated else "instrument", inst.spec.id,
                         description=inst.description)
    meta: dict[str, Any] = {
        META_KEY: origin.to_dict(),
        "source": inst.spec.id,
        "instrument": inst.info.name,
        "window": [start, end],
        "clock_offset": offset.to_dict(),
    }
    if inst.spec.id in phase.interval_estimates:
        meta["interval"] = phase.interval_estimates[inst.spec.id].to_dict()
    # The analysis inputs beside the window, so `hilbench audit verify` recomputes the figure.
    meta["analysis"] = {
        "aperture_s": aperture_s(inst),
        "timing_uncertainty_s": timing_uncertainty_s(
            inst, offset.uncertainty_s, phase.start_uncertainty_s.get(inst.spec.id),
            phase.drift_residual_s(inst.spec.id, end)),
    }
    try:
        if batch is None:
            raise ValueError(f"no readings from {inst.spec.id} in this phase")
        estimate = phase_power(batch.t, to_watts(inst.info, batch.values),
                               PhaseWindow("active", start, end), inst.info,
                               **meta["analysis"])
    except ValueError as exc:
        return PowerFigure(None, None, {**meta, "reason": str(exc)})
    meta["budget"] = estimate.to_dict()
    return PowerFigure(estimate.mean_w, estimate.uncertainty95, meta)


def agent_power(agent: str, report: PowerReport | None) -> PowerFigure | None:
    """The agent's own report as a figure labelled so, with the uncertainty its source states
    (None: it states none). None when the reply carries no measured reading."""
    if report is None or not report.usable:
        return None
    accuracy = report.stated_accuracy
    uncertainty = None
    assert report.avg_power_w is not None
    if accuracy is not None:
        uncertainty = stated_uncertainty95(report.avg_power_w, accuracy.relative,
                                           accuracy.absolute_w, report.resolution_w)
    origin = PowerOrigin.of_agent(agent, report.source, stated=accuracy is not None,
                                  description=", ".join(report.domain_names()))
    meta: dict[str, Any] = {META_KEY: origin.to_dict(), "source": report.source,
                            "domains": report.domains, "simulated": report.simulated}
    if accuracy is None:
        meta["accuracy"] = (report.accuracy if isinstance(report.accuracy, str)
                            else "the agent's source states none")
    if report.duration_s is not None:
        meta["duration_s"] = report.duration_s
    return PowerFigure(report.avg_power_w, uncertainty, meta)
