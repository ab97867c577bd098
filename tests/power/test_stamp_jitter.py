"""Stage attribution when the device's stage stamps jitter (issue 35): a synthetic single-stream
window whose truth is known exactly, the device's stamps of each sample off by a Gaussian
jitter. Readings of one stage are then read as another's (inference pulled toward the time
between samples); the budget's "stamp jitter" component, from the jitter measured in the
stamps themselves, must keep the 95 % intervals covering the truth in 90-99 % of windows at
every jitter, and leave a jitter-free window's uncertainty as it was."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from hilbench.bench.stage_attribution import attribute as attribute_cpu
from hilbench.bench.stage_attribution import pipeline_readings
from hilbench.power.stage_attribution import (
    OTHER,
    AttributionError,
    StageAttribution,
    attribute_stage_power,
)
from hilbench.power.stage_schedule import StageSchedule
from hilbench.power.uncertainty import InstrumentAccuracy

WATTS = {"preprocessing": 0.101, "inference": 0.104, OTHER: 0.080}
APERTURE = 100e-6  # gapless readings at 10 kS/s
MAX_SHIFT = 0.3e-3
GAP_SD = 5e-6  # the true between-sample gaps' own spread
JITTERS = (0.0, 20e-6, 60e-6, 150e-6)


@dataclass
class JitteredWindow:
    t: np.ndarray
    watts: np.ndarray
    stamped: StageSchedule  # what the device says: each sample's stamps off by its jitter
    true: StageSchedule
    window: tuple[float, float]


def jittered_window(seed: int, jitter_s: float, readings: int = 15_000) -> JitteredWindow:
    """Pre-processing 1.5-2 ms, inference 0.8-1 ms, 1 ms between samples (2 ms every 16th);
    each reading the exact mean power over its aperture, 0.2 mW noise, the meter's clock off
    by an unknown shift within ± 0.24 ms; each sample's stamps off by N(0, jitter_s)."""
    rng = np.random.default_rng(seed)
    n = int(readings * APERTURE / 2.6e-3) + 20
    pre = rng.uniform(1.5e-3, 2e-3, n)
    inf = rng.uniform(0.8e-3, 1e-3, n)
    gap = rng.normal(1e-3, GAP_SD, n)
    gap[15::16] += 1e-3
    start = 10.0 + np.concatenate(([0.0], np.cumsum(pre + inf + gap)[:-1]))
    seg_t = np.column_stack((start, start + pre, start + pre + inf)).ravel()
    seg_d = np.column_stack((pre, inf, gap)).ravel()
    seg_p = np.tile(list(WATTS.values()), n)
    energy = np.concatenate(([0.0], np.cumsum(seg_d * seg_p)))
    knots = np.append(seg_t, seg_t[-1] + seg_d[-1])
    window = (start[1], start[1] + (readings + 8) * APERTURE)
    shift = rng.uniform(-0.8, 0.8) * MAX_SHIFT
    t = window[0] - 1e-3 + rng.uniform(0, APERTURE) + np.arange(readings + 30) * APERTURE
    true = (np.interp(t + shift + APERTURE, knots, energy)
            - np.interp(t + shift, knots, energy)) / APERTURE
    watts = true + 2e-4 * rng.standard_normal(t.size)
    stamp = (rng.standard_normal(n) * jitter_s).clip(-0.45e-3, 0.45e-3)  # never past a gap
    durations = {"preprocessing": pre, "inference": inf}
    return JitteredWindow(t, watts, StageSchedule.consecutive(start + stamp, durations),
                          StageSchedule.consecutive(start, durations), window)


def attribute(w: JitteredWindow, schedule: StageSchedule | None = None) -> StageAttribution:
    return attribute_stage_power(w.t, w.watts, APERTURE, schedule or w.stamped, w.window,
                                 InstrumentAccuracy(), MAX_SHIFT)


def coverage(jitter_s: float, seeds: range) -> tuple[dict[str, float], int]:
    """How often each stage's 95 % interval holds the truth, over the windows attributed, and
    how many windows were refused (the blocks' alignments do not follow one line)."""
    hits, done, refused = dict.fromkeys(WATTS, 0), 0, 0
    for seed in seeds:
        try:
            found = attribute(jittered_window(seed, jitter_s))
        except AttributionError:
            refused += 1
            continue
        done += 1
        for name, e in found.estimates.items():
            hits[name] += abs(e.mean_w - WATTS[name]) <= e.uncertainty95
    return {name: h / done for name, h in hits.items()}, refused


@pytest.mark.parametrize("jitter_s", JITTERS)
def test_the_stamps_jitter_is_measured_from_each_samples_own_alignment(jitter_s):
    found = attribute(jittered_window(1, jitter_s))
    measured = {e.stamp_jitter_s for e in found.estimates.values()}
    assert len(measured) == 1
    assert measured.pop() == pytest.approx(jitter_s, rel=0.1, abs=1e-6)


def test_sixty_microseconds_of_jitter_is_corrected_and_its_error_stated():
    """The finding: software alignment read inference outside its own 95 % interval."""
    w = jittered_window(2, 60e-6)
    plain = attribute_stage_power(w.t, w.watts, APERTURE, w.stamped, w.window,
                                  InstrumentAccuracy(), MAX_SHIFT, stamp_jitter=False)
    assert abs(plain.estimates["inference"].mean_w - WATTS["inference"]) > \
        plain.estimates["inference"].uncertainty95  # what the finding saw
    found = attribute(w)
    for name, e in found.estimates.items():
        assert abs(e.mean_w - WATTS[name]) <= e.uncertainty95, name
        component = e.budget.component("stamp jitter")
        assert component.scale > 0 and "alignment" in component.note
        assert "jitter" in e.method
    # corrected, not merely widened: the error is a small part of the uncorrected one
    assert abs(found.estimates["inference"].mean_w - WATTS["inference"]) < \
        0.2 * abs(plain.estimates["inference"].mean_w - WATTS["inference"])


def test_without_jitter_the_uncertainty_stays_as_it_was():
    for w in (jittered_window(3, 0.0), jittered_window(4, 0.0)):
        plain = attribute_stage_power(w.t, w.watts, APERTURE, w.stamped, w.window,
                                      InstrumentAccuracy(), MAX_SHIFT, stamp_jitter=False)
        found = attribute(w)
        for name, e in found.estimates.items():
            assert e.uncertainty95 <= 1.10 * plain.estimates[name].uncertainty95, name
            assert e.mean_w == pytest.approx(plain.estimates[name].mean_w, abs=1e-6), name


def test_the_cpu_bench_without_jitter_measures_none():
    bench = pipeline_readings(np.random.default_rng(3), 3000)
    found = attribute_cpu(bench)
    assert all(e.stamp_jitter_s == 0.0 for e in found.estimates.values())
    assert all(e.budget.components[-1].name != "stamp jitter" for e in found.estimates.values())


@pytest.mark.slow
@pytest.mark.parametrize("jitter_s", (0.0, 60e-6))  # none, and the finding's 60 µs
def test_the_95_percent_intervals_cover_the_truth_at_every_jitter(jitter_s):
    """15 windows per jitter (the 200-seed sweep at 0/20/60/150 µs is in the commit message; 30
    windows at four jitters took minutes of the suite's CPU): 12 of 15 or more, which a true
    95 % coverage misses with probability 0.5 % (binomial)."""
    rates, refused = coverage(jitter_s, range(100, 115))
    print(f"coverage at {jitter_s * 1e6:g} µs jitter: {rates} ({refused} refused)")
    assert refused <= 3
    assert all(rate >= 0.80 for rate in rates.values()), rates
