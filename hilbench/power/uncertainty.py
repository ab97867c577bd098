"""Uncertainty budgets: the named error components of a figure and their 95 % combination.

A figure's error sources (statistical, instrument gain and offset, supply voltage, clock
offset, quantisation, boundary mixing) are each an :class:`UncertaintyComponent` with the
distribution that propagates it:

- *statistical*: a standard error with its degrees of freedom (Student t);
- *instrument gain* (± relative x reading) and *instrument offset* (± absolute), rectangular
  as a data sheet bound is; :class:`InstrumentAccuracy` converts a source's declared bound to
  watts;
- *clock offset*: the timestamps are known to ± a half-width; the figure moves by a measured
  slope per second of shift, possibly different on each side.

The expanded uncertainty is the half-width of the interval centred on the estimate that holds
the true value with 95 % probability under those component distributions, found by Monte Carlo
propagation (GUM Supplement 1) with a fixed seed so that results are reproducible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

import numpy as np

from hilbench.power.source import SourceInfo

MC_DRAWS = 20_000
MC_SEED = 0x5EED

Distribution = Literal["student_t", "rectangular", "clock_offset"]


@dataclass(frozen=True)
class UncertaintyComponent:
    """One source of error in a figure, with the distribution used to propagate it.

    ``student_t``: ``scale`` is a standard error with ``dof`` degrees of freedom.
    ``rectangular``: ``scale`` is the half-width of a ± bound.
    ``clock_offset``: ``scale`` is the half-width (s) of the timing error δ; the figure changes
    by ``per_s_positive * δ`` for δ > 0 and by ``per_s_negative * |δ|`` for δ < 0.
    """

    name: str
    distribution: Distribution
    scale: float
    dof: float = math.inf
    per_s_positive: float = 0.0
    per_s_negative: float = 0.0
    note: str = ""

    @property
    def standard_uncertainty(self) -> float:
        """Root-mean-square error this component contributes (GUM standard uncertainty)."""
        if self.distribution == "student_t":
            return abs(self.scale)
        if self.distribution == "rectangular":
            return abs(self.scale) / math.sqrt(3.0)
        mean_square_slope = (self.per_s_positive**2 + self.per_s_negative**2) / 2.0
        return abs(self.scale) / math.sqrt(3.0) * math.sqrt(mean_square_slope)

    def scaled(self, factor: float, name: str | None = None) -> UncertaintyComponent:
        """The same component for ``factor`` x the figure (e.g. power -> energy)."""
        if self.distribution == "clock_offset":
            return UncertaintyComponent(
                name or self.name,
                "clock_offset",
                self.scale,
                per_s_positive=self.per_s_positive * factor,
                per_s_negative=self.per_s_negative * factor,
                note=self.note,
            )
        return UncertaintyComponent(
            name or self.name, self.distribution, abs(self.scale * factor), self.dof, note=self.note
        )

    def draw(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """Random errors from this component, for Monte Carlo propagation."""
        if self.scale == 0.0:
            return np.zeros(size)
        if self.distribution == "student_t":
            if math.isinf(self.dof) or self.dof > 1e6:
                return rng.standard_normal(size) * self.scale
            return rng.standard_t(max(self.dof, 1.0), size) * self.scale
        if self.distribution == "rectangular":
            return rng.uniform(-self.scale, self.scale, size)
        delta = rng.uniform(-self.scale, self.scale, size)
        return np.where(delta > 0, self.per_s_positive * delta, -self.per_s_negative * delta)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "distribution": self.distribution,
            "standard_uncertainty": self.standard_uncertainty,
            "scale": self.scale,
        }
        if self.distribution == "student_t":
            out["dof"] = None if math.isinf(self.dof) else self.dof
        if self.distribution == "clock_offset":
            out["per_s_positive"] = self.per_s_positive
            out["per_s_negative"] = self.per_s_negative
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class UncertaintyBudget:
    """The components of a figure's error, their combination, and the 95 % expanded value."""

    components: tuple[UncertaintyComponent, ...]

    @property
    def combined(self) -> float:
        """Combined standard uncertainty: root sum of squares of the components."""
        return math.sqrt(sum(c.standard_uncertainty**2 for c in self.components))

    @cached_property
    def expanded95(self) -> float:
        """Half-width of the 95 % interval centred on the estimate (Monte Carlo, fixed seed)."""
        if self.combined == 0.0:
            return 0.0
        rng = np.random.default_rng(MC_SEED)
        total = np.zeros(MC_DRAWS)
        for component in self.components:
            total += component.draw(rng, MC_DRAWS)
        return float(np.quantile(np.abs(total), 0.95))

    @property
    def coverage_factor(self) -> float:
        return self.expanded95 / self.combined if self.combined else float("nan")

    def component(self, name: str) -> UncertaintyComponent:
        for c in self.components:
            if c.name == name:
                return c
        raise KeyError(f"no uncertainty component {name!r}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "combined_standard_uncertainty": self.combined,
            "expanded_uncertainty_95": self.expanded95,
            "coverage_factor": None if self.combined == 0 else self.coverage_factor,
            "method": f"GUM-S1 Monte Carlo, {MC_DRAWS} draws, symmetric 95 % interval",
            "components": [c.to_dict() for c in self.components],
        }


@dataclass(frozen=True)
class Quantity:
    """A derived figure (dynamic power, energy per inference) with its budget."""

    name: str
    value: float
    unit: str
    budget: UncertaintyBudget

    @property
    def uncertainty95(self) -> float:
        return self.budget.expanded95

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "uncertainty95": self.uncertainty95,
            "budget": self.budget.to_dict(),
        }



@dataclass(frozen=True)
class InstrumentAccuracy:
    """What the instrument contributes, in watts: ± (relative x reading + absolute_w)."""

    relative: float = 0.0
    absolute_w: float = 0.0
    resolution_w: float = 0.0
    supply_relative: float = 0.0  # a nominal supply voltage used to turn amps into watts

    @classmethod
    def from_source(
        cls, info: SourceInfo, *, resolution: float = 0.0, supply_relative: float = 0.0
    ) -> InstrumentAccuracy:
        """Convert a source's declared accuracy and resolution (in its own unit) to watts; the
        resolution is the larger of ``resolution`` and the one the source declares."""
        if info.unit == "W":
            factor = 1.0
        elif info.unit == "A":
            if info.supply_voltage_v is None:
                raise ValueError(
                    f"source {info.name!r} measures amps but declares no supply voltage"
                )
            factor = info.supply_voltage_v
        else:
            raise ValueError(f"source {info.name!r} measures {info.unit}, not power or current")
        resolution = max(resolution, info.resolution)
        for label, value in (
            ("accuracy_relative", info.accuracy_relative),
            ("accuracy_absolute", info.accuracy_absolute),
            ("resolution", resolution),
            ("supply relative uncertainty", supply_relative),
        ):
            if value < 0 or not math.isfinite(value):
                raise ValueError(f"source {info.name!r}: {label} must be >= 0, got {value}")
        return cls(
            relative=info.accuracy_relative,
            absolute_w=info.accuracy_absolute * factor,
            resolution_w=resolution * factor,
            supply_relative=supply_relative,
        )

