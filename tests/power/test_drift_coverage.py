"""A meter whose timebase drifts: the interval is re-estimated from its own reading count and
end time, the residual goes into the budget, and the 95 % interval still covers the truth."""

from __future__ import annotations

import numpy as np
import pytest

from hilbench.bench.power_accuracy import SCENARIOS, run_trial
from hilbench.power.align import IntervalEstimate, estimate_interval

DRIFT = next(s for s in SCENARIOS if s.drift_ppm)


def _coverage(trials: int, seed: int, correct: bool) -> float:
    rng = np.random.default_rng(seed)
    results = [run_trial(DRIFT, rng, correct_drift=correct) for _ in range(trials)]
    return float(np.mean([r.covered for r in results]))


@pytest.mark.slow
def test_drift_corrected_interval_covers_the_truth():
    assert DRIFT.drift_ppm == 200.0
    coverage = _coverage(200, seed=11, correct=True)
    assert 0.90 <= coverage <= 0.99, coverage


@pytest.mark.slow
def test_nominal_interval_under_drift_does_not_cover():
    # Same meter, stamps at the nominal interval: 200 ppm × 41 s ≈ 8 ms walk is outside the budget.
    assert _coverage(60, seed=11, correct=False) < 0.75


def test_interval_estimate_brackets_the_true_interval():
    dt_true = 1e-3 * (1 + 200e-6)
    n = 20_000
    t_end = 5.0 + (n - 1) * dt_true + 1e-3 + 0.3 * dt_true  # n done, the next not yet
    est = estimate_interval(n, 5.0, t_end, 1e-3, 1e-3)
    assert abs(est.dt_s - dt_true) <= est.half_width_s
    assert est.drift_ppm == pytest.approx(200.0, abs=30.0)
    # The stamp of the last reading is known to about half an interval, not to 200 ppm × 20 s.
    assert est.stamp_half_width_s(5.0 + n * 1e-3, 5.0) < 0.6e-3


def test_the_stored_interval_record_gives_the_same_restamping_back():
    """A report rebuilds the estimate from the ``instrument_interval`` event a campaign stored."""
    n = 20_000
    est = estimate_interval(n, 5.0, 5.0 + (n - 1) * 1.0002e-3 + 1e-3, 1e-3, 1e-3)
    back = IntervalEstimate.from_dict(est.to_dict())
    assert back == est
    raw = 5.0 + np.arange(n) * 1e-3
    assert np.array_equal(back.restamp(raw), est.restamp(raw))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((1, 0.0, 1.0, 1e-3, 1e-3), "at least two readings"),
        ((10, 0.0, 1.0, 0.0, 1e-3), "must be positive"),
        ((10, 1.0, 1.0, 1e-3, 1e-3), "not after start"),
    ],
)
def test_interval_estimate_refuses_bad_input(args, message):
    with pytest.raises(ValueError, match=message):
        estimate_interval(*args)


def test_a_short_acquisition_keeps_the_nominal_interval_within_the_timebase_spec():
    # 50 readings know the interval to ~1 %, far worse than a 100 ppm timebase: the spec
    # bound wins and stamps stay put; a meter outside its spec is taken at its count.
    t_end = 0.0 + 49 * 1e-2 + 1e-3 + 0.9e-2  # 50 done, the 51st not yet
    est = estimate_interval(50, 0.0, t_end, 1e-2, 1e-3, timebase_ppm=100.0)
    assert abs(est.drift_ppm) <= 100.0 and est.half_width_s <= 1e-2 * 100e-6
    drifting = 0.0 + 49 * 1.02e-2 + 1e-3 + 0.5e-2
    est = estimate_interval(50, 0.0, drifting, 1e-2, 1e-3, timebase_ppm=100.0)
    assert est.drift_ppm > 10_000
