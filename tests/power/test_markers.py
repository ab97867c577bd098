"""Marker-cut windows against a known truth: a digital line sampled on the instrument's clock
with a real input delay, edges found by sample index, and every cut edge within one sample
period plus the stated latency of the true edge (and not much better: the bound is tight)."""

from __future__ import annotations

import numpy as np
import pytest

from hilbench.power.markers import (
    MarkedWindow,
    MarkerEdges,
    cut_windows,
    edge_uncertainty_s,
    edges_from_levels,
    info_edge_uncertainty_s,
)
from hilbench.power.source import SourceInfo

IDLE_W, ACTIVE_W = 0.0794, 0.1007


def _instrument(rng: np.random.Generator, period: float, delay: float, t_on: float,
                t_off: float, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sample times, power (mean over each sample's period: an integrating instrument) and
    the marker line as read at each sample (``delay`` late), with a random clock phase."""
    t = rng.uniform(0, period) + np.arange(n) * period

    def energy_to(x: np.ndarray) -> np.ndarray:
        active = np.clip(x, t_on, t_off) - t_on
        return IDLE_W * x + (ACTIVE_W - IDLE_W) * active

    watts = (energy_to(t + period) - energy_to(t)) / period
    line = ((t - delay >= t_on) & (t - delay < t_off)).astype(np.uint8)
    return t, watts, line


def _trial(rng: np.random.Generator, period: float, stated: float, actual: float,
           duration: float) -> tuple[float, float, float, float, float]:
    t_on = rng.uniform(20, 30) * period
    t_off = t_on + duration
    n = int((t_off + 40 * period) / period)
    t, watts, line = _instrument(rng, period, actual, t_on, t_off, n)
    (window,) = cut_windows(edges_from_levels(line, "gpi0"), sample_period_s=period,
                            marker_latency_s=stated, n_samples=n)
    true_energy = IDLE_W * 0 + ACTIVE_W * duration
    error = window.energy_j(watts) - true_energy
    return (t[window.start] - t_on, t[window.stop] - t_off, window.duration_s - duration,
            error, window.edge_energy_uncertainty_j(watts))


@pytest.mark.parametrize("period, stated", [(1e-6, 0.5e-6), (1e-5, 0.0), (1e-3, 2e-3)])
def test_each_cut_edge_lies_within_one_sample_plus_the_stated_latency(period, stated):
    rng = np.random.default_rng(7)
    bound = edge_uncertainty_s(period, stated)
    starts, stops, durations, errors, budgets = np.array(
        [_trial(rng, period, stated, rng.uniform(0, stated), 1e3 * period) for _ in range(2000)]
    ).T
    for late in (starts, stops):
        assert late.min() >= 0 and late.max() < bound
        assert late.max() > 0.9 * bound  # tight: the bound is reached, not a loose ceiling
    assert np.abs(durations).max() < bound
    assert np.all(np.abs(errors) <= budgets * (1 + 1e-9))


def test_a_latency_larger_than_stated_breaks_the_bound():
    """The check can fail: an instrument that is later than it says is caught."""
    rng = np.random.default_rng(3)
    period, stated = 1e-6, 0.5e-6
    late = [_trial(rng, period, stated, 3 * stated, 1e-3)[0] for _ in range(200)]
    assert max(late) >= edge_uncertainty_s(period, stated)


def test_level_pairing_skips_a_window_still_open_and_one_opened_before_the_stream():
    edges = MarkerEdges(np.array([3, 10, 20, 30, 45]), np.array([0, 1, 0, 1, 0]), "gpi0")
    windows = cut_windows(edges, sample_period_s=1e-3, marker_latency_s=0.0, n_samples=40)
    assert [(w.start, w.stop) for w in windows] == [(10, 20)]  # 30..45 ends past the stream
    assert windows[0].duration_s == pytest.approx(10e-3)


def test_alternate_pairing_takes_events_two_by_two():
    """MLPerf Tiny's LPM01A events: one pulse at the start, one at the end."""
    edges = MarkerEdges(np.array([5, 15, 30, 42, 50]), np.ones(5), "d7")
    windows = cut_windows(edges, sample_period_s=1e-5, marker_latency_s=1e-5,
                          pairing="alternate")
    assert [(w.start, w.stop) for w in windows] == [(5, 15), (30, 42)]
    assert windows[0].edge_uncertainty_s == pytest.approx(2e-5)


def test_edges_found_across_batches_with_the_previous_level():
    first = edges_from_levels(np.array([0, 0, 1, 1]), "gpi0")
    second = edges_from_levels(np.array([1, 0, 0]), "gpi0", first_index=4, previous=1)
    joined = MarkerEdges.concat([first, second], "gpi0")
    assert joined.index.tolist() == [2, 5] and joined.level.tolist() == [1, 0]
    assert len(edges_from_levels(np.array([1, 1]), "gpi0")) == 0  # the first sample is no edge


def test_bad_edges_are_refused_by_name():
    with pytest.raises(ValueError, match=r"gpi1.*not in order"):
        MarkerEdges(np.array([5, 3]), np.array([1, 0]), "gpi1")
    with pytest.raises(ValueError, match="levels must be 0 or 1"):
        MarkerEdges(np.array([1]), np.array([2]), "gpi1")
    with pytest.raises(ValueError, match="latency"):
        edge_uncertainty_s(1e-6, -1.0)


def test_a_source_that_states_no_latency_has_no_edge_uncertainty():
    info = SourceInfo("meter", "W", 1e-3, sample_period_s=1e-3)
    with pytest.raises(ValueError, match="meter does not state marker_latency_s"):
        info_edge_uncertainty_s(info)
    stated = SourceInfo("js", "W", 1e-6, sample_period_s=1e-6, marker_latency_s=5e-7)
    assert info_edge_uncertainty_s(stated) == pytest.approx(1.5e-6)


def test_window_refuses_samples_it_does_not_have():
    window = MarkedWindow(2, 9, "gpi0", 1e-3, 1e-3)
    with pytest.raises(ValueError, match="past the 5 samples"):
        window.energy_j(np.ones(5))
