"""The virtual-time model behind `hilbench bench power-accuracy` (the command is
:mod:`hilbench.bench.power_accuracy_command`): how close is dynamic energy per inference to the
truth, and does its stated 95 % uncertainty cover the truth as often as it claims?

Every trial simulates, in virtual time (no sleeping), an Arduino-style measurement: the device
idles, then repeats one sample back to back (pre-processing 43 ms + inference 45 ms at the
NeuroBench Arduino Nano 33 BLE powers) while a Keysight 34465A reads the supply current on its
100 mA range at 5 V. Idle carries short housekeeping bursts so that the readings have structure.
Each trial draws its own instrument gain and offset error (uniform within the 1-year spec,
0.050 % of reading + 0.005 % of range), reading noise and quantisation, sample phase and a
timing offset between the meter and the orchestrator. The simulation knows the true energy.

Scenarios: 3 Hz with NPLC 10 (200 ms aperture at 50 Hz) over 60 s windows (the published
Arduino protocol), and 1 kHz gapless digitising over 2 s windows. Noise figures are
representative for the range and aperture, not data-sheet values.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from hilbench.power.align import (
    BoundaryPolicy,
    IntervalEstimate,
    estimate_interval,
)
from hilbench.power.estimators import PhaseWindow
from hilbench.power.metrics import analyze
from hilbench.power.source import SourceInfo
from hilbench.power.timing import drift_residual_s
from hilbench.power.uncertainty import Quantity
from hilbench.sim.power_model import (
    ARDUINO_NANO_33_BLE,
    DevicePowerModel,
    StateTimeline,
    quantise,
    simulate_readings,
)

SUPPLY_V = 5.0
ACCURACY_RELATIVE = 0.00050  # 34465A DCI 100 mA range, 1 year: 0.050 % of reading
ACCURACY_ABSOLUTE_A = 5e-6  # + 0.005 % of the 100 mA range
PREPROCESS_S = 0.043
INFERENCE_S = 0.045
HOUSEKEEPING_PERIOD_S = 0.100
HOUSEKEEPING_S = 0.003

DEVICE = DevicePowerModel(
    name="arduino-nano-33-ble+housekeeping",
    state_watts={**ARDUINO_NANO_33_BLE.state_watts, "housekeeping": 0.0890},
    supply_v=SUPPLY_V,
)


@dataclass(frozen=True)
class Scenario:
    name: str
    interval_s: float
    aperture_s: float
    idle_s: float
    active_s: float
    pad_s: float  # idle before and after the measured windows
    noise_a: float  # rms reading noise
    resolution_a: float
    timing_half_width_s: float  # meter-to-orchestrator offset is uniform within ± this
    drift_ppm: float = 0.0  # the meter's timebase runs this much slow (+) or fast (-)


SCENARIOS = (
    Scenario("3 Hz NPLC10 60 s", 1 / 3, 0.200, 60.0, 60.0, 5.0, 0.1e-6, 0.1e-6, 0.010),
    Scenario("1 kHz gapless 2 s", 1e-3, 1e-3, 2.0, 2.0, 0.5, 2e-6, 1e-6, 1e-3),
    Scenario("1 kHz 200 ppm 20 s", 1e-3, 1e-3, 20.0, 20.0, 0.5, 2e-6, 1e-6, 1e-3, 200.0),
)


@dataclass(frozen=True)
class TrialResult:
    relative_error: float  # of dynamic energy per inference
    covered: bool  # |error| <= stated 95 % expanded uncertainty
    relative_uncertainty95: float
    value: float = 0.0  # the measured energy per inference, J
    truth: float = 0.0  # the simulation's true energy per inference, J
    metric: dict | None = None  # as the store keeps it: value, uncertainty, meta.budget


def _timeline(sc: Scenario, rng: np.random.Generator) -> tuple[StateTimeline, int, float]:
    """Idle with housekeeping bursts, then back-to-back samples, then idle again."""
    timeline = StateTimeline(initial_state="idle", t0=-sc.pad_s)

    def idle_until(t_from: float, t_to: float) -> None:
        t = t_from + rng.uniform(0.0, HOUSEKEEPING_PERIOD_S)
        while t + HOUSEKEEPING_S < t_to:
            timeline.set(t, "housekeeping")
            timeline.set(t + HOUSEKEEPING_S, "idle")
            t += HOUSEKEEPING_PERIOD_S

    idle_until(-sc.pad_s, sc.idle_s)
    period = PREPROCESS_S + INFERENCE_S
    count = int(sc.active_s // period)
    t = sc.idle_s
    for _ in range(count):
        timeline.set(t, "preprocessing")
        timeline.set(t + PREPROCESS_S, "inference")
        t += period
    timeline.set(t, "idle")
    idle_until(t, t + sc.pad_s)
    return timeline, count, t


def run_trial(
    sc: Scenario,
    rng: np.random.Generator,
    boundary: BoundaryPolicy = "exclude",
    instrument_error: tuple[float, float] | None = None,
    correct_drift: bool = True,
) -> TrialResult:
    """One simulated measurement. ``instrument_error`` (gain, offset in A) fixes the meter's
    calibration error, as for several runs with one instrument; else it is drawn. A scenario
    with a drifting timebase has its interval re-estimated from the reading count and the end
    time, as the Keysight path does, unless ``correct_drift`` is false (to show what the
    nominal interval alone would do)."""
    timeline, count, active_end = _timeline(sc, rng)
    gain, offset = instrument_error if instrument_error is not None else draw_instrument(rng)
    delta = rng.uniform(-sc.timing_half_width_s, sc.timing_half_width_s)

    first = -sc.pad_s + rng.uniform(0.0, sc.interval_s)
    true_dt = sc.interval_s * (1.0 + sc.drift_ppm * 1e-6)
    n = int((active_end + sc.pad_s - sc.aperture_s - first) / true_dt)
    t_true = first + np.arange(n) * true_dt
    true_w = simulate_readings(DEVICE, timeline, t_true, sc.aperture_s, 0.0, 0.0, rng)
    amps = true_w / SUPPLY_V * (1.0 + gain) + offset + rng.normal(0.0, sc.noise_a, n)
    watts = quantise(amps, sc.resolution_a) * SUPPLY_V
    windows = [
        PhaseWindow("idle", 0.0, sc.idle_s),
        PhaseWindow("active", sc.idle_s, active_end, inferences=count),
    ]
    t0_reported = first - delta  # the orchestrator's idea of the first reading is off by delta
    t_nominal = t0_reported + np.arange(n) * sc.interval_s  # as the driver stamps them
    estimate = None
    if sc.drift_ppm and correct_drift:
        # Seen at the end: n readings done, the next one not yet (ABOR lands in between).
        t_end = t_true[-1] + sc.aperture_s + rng.uniform(0.0, true_dt)
        estimate = estimate_interval(n, t0_reported, t_end, sc.interval_s, sc.aperture_s)
    info = SourceInfo(
        name="Keysight 34465A (simulated)",
        unit="A",
        time_resolution_s=sc.interval_s,
        accuracy_relative=ACCURACY_RELATIVE,
        accuracy_absolute=ACCURACY_ABSOLUTE_A,
        supply_voltage_v=SUPPLY_V,
    )
    t = t_nominal if estimate is None else estimate.restamp(t_nominal)
    energy = trial_energy(t, watts, windows, info, estimate=estimate,
                          timing_s=sc.timing_half_width_s, aperture_s=sc.aperture_s,
                          resolution=sc.resolution_a, boundary=boundary)
    true_dynamic = timeline.mean_power(DEVICE, sc.idle_s, active_end) - timeline.mean_power(
        DEVICE, 0.0, sc.idle_s
    )
    return score(energy, true_dynamic * (active_end - sc.idle_s) / count)


def trial_energy(
    t: np.ndarray,
    watts: np.ndarray,
    windows: list[PhaseWindow],
    info: SourceInfo,
    *,
    estimate: IntervalEstimate | None,
    timing_s: float,
    aperture_s: float | None,
    resolution: float,
    boundary: BoundaryPolicy,
) -> Quantity:
    """The per-trial analysis that the virtual-time and the real-meter paths share: readings
    stamped as a campaign holds them (restamped with ``estimate`` when the meter gave one),
    the timing uncertainty widened by what the estimate leaves open at the last window's
    end, then the campaign's estimators (phase power, dynamic power, energy per inference)."""
    timing = timing_s + drift_residual_s(estimate, windows[-1].end)
    result = analyze(t, watts, windows, info, boundary=boundary, aperture_s=aperture_s,
                     timing_uncertainty_s=timing, resolution=resolution)
    energy = result.energy_per_inference
    if energy is None:
        raise ValueError("no inferences in the active window: energy per inference undefined")
    return energy


def score(energy: Quantity, true_energy: float) -> TrialResult:
    """How far a trial's energy per inference is from the truth, and whether its 95 %
    interval covers it."""
    error = energy.value - true_energy
    return TrialResult(
        relative_error=error / true_energy,
        covered=abs(error) <= energy.uncertainty95,
        relative_uncertainty95=energy.uncertainty95 / abs(true_energy),
        value=energy.value,
        truth=true_energy,
        metric={"value": energy.value, "unit": "J", "uncertainty": energy.uncertainty95,
                "meta": {"budget": energy.budget.to_dict()}},
    )


def draw_instrument(rng: np.random.Generator) -> tuple[float, float]:
    """A meter's calibration error: gain and offset (A), uniform within the 1-year spec."""
    return (rng.uniform(-ACCURACY_RELATIVE, ACCURACY_RELATIVE),
            rng.uniform(-ACCURACY_ABSOLUTE_A, ACCURACY_ABSOLUTE_A))


@dataclass(frozen=True)
class ScenarioSummary:
    name: str
    trials: int
    median_error: float
    p95_error: float
    coverage: float
    median_uncertainty95: float
    seconds: float

    def row(self) -> str:
        low, high = coverage_interval(self.coverage, self.trials)
        verdict = ("yes" if 0.90 <= self.coverage <= 0.99
                   else "consistent" if low <= 0.99 and high >= 0.90 else "NO")
        return (f"{self.name:<27} {self.trials:>6} {self.median_error:>10.4%} "
                f"{self.p95_error:>8.4%} {self.median_uncertainty95:>10.4%} "
                f"{self.coverage:>8.1%} [{low:>5.1%}, {high:>6.1%}] {verdict:>10} "
                f"{self.seconds:>6.1f}s")


HEADER = (f"{'case':<27} {'trials':>6} {'median err':>11} {'p95 err':>9} {'median U95':>11} "
          f"{'coverage':>9} {'(95 % CI)':>16} {'in 90-99%':>10} {'time':>7}")


def coverage_interval(coverage: float, trials: int) -> tuple[float, float]:
    """Wilson 95 % interval of a coverage fraction seen in ``trials`` trials: with few trials
    a perfect or a 90 % score says little, and the bench prints how little."""
    z = 1.959963984540054
    centre = (coverage + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z * math.sqrt(coverage * (1 - coverage) / trials + z * z / (4 * trials * trials))
    half /= 1 + z * z / trials
    return max(0.0, centre - half), min(1.0, centre + half)


def summarise(name: str, results: list[TrialResult], seconds: float) -> ScenarioSummary:
    """Error and coverage over trials (each a measurement against its own truth)."""
    errors = np.abs([r.relative_error for r in results])
    return ScenarioSummary(
        name=name,
        trials=len(results),
        median_error=float(np.median(errors)),
        p95_error=float(np.quantile(errors, 0.95)),
        coverage=float(np.mean([r.covered for r in results])),
        median_uncertainty95=float(np.median([r.relative_uncertainty95 for r in results])),
        seconds=seconds,
    )


def run_scenario(
    sc: Scenario, trials: int, rng: np.random.Generator, boundary: BoundaryPolicy = "exclude"
) -> ScenarioSummary:
    started = time.perf_counter()
    results = [run_trial(sc, rng, boundary) for _ in range(trials)]
    return summarise(sc.name, results, time.perf_counter() - started)


MULTIRUN_RUNS = 5


def mean_of_runs(runs: list[TrialResult]) -> TrialResult:
    """The mean of runs measured with ONE meter (its calibration error common to all), with
    the uncertainty the tables give such a mean, scored against the mean truth."""
    from hilbench.power.mean_uncertainty import mean_uncertainty

    mean = float(np.mean([r.value for r in runs]))
    truth = float(np.mean([r.truth for r in runs]))
    u = mean_uncertainty([r.metric for r in runs if r.metric is not None])
    assert u is not None
    return TrialResult(relative_error=(mean - truth) / truth, covered=abs(mean - truth) <= u,
                       relative_uncertainty95=u / abs(truth), value=mean, truth=truth)


def run_multirun(
    sc: Scenario, campaigns: int, rng: np.random.Generator, boundary: BoundaryPolicy = "exclude"
) -> ScenarioSummary:
    """The mean of 5 runs measured with ONE meter, ``campaigns`` times."""
    started = time.perf_counter()
    means = []
    for _ in range(campaigns):
        instrument = draw_instrument(rng)
        means.append(mean_of_runs(
            [run_trial(sc, rng, boundary, instrument) for _ in range(MULTIRUN_RUNS)]))
    return summarise(f"{MULTIRUN_RUNS} runs, one meter", means, time.perf_counter() - started)
