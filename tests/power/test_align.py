"""Sample indices onto the orchestrator timeline, and which readings belong to a window."""

from __future__ import annotations

import numpy as np
import pytest

from hilbench.power.align import (
    overlap_fractions,
    sample_times,
    select_window,
    typical_interval,
)


def test_times_follow_start_and_nominal_interval_without_drift() -> None:
    tl = sample_times(4, t0=100.0, dt=0.5)
    assert tl.t.tolist() == [100.0, 100.5, 101.0, 101.5]
    assert tl.drift == 0.0


def test_measured_end_time_sets_interval_and_reports_drift() -> None:
    # the meter's timebase runs 100 ppm slow: 1001 readings nominally 1 ms apart took 1.0001 s
    tl = sample_times(1001, t0=5.0, dt=0.001, t_last=6.0001)
    assert tl.t[-1] == pytest.approx(6.0001, abs=1e-12)
    assert tl.drift_ppm == pytest.approx(100.0, rel=1e-6)
    assert tl.t[500] == pytest.approx(5.0 + 500 * 0.0010001, abs=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 3, "t0": 0.0, "dt": 0.0}, "interval must be positive"),
        ({"n": 3, "t0": 1.0, "dt": 0.1, "t_last": 0.5}, "not after the first"),
        ({"n": -1, "t0": 0.0, "dt": 0.1}, "must not be negative"),
    ],
)
def test_bad_timing_inputs_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        sample_times(**kwargs)


def test_typical_interval_ignores_one_late_reading() -> None:
    t = np.array([0.0, 1.0, 2.0, 3.0, 4.5, 5.5, 6.5])
    assert typical_interval(t) == 1.0


def test_overlap_fraction_of_each_aperture() -> None:
    t = np.array([1.0, 2.0, 3.0, 4.0])
    frac = overlap_fractions(t, aperture_s=1.0, start=2.25, end=4.5)
    assert frac.tolist() == [0.0, 0.75, 1.0, 0.5]


T = np.arange(10, dtype=float)  # readings at 0..9 s, each integrating for 1 s


def test_exclude_keeps_only_readings_fully_inside_and_counts_the_others() -> None:
    sel = select_window(T, 2.5, 6.5, aperture_s=1.0, boundary="exclude")
    assert sel.indices.tolist() == [3, 4, 5]
    assert sel.weights.tolist() == [1.0, 1.0, 1.0]
    assert sel.straddling == 2
    assert sel.policy == "exclude"


def test_weight_includes_straddling_readings_by_their_overlap() -> None:
    sel = select_window(T, 2.5, 6.5, aperture_s=1.0, boundary="weight")
    assert sel.indices.tolist() == [2, 3, 4, 5, 6]
    assert sel.weights.tolist() == [0.5, 1.0, 1.0, 1.0, 0.5]
    assert sel.weight_sum == 4.0  # the window's 4 s
    assert sel.straddling == 2


def test_window_on_reading_boundaries_has_no_straddlers() -> None:
    for policy in ("weight", "exclude"):
        sel = select_window(T, 2.0, 6.0, aperture_s=1.0, boundary=policy)
        assert sel.indices.tolist() == [2, 3, 4, 5]
        assert sel.straddling == 0


def test_short_aperture_leaves_gaps_that_are_not_boundaries() -> None:
    # 0.2 s apertures every second: a window edge in a gap cuts no reading
    sel = select_window(T, 2.5, 6.5, aperture_s=0.2, boundary="exclude")
    assert sel.indices.tolist() == [3, 4, 5, 6]
    assert sel.straddling == 0


def test_unknown_policy_and_empty_window_are_refused() -> None:
    with pytest.raises(ValueError, match="'weight' or 'exclude'"):
        select_window(T, 1.0, 2.0, aperture_s=1.0, boundary="nearest")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="after its start"):
        select_window(T, 2.0, 2.0, aperture_s=1.0)


def test_readings_fully_inside_a_window_count_at_large_clock_values():
    """Monotonic clocks read thousands of seconds: rounding must not push readings out."""
    import numpy as np

    from hilbench.power.align import select_window

    t0 = 1753.1156657125
    t = t0 - 0.00026207 + np.arange(103) * 0.001
    sel = select_window(t, t0, t0 + 0.1013, aperture_s=0.0004, boundary="exclude")
    assert sel.n == 101  # the reading before the start and the last one straddling are out


def test_window_coverage_counts_what_the_readings_cover():
    from hilbench.power.align import window_coverage

    t = np.arange(0.3, 60.0, 0.5)  # 2 Hz, first reading 0.3 s late
    assert window_coverage(t, 0.0, 60.0) == pytest.approx(59.7 / 60)
    assert window_coverage(t, 10.0, 20.0) == pytest.approx(1.0)
    gap = np.concatenate([np.arange(0, 10, 0.5), np.arange(15, 20, 0.5)])  # readings lost
    # the reading before the gap covers 1.5 intervals (jitter allowance), then nothing
    assert window_coverage(gap, 0.0, 20.0) == pytest.approx(15.25 / 20)
    assert window_coverage(t, 100.0, 110.0) == 0.0


def test_readings_that_tile_time_cover_a_late_poll_but_not_a_late_start():
    from hilbench.power.align import window_coverage

    # An energy counter polled every 0.1 s whose poller was held up four times for 0.25 s:
    # each late reading averages over its whole longer span, so nothing went unread.
    t = np.cumsum(np.r_[0.0, np.full(99, 0.1)])
    for i in (10, 30, 50, 70):
        t[i:] += 0.25
    assert window_coverage(t, 0.0, t[-1]) < 0.95  # as a meter's gaps: readings lost
    assert window_coverage(t, 0.0, t[-1], tiled=True) == pytest.approx(1.0)
    # a log that starts late still leaves its start unread
    assert window_coverage(t, -1.0, t[-1], tiled=True) == pytest.approx(t[-1] / (t[-1] + 1.0))
