"""`hilbench bench stage-attribution`: how long one stage-power attribution takes and how well
its errors hold, on a synthetic single-stream pipeline whose truth is known exactly.

The pipeline imitates the CPU baseline: per sample pre-processing (~209 µs) then inference
(~317 µs) with jitter, a ~40 µs gap, and a ~0.5 ms gap every 80 samples; each interval draws
its own power around 30 / 35 / 13 W. A meter reads every 200 µs over 120 µs with 0.05 W noise,
rounded to 0.01 W, its stamps off the true time by an unknown shift within ± 0.7 ms. Every
reading is the exact mean power over its aperture (cumulative energy), so the truth of each
stage is the time-weighted mean power of its intervals inside the window.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import click
import numpy as np

from hilbench.power.stage_attribution import (
    OTHER,
    StageAttribution,
    StageSchedule,
    attribute_stage_power,
)
from hilbench.power.uncertainty import InstrumentAccuracy

POWERS = {"preprocessing": 30.0, "inference": 35.0, OTHER: 13.0}
MAX_SHIFT = 0.7e-3
RESOLUTION = 0.01  # W per digit, as a DMM shows it
APERTURE = 120e-6
INTERVAL = 200e-6


@dataclass
class PipelineReadings:
    t: np.ndarray
    watts: np.ndarray
    schedule: StageSchedule
    window: tuple[float, float]
    shift: float  # true: reading k integrated [t_k + δ_k, t_k + δ_k + aperture] with
    drift: float  # δ_k = shift + drift * (t_k - t_mid), t_mid the window's middle
    t_mid: float
    truth: dict[str, float]  # time-weighted mean power of each state inside the window

    def shift_at(self, t: float) -> float:
        """The true shift of a reading stamped ``t``."""
        return self.shift + self.drift * (t - self.t_mid)


def pipeline_readings(rng: np.random.Generator, readings: int, *, vary_w: float = 0.0,
                      interval: float = INTERVAL, aperture: float = APERTURE,
                      noise: float = 0.05, shift: float | None = None, jitter: bool = True,
                      drift_ppm: float = 0.0, t0: float = 5000.0,
                      stall: tuple[int, float] | None = None) -> PipelineReadings:
    """``readings`` meter readings over a synthetic pipeline (see the module); each interval's
    power is drawn around POWERS with standard deviation ``vary_w``; the meter's timebase
    runs ``drift_ppm`` fast (its stamps fall behind the true time by that rate). ``stall``
    (sample index, seconds): that sample's pre-processing lasts that much longer, as when the
    OS takes the CPU from the device's process in the middle of it."""
    samples = int(readings * interval / 500e-6) + 50
    sd = (4e-6, 7e-6, 5e-6) if jitter else (0.0, 0.0, 0.0)
    pre = rng.normal(209e-6, sd[0], samples)
    if stall is not None:
        pre[stall[0]] += stall[1]
    inf = rng.normal(317e-6, sd[1], samples)
    gap = rng.normal(40e-6, sd[2], samples).clip(5e-6)
    gap[79::80] += 0.5e-3
    start = t0 + np.concatenate(([0.0], np.cumsum(pre + inf + gap)[:-1]))
    seg_t = np.column_stack((start, start + pre, start + pre + inf)).ravel()
    seg_d = np.column_stack((pre, inf, gap)).ravel()
    seg_p = np.column_stack([p + vary_w * rng.standard_normal(samples)
                             for p in POWERS.values()]).ravel()
    energy = np.concatenate(([0.0], np.cumsum(seg_d * seg_p)))
    knots = np.append(seg_t, seg_t[-1] + seg_d[-1])
    window = (start[1], start[1] + (readings + 8) * interval)
    if shift is None:  # the whole window's shifts inside ± MAX_SHIFT, as the contract asks
        bound = MAX_SHIFT - abs(drift_ppm) * 1e-6 * (window[1] - window[0]) / 2
        shift = rng.uniform(-bound, bound)
    t = window[0] - 2e-3 + rng.uniform(0, interval) + np.arange(readings + 30) * interval
    t_mid = (window[0] + window[1]) / 2
    at = t + shift + drift_ppm * 1e-6 * (t - t_mid)
    true = (np.interp(at + aperture, knots, energy) - np.interp(at, knots, energy)) / aperture
    watts = np.round((true + noise * rng.standard_normal(t.size)) / RESOLUTION) * RESOLUTION
    inside = (seg_t >= window[0]) & (seg_t + seg_d <= window[1])
    kind = np.tile(np.arange(3), samples)
    truth = {name: float(np.sum((seg_p * seg_d)[inside & (kind == i)])
                         / np.sum(seg_d[inside & (kind == i)]))
             for i, name in enumerate(POWERS)}
    schedule = StageSchedule.consecutive(start, {"preprocessing": pre, "inference": inf})
    return PipelineReadings(t, watts, schedule, window, shift, drift_ppm * 1e-6, t_mid, truth)


def attribute(bench: PipelineReadings, *, aperture: float = APERTURE,
              accuracy: InstrumentAccuracy | None = None,
              max_shift: float = MAX_SHIFT) -> StageAttribution:
    """The attribution a procedure would make of ``bench`` (no instrument error by default)."""
    return attribute_stage_power(
        bench.t, bench.watts, aperture, bench.schedule, bench.window,
        accuracy or InstrumentAccuracy(resolution_w=RESOLUTION), max_shift,
        resolution_w=RESOLUTION)


@click.command("stage-attribution")
@click.option("--readings", default=25_000, show_default=True,
              help="Readings in the timed window (25 000 = 5 s at 200 µs).")
@click.option("--repeat", default=5, show_default=True, help="Timed attributions.")
@click.option("--seeds", default=0, show_default=True,
              help="Also: windows of 3 000 readings over which to count how often each 95 % "
                   "interval holds the truth.")
@click.option("--vary-w", default=0.0, show_default=True,
              help="Standard deviation of each interval's power around its stage's (W).")
@click.option("--drift-ppm", default=0.0, show_default=True,
              help="How fast the meter's timebase runs (its shift grows by this rate).")
@click.option("--seed", default=1, show_default=True, help="Random seed (whole run).")
def stage_attribution(readings: int, repeat: int, seeds: int, vary_w: float, drift_ppm: float,
                      seed: int) -> None:
    """Time of one attribution of READINGS readings; optionally the coverage of its errors."""
    if readings < 3000 or repeat < 1 or seeds < 0:
        raise click.BadParameter("need --readings >= 3000, --repeat >= 1, --seeds >= 0")
    rng = np.random.default_rng(seed)
    bench = pipeline_readings(rng, readings, vary_w=vary_w, drift_ppm=drift_ppm)
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        result = attribute(bench)
        times.append(time.perf_counter() - began)
    true_shift = bench.shift_at(result.shift_reference_s)
    click.echo(f"shift: true {true_shift * 1e6:+.3f} µs, fitted {result.shift_s * 1e6:+.3f} "
               f"± {result.shift_std_error_s * 1e6:.3f} µs (SE); drift: true "
               f"{bench.drift * 1e6:+.2f} ppm, fitted {result.drift * 1e6:+.2f} ± "
               f"{result.drift_std_error * 1e6:.2f} ppm; condition {result.condition:.2f}")
    for name, e in result.estimates.items():
        click.echo(f"{name:>14}: {e.mean_w:.4f} W ± {e.uncertainty95:.4f} (95 %), truth "
                   f"{bench.truth[name]:.4f} W")
    if seeds:
        hits = dict.fromkeys(POWERS, 0)
        for _ in range(seeds):
            b = pipeline_readings(rng, 3000, vary_w=vary_w, drift_ppm=drift_ppm)
            r = attribute(b)
            for name, e in r.estimates.items():
                hits[name] += abs(e.mean_w - b.truth[name]) <= e.uncertainty95
        rates = ", ".join(f"{k} {v / seeds:.3f}" for k, v in hits.items())
        click.echo(f"coverage of the 95 % intervals over {seeds} windows: {rates}")
    click.echo(f"one attribution of {result.n_readings} readings: median "
               f"{statistics.median(times):.3f} s (min {min(times):.3f} s, {repeat} runs)")
