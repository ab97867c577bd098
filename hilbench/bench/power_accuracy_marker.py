"""Marker-cut against software-aligned windows for `hilbench bench power-accuracy --inference-ms
… --rate … [--marker] --json`: dynamic energy per inference of a short inference, measured by a
fast instrument, against the simulation's truth, in virtual time.

Each trial simulates a device that marks two regions on a digital line (high while it idles
for the idle window, high while it runs back-to-back inferences), and a
JS220-class instrument that samples the supply power gaplessly at ``rate`` and the line in the
same stream. The active region holds 10 inferences, more where that would be fewer than
``MIN_WINDOW_SAMPLES`` samples (at low rates). What the trial draws, as a real
bench would have it:

- the device's inference time within ± 2 % of the nominal one;
- the instrument's calibration error (gain and offset) uniform within its stated accuracy, its
  reading noise (white, rms growing with the square root of the rate) and quantisation;
- its timebase drift uniform within the stated bound, and its sample phase;
- with ``marker``: the true input latency uniform between 0 and the stated latency; windows are
  then cut by the line's edges in the stream (:mod:`hilbench.power.markers`), each edge
  uncertain by one sample period plus the stated latency;
- without: a true clock offset between the instrument and the orchestrator uniform within the
  stated mapping uncertainty; windows are the orchestrator's, on its own clock.

Both paths end in the estimators a campaign uses (:func:`hilbench.power.metrics.analyze`): idle
and active power, dynamic power, energy per inference and its 95 % budget. The truth is exact:
the device's power is piecewise constant, so every sample's true mean is known in closed form
and no trial holds more than its own samples (memory stays flat at any rate).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass

import numpy as np

from hilbench.bench.power_accuracy import TrialResult, coverage_interval, score, trial_energy
from hilbench.power.estimators import PhaseWindow
from hilbench.power.markers import cut_windows, edges_from_levels
from hilbench.power.source import SourceInfo
from hilbench.sim.power_model import ARDUINO_NANO_33_BLE, quantise

IDLE_W = ARDUINO_NANO_33_BLE.state_watts["idle"]
INFERENCE_W = ARDUINO_NANO_33_BLE.state_watts["inference"]
MIN_WINDOW_SAMPLES = 50  # a window holds at least this many samples (more inferences if need be)


@dataclass(frozen=True)
class Simulation:
    """The simulated bench: every figure the instrument states, and the draws around them.
    Representative of a JS220-class instrument on a 5 V supply, not data-sheet values."""

    accuracy_relative: float = 0.005  # ± of reading (stated, and the gain error's bound)
    accuracy_absolute_w: float = 5e-6  # ± offset, W (1 µA at 5 V)
    noise_w_at_1msps: float = 50e-6  # rms reading noise at 1 MS/s; ∝ sqrt(rate)
    resolution_w: float = 1e-7  # one reading's least significant step, W
    drift_ppm: float = 20.0  # the timebase runs within ± this (stated; the true drift is drawn)
    marker_latency_s: float = 2e-6  # stated input latency; the true one is drawn in [0, this]
    offset_uncertainty_s: float = 100e-6  # software alignment: ± stated clock mapping error
    inferences: int = 10  # back-to-back inferences in the active window (more at low rates)
    # A trial's true inference time is the nominal one within ± this fraction (a device's
    # inferences vary from run to run): the window's length then falls anywhere on the
    # instrument's sample grid, as a real one does, not on a whole number of periods.
    inference_jitter: float = 0.02
    # The true mapping error reaches this times the stated bound: 1 is an honest statement;
    # below-1 statements (> 1 here) show that the coverage catches an understated uncertainty.
    offset_true_scale: float = 1.0

    def noise_w(self, rate: float) -> float:
        return self.noise_w_at_1msps * math.sqrt(rate / 1e6)


@dataclass(frozen=True)
class Layout:
    """Where the regions lie on the device's (true) clock, in seconds."""

    idle_start: float
    idle_end: float
    active_start: float
    active_end: float
    span: float  # the instrument records from 0 to here
    inferences: int


def layout(inference_s: float, period_s: float, sim: Simulation,
           true_inference_s: float | None = None) -> Layout:
    """Idle and active regions of equal length, ``sim.inferences`` inferences long or at least
    MIN_WINDOW_SAMPLES samples, with idle gaps around them long enough for an edge's
    uncertainty. The count follows the nominal inference time, the length the true one."""
    count = max(sim.inferences, math.ceil(MIN_WINDOW_SAMPLES * period_s / inference_s))
    length = count * (inference_s if true_inference_s is None else true_inference_s)
    gap = max(1e-3, 5 * period_s + sim.marker_latency_s, 3 * sim.offset_uncertainty_s)
    idle_start = gap
    active_start = idle_start + length + gap
    return Layout(idle_start, idle_start + length, active_start, active_start + length,
                  active_start + length + gap, count)


def true_mean_power(lay: Layout, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The device's true mean power over each ``[start, end)``: idle except while it infers."""
    inside = (np.clip(end, lay.active_start, lay.active_end)
              - np.clip(start, lay.active_start, lay.active_end))
    return IDLE_W + (INFERENCE_W - IDLE_W) * inside / (end - start)


def marker_level(lay: Layout, t: np.ndarray) -> np.ndarray:
    """The marker line at true times ``t``: high over the idle and the active region."""
    edges = np.array([lay.idle_start, lay.idle_end, lay.active_start, lay.active_end])
    return (np.searchsorted(edges, t, side="right") % 2).astype(np.uint8)


def instrument_info(period_s: float, sim: Simulation) -> SourceInfo:
    return SourceInfo(
        name="JS220-class instrument (simulated)", unit="W", time_resolution_s=period_s,
        accuracy_relative=sim.accuracy_relative, accuracy_absolute=sim.accuracy_absolute_w,
        simulated=True, simulation="power and a marker line sampled in one stream",
        sample_period_s=period_s, marker_latency_s=sim.marker_latency_s,
        marker_channels=("gpi0",), resolution=sim.resolution_w,
    )


def run_trial(inference_s: float, rate: float, marker: bool, sim: Simulation,
              rng: np.random.Generator) -> TrialResult:
    """One simulated measurement of dynamic energy per inference, scored against the truth."""
    period = 1.0 / rate
    true_inference_s = inference_s * (1.0 + rng.uniform(-1.0, 1.0) * sim.inference_jitter)
    lay = layout(inference_s, period, sim, true_inference_s)
    drift = rng.uniform(-1.0, 1.0) * sim.drift_ppm * 1e-6
    true_period = period * (1.0 + drift)
    first = rng.uniform(0.0, true_period)  # sample phase
    k = np.arange(int((lay.span - first) / true_period))
    starts = first + k * true_period  # sample k averages [starts[k], starts[k] + true_period)
    gain = rng.uniform(-1.0, 1.0) * sim.accuracy_relative
    offset = rng.uniform(-1.0, 1.0) * sim.accuracy_absolute_w
    watts = true_mean_power(lay, starts, starts + true_period) * (1.0 + gain) + offset
    watts = quantise(watts + rng.normal(0.0, sim.noise_w(rate), k.shape[0]), sim.resolution_w)
    info = instrument_info(period, sim)
    if marker:
        latency = rng.uniform(0.0, sim.marker_latency_s)
        levels = marker_level(lay, starts - latency)
        t, windows, timing = marked_windows(levels, lay.inferences, info, sim)
    else:
        mapping_error = rng.uniform(-1.0, 1.0) * sim.offset_uncertainty_s * sim.offset_true_scale
        t = first + mapping_error + k * period  # the orchestrator's stamps, nominal interval
        windows = [PhaseWindow("idle", lay.idle_start, lay.idle_end),
                   PhaseWindow("active", lay.active_start, lay.active_end,
                               inferences=lay.inferences)]
        # Stated: the mapping's bound plus what the timebase may walk by the last window's end.
        timing = sim.offset_uncertainty_s + sim.drift_ppm * 1e-6 * lay.active_end
    energy = trial_energy(t, watts, windows, info, estimate=None, timing_s=timing,
                          aperture_s=period, resolution=sim.resolution_w, boundary="exclude")
    return score(energy, (INFERENCE_W - IDLE_W) * true_inference_s)


def marked_windows(levels: np.ndarray, inferences: int, info: SourceInfo, sim: Simulation
                   ) -> tuple[np.ndarray, list[PhaseWindow], float]:
    """Idle and active windows cut by the marker's edges, on the instrument's own sample
    clock (sample k averages periods k..k+1), with the timing half-width they leave open.

    A cut lies after its true edge by the input latency (at most the stated ``L``) plus a
    sample phase (under one period). So the samples from a window's first cut up to the one
    before its last begin after the region's true start and end at most ``L`` after its true
    end: the power means use exactly those samples (the window ends one period before the
    second cut), ± ``L``. Both edges are late by the same latency and by their own sample
    phase: the duration (cut to cut) is off by the difference of two phases (standard
    deviation period / sqrt(6)) and by the timebase's drift; that is the execution time's
    standard error. (The cutter's bound of one period plus ``L`` per edge holds; this uses
    how the two edges' errors are distributed.)"""
    period = info.sample_period_s
    assert period is not None
    latency = info.marker_latency_s or 0.0
    cut = cut_windows(edges_from_levels(levels, "gpi0"), sample_period_s=period,
                      marker_latency_s=latency, n_samples=len(levels))
    if len(cut) != 2:
        raise ValueError(f"expected an idle and an active marked window, the stream holds "
                         f"{len(cut)}")
    idle, active = cut
    execution = active.duration_s / inferences
    execution_se = math.hypot(period / math.sqrt(6.0),
                              active.duration_s * sim.drift_ppm * 1e-6 / math.sqrt(3.0))
    windows = [
        PhaseWindow("idle", idle.start * period, (idle.stop - 1) * period),
        PhaseWindow("active", active.start * period, (active.stop - 1) * period,
                    inferences=inferences, mean_execution_s=execution,
                    mean_execution_std_error_s=execution_se / inferences),
    ]
    return np.arange(len(levels)) * period, windows, latency


@dataclass(frozen=True)
class AccuracySummary:
    """What ``--json`` prints."""

    median_abs_error: float
    p95_abs_error: float
    median_relative_uncertainty95: float
    coverage: float
    coverage_ci95: tuple[float, float]
    trials: int
    rate: float
    inference_ms: float
    marker: bool
    seed: int
    seconds: float
    simulation: dict

    def to_json_dict(self) -> dict:
        out = asdict(self)
        out["coverage_ci95"] = list(self.coverage_ci95)
        out["simulated"] = True
        out["alignment"] = ("marker edges in the instrument's stream" if self.marker
                            else "software clock-offset mapping")
        return out


def run(inference_ms: float, rate: float, marker: bool, trials: int, seed: int,
        sim: Simulation | None = None) -> AccuracySummary:
    """``trials`` independent measurements (each its own instrument draw), generated one at a
    time so memory stays flat at any rate."""
    if not (inference_ms > 0 and rate > 0 and trials > 0):
        raise ValueError("inference length, rate and trials must be positive")
    sim = sim or Simulation()
    rng = np.random.default_rng(seed)
    started = time.perf_counter()
    results = [run_trial(inference_ms * 1e-3, rate, marker, sim, rng) for _ in range(trials)]
    errors = np.abs([r.relative_error for r in results])
    coverage = float(np.mean([r.covered for r in results]))
    lay = layout(inference_ms * 1e-3, 1.0 / rate, sim)
    return AccuracySummary(
        median_abs_error=float(np.median(errors)),
        p95_abs_error=float(np.quantile(errors, 0.95)),
        median_relative_uncertainty95=float(np.median(
            [r.relative_uncertainty95 for r in results])),
        coverage=coverage,
        coverage_ci95=coverage_interval(coverage, trials),
        trials=trials, rate=rate, inference_ms=inference_ms, marker=marker, seed=seed,
        seconds=time.perf_counter() - started,
        simulation={**asdict(sim), "noise_w": sim.noise_w(rate), "idle_w": IDLE_W,
                    "inference_w": INFERENCE_W, "inferences_per_window": lay.inferences,
                    "window_s": lay.idle_end - lay.idle_start},
    )
