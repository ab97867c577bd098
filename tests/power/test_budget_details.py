"""Budget details that a wrong figure would hide in (written against surviving mutants)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hilbench.power.accuracy import clip_accuracy_interval
from hilbench.power.estimators import PhaseWindow, phase_power, pool_estimates
from hilbench.power.source import SourceInfo
from hilbench.power.uncertainty import InstrumentAccuracy

EXACT = SourceInfo("exact meter", "W", 0.1)


def test_two_clips_moving_together_count_as_about_one_observation():
    ids = ["a"] * 10 + ["b"] * 10
    interval = clip_accuracy_interval([True] * 10 + [False] * 10, ids)
    assert interval.effective_samples == pytest.approx(1.0)


def test_instrument_accuracy_in_watts_from_watts_and_from_amps():
    watts = SourceInfo("w", "W", 0.1, accuracy_relative=1e-3, accuracy_absolute=0.02)
    assert InstrumentAccuracy.from_source(watts).absolute_w == 0.02
    amps = SourceInfo("a", "A", 0.1, accuracy_relative=1e-3, accuracy_absolute=0.02,
                      supply_voltage_v=12.0)
    assert InstrumentAccuracy.from_source(amps).absolute_w == pytest.approx(0.24)
    assert InstrumentAccuracy.from_source(amps, resolution=1e-6).resolution_w == pytest.approx(
        1.2e-5)


def _flat(level: float = 10.0):
    t = np.arange(0.0, 20.0, 0.1)
    return t, np.full(t.shape, level) + np.random.default_rng(0).normal(0, 0.01, t.shape)


def test_supply_voltage_error_scales_with_the_reading():
    t, w = _flat()
    est = phase_power(t, w, PhaseWindow("idle", 2.0, 18.0), EXACT,
                      supply_relative_uncertainty=0.01)
    supply = next(c for c in est.budget.components if c.name == "supply voltage")
    assert supply.scale == pytest.approx(0.01 * est.mean_w)


def test_readings_with_gaps_are_not_taken_as_gapless():
    t, w = _flat()
    est = phase_power(t, w, PhaseWindow("idle", 2.0, 18.0), EXACT, aperture_s=0.05)
    assert "gapless" not in est.method
    assert "gapless" in phase_power(t, w, PhaseWindow("idle", 2.0, 18.0), EXACT,
                                    aperture_s=0.1).method


def test_statistical_components_keep_their_degrees_of_freedom():
    t, w = _flat()
    est = phase_power(t, w, PhaseWindow("idle", 2.0, 18.0), EXACT)
    stat = next(c for c in est.budget.to_dict()["components"] if c["name"] == "statistical")
    assert stat["dof"] == est.dof


def test_a_timing_error_on_a_ramp_moves_the_mean_by_the_ramp_rate():
    t = np.arange(0.0, 30.0, 0.01)
    w = 1.7 * t  # 1.7 W per second
    est = phase_power(t, w, PhaseWindow("active", 10.0, 20.0), EXACT, timing_uncertainty_s=0.3)
    assert est.clock_per_s_positive == pytest.approx(1.7, rel=0.03)
    assert est.clock_per_s_negative == pytest.approx(-1.7, rel=0.03)
    clock = next(c for c in est.budget.components if c.name == "clock offset")
    # uniform shift within ±0.3 s times a 1.7 W/s slope
    assert clock.standard_uncertainty == pytest.approx(0.3 / math.sqrt(3) * 1.7, rel=0.03)


def test_without_shifted_readings_the_bound_is_the_nearby_range_per_second():
    # Readings inside the window, and far-off ones (100 W) the bound must not reach for.
    t = np.concatenate([np.arange(0.0, 1.0, 0.1), np.arange(10.0, 12.0, 0.1)])
    w = np.where(t < 5.0, 100.0, np.where(t < 11.0, 1.0, 3.0))
    est = phase_power(t, w, PhaseWindow("active", 10.0, 12.0), EXACT,
                      timing_uncertainty_s=5.0, min_coverage=0.9)
    assert est.clock_per_s_positive == pytest.approx(2.0 / 5.0)
    assert est.clock_per_s_negative == pytest.approx(2.0 / 5.0)


def test_pooled_windows_add_their_independent_timing_errors_in_quadrature():
    t = np.arange(0.0, 60.0, 0.01)
    w = 2.0 * t
    a = phase_power(t, w, PhaseWindow("active", 10.0, 20.0), EXACT, timing_uncertainty_s=0.2)
    b = phase_power(t, w, PhaseWindow("active", 30.0, 40.0), EXACT, timing_uncertainty_s=0.4)
    pooled = pool_estimates([a, b])
    assert pooled.timing_half_width_s == 0.4
    # equal shares: sqrt((0.5*2*0.2)^2 + (0.5*2*0.4)^2) / 0.4
    assert pooled.clock_per_s_positive == pytest.approx(math.hypot(0.2, 0.4) / 0.4, rel=1e-3)


def test_two_readings_are_enough_and_a_negative_aperture_is_refused():
    from hilbench.power.align import overlap_fractions

    t = np.array([0.0, 0.1])
    est = phase_power(t, np.array([1.0, 3.0]), PhaseWindow("idle", 0.0, 0.2), EXACT)
    assert est.n == 2 and est.mean_w == pytest.approx(2.0)
    with pytest.raises(ValueError, match="aperture must be positive"):
        overlap_fractions(t, -0.1, 0.0, 1.0)


def test_pooled_degrees_of_freedom_follow_welch_satterthwaite():
    import dataclasses

    t, w = _flat()
    one = phase_power(t, w, PhaseWindow("idle", 2.0, 9.0), EXACT)
    a = dataclasses.replace(one, mean_w=10.0, std_error_w=0.01, dof=10.0)
    b = dataclasses.replace(one, mean_w=10.0, std_error_w=0.01, dof=10.0)
    pooled = pool_estimates([a, b])  # equal means: the within-window errors are used
    assert pooled.std_error_w == pytest.approx(0.01 / math.sqrt(2))
    assert pooled.dof == pytest.approx(20.0)
