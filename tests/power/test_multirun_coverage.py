"""The mean of several runs with ONE instrument: its calibration error is common to all runs,
and the stated 95 % interval of the mean must still cover the truth 90–99 % of the time."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hilbench.bench.power_accuracy import SCENARIOS, draw_instrument, run_trial
from hilbench.power.mean_uncertainty import mean_uncertainty

pytestmark = pytest.mark.slow

RUNS = 5


def _campaigns(trials: int, seed: int):
    sc = next(s for s in SCENARIOS if s.name.startswith("1 kHz"))
    rng = np.random.default_rng(seed)
    for _ in range(trials):
        instrument = draw_instrument(rng)  # one meter for all runs of this campaign
        yield [run_trial(sc, rng, instrument_error=instrument) for _ in range(RUNS)]


def test_the_mean_over_runs_keeps_the_common_instrument_error():
    covered = naive_covered = 0
    trials = 150
    for runs in _campaigns(trials, seed=7):
        mean = float(np.mean([r.value for r in runs]))
        truth = float(np.mean([r.truth for r in runs]))
        u = mean_uncertainty([r.metric for r in runs])
        naive = math.sqrt(sum(r.metric["uncertainty"] ** 2 for r in runs)) / RUNS
        covered += abs(mean - truth) <= u
        naive_covered += abs(mean - truth) <= naive
    assert 0.90 <= covered / trials <= 0.99, covered / trials
    # Treating the instrument's error as independent per run understates the uncertainty.
    assert naive_covered < covered
