"""Uncertainty budgets: the Monte Carlo 95 % half-width agrees with the known quantiles of
the distributions a component can have, and components scale with the figure they belong to."""

from __future__ import annotations

import math

import pytest

from hilbench.power.uncertainty import UncertaintyBudget, UncertaintyComponent


def test_monte_carlo_expansion_matches_known_distributions() -> None:
    normal = UncertaintyBudget((UncertaintyComponent("n", "student_t", 1.0),))
    assert normal.expanded95 == pytest.approx(1.96, rel=0.03)
    few_dof = UncertaintyBudget((UncertaintyComponent("t", "student_t", 1.0, dof=4),))
    assert few_dof.expanded95 == pytest.approx(2.776, rel=0.05)
    flat = UncertaintyBudget((UncertaintyComponent("r", "rectangular", 1.0),))
    assert flat.expanded95 == pytest.approx(0.95, rel=0.02)
    assert flat.combined == pytest.approx(1 / math.sqrt(3))


def test_a_scaled_component_scales_its_standard_uncertainty() -> None:
    # Power -> energy: every component of dynamic power is multiplied by the execution time.
    for component in (
        UncertaintyComponent("s", "student_t", 0.2, dof=9),
        UncertaintyComponent("r", "rectangular", 0.3),
        UncertaintyComponent("c", "clock_offset", 0.01, per_s_positive=4.0, per_s_negative=-2.0),
    ):
        scaled = component.scaled(0.5)
        assert scaled.standard_uncertainty == pytest.approx(0.5 * component.standard_uncertainty)
        assert scaled.distribution == component.distribution
