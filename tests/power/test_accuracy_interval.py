"""The clip-aware accuracy interval covers the true accuracy as often as it claims."""

from __future__ import annotations

import numpy as np
import pytest

from hilbench.power.accuracy import clip_accuracy_interval


def _trial(rng: np.random.Generator, clips: int, true_p: float, spread: float):
    """Clips whose slices share a clip-level difficulty (correlated within a clip)."""
    logit = np.log(true_p / (1 - true_p)) + spread * rng.standard_normal(clips)
    p_clip = 1 / (1 + np.exp(-logit))
    correct = rng.random((clips, 10)) < p_clip[:, None]
    ids = np.repeat([f"c{i}" for i in range(clips)], 10)
    return correct.ravel().tolist(), ids.tolist()


def _true_accuracy(true_p: float, spread: float) -> float:
    z = np.random.default_rng(99).standard_normal(2_000_000)
    return float(np.mean(1 / (1 + np.exp(-(np.log(true_p / (1 - true_p)) + spread * z)))))


@pytest.mark.parametrize(("true_p", "spread"), [(0.8, 1.5), (0.6, 0.0), (0.95, 1.0)])
def test_the_95_interval_covers_the_truth_in_90_to_99_percent_of_trials(true_p, spread):
    rng = np.random.default_rng(0)
    truth = _true_accuracy(true_p, spread)
    covered = 0
    trials = 400
    for _ in range(trials):
        correct, ids = _trial(rng, 60, true_p, spread)
        interval = clip_accuracy_interval(correct, ids)
        covered += interval.low <= truth <= interval.high
    assert 0.90 <= covered / trials <= 0.99


def test_correlated_slices_widen_the_interval_and_perfect_scores_keep_a_width():
    ids = [f"c{i // 10}" for i in range(100)]
    # Whole clips right or wrong: ten clips' worth of information, not a hundred samples'.
    clustered = [i // 10 < 8 for i in range(100)]
    scattered = [i % 10 < 8 for i in range(100)]
    wide = clip_accuracy_interval(clustered, ids)
    narrow = clip_accuracy_interval(scattered, ids)
    assert wide.accuracy == narrow.accuracy == 0.8
    assert wide.high - wide.low > 2 * (narrow.high - narrow.low)
    perfect = clip_accuracy_interval([True] * 100, ids)
    assert perfect.high == pytest.approx(1.0) and perfect.low < 0.8  # ten clips prove less
    assert perfect.uncertainty95 > 0
