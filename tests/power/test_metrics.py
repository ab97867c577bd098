"""Idle / active / dynamic power, energy per inference, and whether stated uncertainties hold."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from hilbench.bench.power_accuracy import SCENARIOS, run_trial
from hilbench.power.estimators import PhaseWindow, phase_power
from hilbench.power.metrics import analyze, energy_per_inference
from hilbench.power.source import SourceInfo

IDLE_W, ACTIVE_W = 0.07940, 0.10072  # NeuroBench Arduino Nano 33 BLE baseline
EXACT = SourceInfo("exact meter", "W", 1 / 3)


def two_phase_trace(
    idle_w: float, active_w: float, *, rate_hz: float = 3.0, seconds: float = 60.0
) -> tuple[np.ndarray, np.ndarray]:
    """Readings (aperture = interval) of `seconds` idle then `seconds` active."""
    t = np.arange(0.0, 2 * seconds, 1.0 / rate_hz)
    return t, np.where(t < seconds - 1e-9, idle_w, active_w)


def test_arduino_reference_figures_reproduce_exactly() -> None:
    t, w = two_phase_trace(IDLE_W, ACTIVE_W)
    windows = [
        PhaseWindow("idle", 0.0, 60.0),
        PhaseWindow("active", 60.0, 120.0, inferences=1395, mean_execution_s=0.043),
    ]
    result = analyze(t, w, windows, EXACT, timing_uncertainty_s=0.0)
    figures = result.to_json_dict()
    assert figures["idle_w"] == pytest.approx(0.07940, rel=1e-12)
    assert figures["active_w"] == pytest.approx(0.10072, rel=1e-12)
    assert figures["dynamic_w"] == pytest.approx(0.02132, rel=1e-12)
    assert figures["energy_per_inference_j"] == pytest.approx(0.00091676, rel=1e-12)
    assert round(figures["energy_per_inference_j"] * 1e3, 3) == 0.917  # the published 0.917 mJ
    # exact readings from an exact instrument, perfectly aligned: nothing invented
    assert figures["dynamic_w_uncertainty"] == pytest.approx(0.0, abs=1e-15)
    # the same from the published inputs directly: 21.32 mW x 43 ms
    per_inference = energy_per_inference(result.dynamic, 0.043)
    assert per_inference.value == pytest.approx(0.02132 * 0.043, rel=1e-12)


def test_json_figures_have_exactly_the_documented_keys_and_serialise() -> None:
    t, w = two_phase_trace(IDLE_W, ACTIVE_W)
    windows = [PhaseWindow("idle", 0, 60), PhaseWindow("active", 60, 120, inferences=1000)]
    result = analyze(t, w, windows, EXACT)
    assert set(result.to_json_dict()) == {
        "idle_coverage",
        "active_coverage",
        "idle_w",
        "active_w",
        "dynamic_w",
        "energy_per_inference_j",
        "idle_w_uncertainty",
        "active_w_uncertainty",
        "dynamic_w_uncertainty",
        "energy_per_inference_j_uncertainty",
    }
    stored = json.loads(json.dumps(result.to_dict()))
    assert stored["boundary"] == "exclude"
    names = [c["name"] for c in stored["dynamic"]["budget"]["components"]]
    assert "instrument gain" in names
    assert "clock offset (active)" in names and "clock offset (idle)" in names


def test_energy_from_duration_over_count_when_no_device_timer() -> None:
    t, w = two_phase_trace(IDLE_W, ACTIVE_W)
    windows = [PhaseWindow("idle", 0, 60), PhaseWindow("active", 60, 120, inferences=1000)]
    result = analyze(t, w, windows, EXACT)
    assert result.execution is not None and result.execution.mean_s == pytest.approx(0.060)
    assert result.energy_per_inference is not None
    assert result.energy_per_inference.value == pytest.approx(0.02132 * 0.060, rel=1e-12)


def test_without_inferences_energy_is_absent_and_said_so() -> None:
    t, w = two_phase_trace(IDLE_W, ACTIVE_W)
    result = analyze(t, w, [PhaseWindow("idle", 0, 60), PhaseWindow("active", 60, 120)], EXACT)
    assert result.to_json_dict()["energy_per_inference_j"] is None
    assert any("no inferences" in note for note in result.notes)


def test_gain_scales_the_difference_and_offset_cancels() -> None:
    t, w = two_phase_trace(IDLE_W, ACTIVE_W)
    meter = SourceInfo(
        "dmm", "A", 1 / 3, accuracy_relative=0.001, accuracy_absolute=2e-4, supply_voltage_v=5.0
    )
    windows = [PhaseWindow("idle", 0, 60), PhaseWindow("active", 60, 120)]
    result = analyze(t, w, windows, meter, timing_uncertainty_s=0.0)
    idle_offset = result.idle.budget.component("instrument offset").standard_uncertainty
    assert idle_offset == pytest.approx(2e-4 * 5.0 / math.sqrt(3))  # amps spec -> watts
    dynamic = result.dynamic.budget
    assert dynamic.component("instrument offset").standard_uncertainty == 0.0
    gain = dynamic.component("instrument gain").standard_uncertainty
    assert gain == pytest.approx(0.001 * 0.02132 / math.sqrt(3))
    # so the difference is known better than either phase's absolute level
    assert result.dynamic.uncertainty95 < result.idle.uncertainty95


def simulated_coverage(noise, trials: int, rng: np.random.Generator, **options) -> float:
    """Fraction of trials whose stated 95 % interval for active power covers the truth."""
    covered = 0
    for _ in range(trials):
        t = np.arange(0.0, 30.0, 0.05)
        truth = 0.1 + rng.normal(0, 0.002)
        w = truth + noise(t.size)
        est = phase_power(
            t, w, PhaseWindow("active", 0.0, 30.0), EXACT, timing_uncertainty_s=0.0, **options
        )
        covered += abs(est.mean_w - truth) <= est.uncertainty95
    return covered / trials


def test_stated_uncertainty_covers_truth_for_independent_noise() -> None:
    rng = np.random.default_rng(11)
    coverage = simulated_coverage(lambda n: rng.normal(0, 1e-3, n), 300, rng)
    assert 0.90 <= coverage <= 0.99


@pytest.mark.slow
def test_stated_uncertainty_stays_honest_for_correlated_readings() -> None:
    rng = np.random.default_rng(12)

    def ar1(n: int, rho: float = 0.8) -> np.ndarray:
        e = rng.normal(0, 1e-3, n)
        out = np.empty(n)
        out[0] = e[0] / math.sqrt(1 - rho**2)
        for i in range(1, n):
            out[i] = rho * out[i - 1] + e[i]
        return out

    coverage = simulated_coverage(ar1, 300, rng)
    assert 0.88 <= coverage <= 0.995
    # treating the same readings as independent would claim too much (truly 3x too little)
    t = np.arange(0.0, 30.0, 0.05)
    x = ar1(t.size)
    naive = np.std(x, ddof=1) / math.sqrt(x.size)
    est = phase_power(t, x, PhaseWindow("active", 0, 30), EXACT, timing_uncertainty_s=0.0)
    assert est.std_error_w > 1.5 * naive


def test_gapless_readings_do_not_count_device_structure_as_error() -> None:
    # 1 kHz readings tiling time; device alternates 43 ms / 45 ms between two powers
    rng = np.random.default_rng(5)
    t = np.arange(0.0, 2.0, 0.001)
    structure = np.where((t % 0.088) < 0.043, 0.10072, 0.10015)
    w = structure + rng.normal(0, 1e-5, t.size)
    est = phase_power(
        t, w, PhaseWindow("active", 0, 2.0), EXACT, aperture_s=0.001, timing_uncertainty_s=0.0
    )
    assert est.std_error_w < 3 * 1e-5 / math.sqrt(t.size)
    assert abs(est.mean_w - structure.mean()) <= est.uncertainty95


def test_exclude_policy_drops_boundary_reading_and_weight_policy_bounds_its_mixing() -> None:
    # 1 s readings; the active phase starts at 60.5 s, in the middle of reading 60
    t = np.arange(0.0, 120.0, 1.0)
    w = np.where(t + 1 <= 60.5, IDLE_W, np.where(t >= 60.5, ACTIVE_W, (IDLE_W + ACTIVE_W) / 2))
    window = PhaseWindow("active", 60.5, 120.0)
    excluded = phase_power(t, w, window, EXACT, timing_uncertainty_s=0.0, boundary="exclude")
    assert excluded.mean_w == pytest.approx(ACTIVE_W, rel=1e-12)
    assert excluded.straddling == 1 and excluded.boundary == "exclude"
    weighted = phase_power(t, w, window, EXACT, timing_uncertainty_s=0.0, boundary="weight")
    assert weighted.boundary == "weight" and weighted.straddling == 1
    assert weighted.mean_w < ACTIVE_W  # some idle power leaked in ...
    assert ACTIVE_W - weighted.mean_w <= weighted.mixing_half_width_w * (1 + 1e-9)  # ... bounded
    assert ACTIVE_W - weighted.mean_w <= weighted.uncertainty95


def test_clock_offset_uncertainty_covers_a_misaligned_trace() -> None:
    # gapless 10 Hz readings, so the statistical error is small and timing has to carry it
    t, w = two_phase_trace(IDLE_W, ACTIVE_W, rate_hz=10.0)
    w = w + np.random.default_rng(8).normal(0, 1e-6, t.size)
    shifted = t - 0.4  # the meter's timestamps run 0.4 s early
    windows = [PhaseWindow("idle", 0.0, 60.0), PhaseWindow("active", 60.0, 119.0)]
    options = {"aperture_s": 0.1}
    aligned = analyze(shifted, w, windows, EXACT, timing_uncertainty_s=0.0, **options)
    honest = analyze(shifted, w, windows, EXACT, timing_uncertainty_s=0.5, **options)
    error = abs(honest.dynamic.value - 0.02132)
    assert error > aligned.dynamic.uncertainty95  # claiming perfect timing would be wrong
    assert error <= honest.dynamic.uncertainty95


def test_repetitions_are_pooled_and_their_scatter_counts() -> None:
    t = np.arange(0.0, 40.0, 0.1)
    rng = np.random.default_rng(3)
    levels = np.select([t < 10, t < 20, t < 30], [IDLE_W, 0.1000, IDLE_W], 0.1020)
    w = levels + rng.normal(0, 1e-6, t.size)
    windows = [
        PhaseWindow("idle", 0, 10),
        PhaseWindow("active", 10, 20),
        PhaseWindow("idle", 20, 30),
        PhaseWindow("active", 30, 40),
    ]
    result = analyze(t, w, windows, EXACT, timing_uncertainty_s=0.0)
    assert result.active.windows == 2
    assert result.active.mean_w == pytest.approx(0.1010, rel=1e-4)
    assert "between" in result.active.method
    assert result.active.std_error_w == pytest.approx(0.0010, rel=0.01)
    assert result.active.uncertainty95 > 0.0010  # two repetitions: a wide interval


def test_missing_phase_and_empty_window_are_explained() -> None:
    t, w = two_phase_trace(IDLE_W, ACTIVE_W)
    with pytest.raises(ValueError, match="no idle window"):
        analyze(t, w, [PhaseWindow("active", 60, 120)], EXACT)
    with pytest.raises(ValueError, match=r"active window 200..210 s: the readings .* cover 0.0 %"):
        analyze(t, w, [PhaseWindow("idle", 0, 60), PhaseWindow("active", 200, 210)], EXACT)
    with pytest.raises(ValueError, match="not after its start"):
        PhaseWindow("idle", 5, 1)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_simulated_arduino_bench_is_accurate_and_honest(scenario) -> None:
    rng = np.random.default_rng(2024)
    results = [run_trial(scenario, rng) for _ in range(120)]
    errors = np.abs([r.relative_error for r in results])
    coverage = np.mean([r.covered for r in results])
    assert np.median(errors) < 0.005
    assert 0.85 <= coverage <= 1.0  # generous: 120 trials estimate 95 % to about ±4 %


def test_idle_and_active_timing_errors_are_independent() -> None:
    """Both windows sit at a power step: shared timing would cancel their clock errors in
    active − idle; separate phases' errors add."""
    from hilbench.power.estimators import phase_power
    from hilbench.power.metrics import dynamic_power

    t = np.arange(0.0, 40.0, 0.1)
    watts = np.select([t < 10, t < 20, t < 30], [1.0, 2.0, 1.0], 3.0)
    idle = phase_power(t, watts, PhaseWindow("idle", 20.0, 30.0), EXACT, timing_uncertainty_s=0.5)
    active = phase_power(t, watts, PhaseWindow("active", 30.0, 40.0 - 0.1), EXACT,
                         timing_uncertainty_s=0.5)
    dyn = dynamic_power(idle, active)
    clock = [c for c in dyn.budget.components if c.name.startswith("clock offset")]
    assert [c.name for c in clock] == ["clock offset (active)", "clock offset (idle)"]
    assert all(c.standard_uncertainty > 0 for c in clock)
    combined = math.hypot(*(c.standard_uncertainty for c in clock))
    assert combined > max(c.standard_uncertainty for c in clock)


def test_a_shifted_window_without_readings_never_counts_as_no_timing_error() -> None:
    from hilbench.power.estimators import phase_power

    # Readings only inside the window and a timing error longer than the window's margins:
    # the shifted windows hold nothing, yet the power inside changes.
    t = np.arange(10.0, 12.0, 0.1)
    watts = np.where(t < 11.0, 1.0, 3.0)
    est = phase_power(t, watts, PhaseWindow("active", 10.0, 12.0), EXACT,
                      timing_uncertainty_s=5.0, min_coverage=0.9)
    clock = next(c for c in est.budget.components if c.name == "clock offset")
    assert clock.standard_uncertainty > 0
