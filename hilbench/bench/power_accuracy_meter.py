"""`hilbench bench power-accuracy` through the parts a campaign uses: the simulated 34465A as a
process of its own (hilbench's spawn helper) over real TCP SCPI, the Keysight driver found
through its entry point, the campaign's phase acquisition (draining while the window runs,
restamping with the meter's estimated interval), and the per-trial analysis the virtual-time
sweep shares (:func:`hilbench.bench.power_accuracy.trial_energy`).

Each trial: the meter acquires; the simulated Arduino idles, then repeats one sample back to
back (pre-processing 43 ms + inference 45 ms), then idles; its state changes are sent to the
meter stamped with the bench clock, so the windows are exact and the meter's ``SIM:TRUTH?``
gives the true energy. What is not known exactly is what a campaign does not know either: when
the meter started (``INIT``), how fast its timebase really runs, its calibration error (drawn
per meter process within the 1-year spec), reading noise and quantisation.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hilbench.bench.power_accuracy import (
    INFERENCE_S,
    MULTIRUN_RUNS,
    PREPROCESS_S,
    ScenarioSummary,
    TrialResult,
    mean_of_runs,
    score,
    summarise,
    trial_energy,
)
from hilbench.clock import bench_now, now
from hilbench.orchestrator.instruments import (
    Instrument,
    InstrumentSpec,
    PhaseAcquisition,
    open_instrument,
)
from hilbench.orchestrator.spawn import SpawnedProcess, spawn_announcing
from hilbench.power.align import BoundaryPolicy
from hilbench.power.estimators import PhaseWindow
from hilbench.power.timing import aperture_s, timing_uncertainty_s, to_watts
from hilbench.sim.device_link import SimulatedDeviceLink
from hilbench.sim.instrument_facts import meter_facts  # how the meter quantises
from hilbench.sim.power_model import ARDUINO_NANO_33_BLE

POLL_S = 0.05  # how often the acquisition is drained while a window runs, as a phase does

# 50 Hz mains, NPLC 0.06: 1.2 ms apertures every 1.21 ms (the 34465A's fastest at that NPLC).
GAPLESS_800HZ = {
    "function": "current", "range": 0.1, "nplc": 0.06, "line_frequency_hz": 50.0,
    "autozero": False, "sample_interval_s": 0.00121, "supply_voltage_v": 5.0,
    "max_window_s": 30.0,
}  # fmt: skip
NPLC1_10HZ = {**GAPLESS_800HZ, "nplc": 1.0, "sample_interval_s": 0.1}


@dataclass(frozen=True)
class MeterCase:
    name: str
    settings: dict[str, Any] = field(repr=False)
    idle_s: float
    active_s: float
    pad_s: float  # idle before the idle window and after the active one
    noise_w: float  # rms reading noise
    drift_ppm: float = 0.0


METER_CASES = (
    MeterCase("826 Hz gapless 1 s", GAPLESS_800HZ, 1.0, 1.0, 0.2, 1e-5),
    MeterCase("826 Hz 2000 ppm 2 s", GAPLESS_800HZ, 2.0, 2.0, 0.2, 1e-5, 2000.0),
    MeterCase("10 Hz NPLC 1, 2 s", NPLC1_10HZ, 2.0, 2.0, 0.3, 5e-7),
)


def spawn_meter(case: MeterCase, rng: np.random.Generator) -> SpawnedProcess:
    """A simulated meter process with a calibration error drawn within the driver's spec."""
    settings = case.settings
    gain = rng.uniform(-1, 1) * 0.0005  # the driver's default accuracy_reading
    offset = rng.uniform(-1, 1) * 0.0001 * settings["range"]  # its accuracy_range × range
    args = ["sim-meter", "--model", ARDUINO_NANO_33_BLE.name, "--noise", repr(case.noise_w),
            "--drift-ppm", repr(case.drift_ppm), "--gain-error", repr(gain),
            "--offset-error", repr(offset), "--seed", str(int(rng.integers(2**31)))]
    return spawn_announcing("simulated meter (bench)", args)


def open_meter(meter: SpawnedProcess, case: MeterCase) -> Instrument:
    host, _, port = meter.address.rpartition(":")
    spec = InstrumentSpec(id="dmm", driver="keysight34465a", measures="bench",
                          resource=f"TCPIP::{host}::{port}::SOCKET", visa_library="@py",
                          settings=dict(case.settings))
    return open_instrument(spec)


def true_mean_power(address: str, start: float, end: float) -> float:
    """The meter's ``SIM:TRUTH?``: true mean power over a window on the bench clock."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5.0) as sock:
        sock.sendall(f"SIM:TRUTH? {start!r},{end!r}\n".encode())
        reply = sock.makefile("r").readline()
    return float(reply)


def measure(
    inst: Instrument, address: str, case: MeterCase, boundary: BoundaryPolicy
) -> TrialResult:
    """One trial as a campaign phase runs it, scored against the meter's truth."""
    acq = PhaseAcquisition(inst, lambda doc: None, "bench", "trial")
    link = SimulatedDeviceLink(address)
    try:
        acq.start()
        shift = now() - bench_now()  # orchestrator clock minus the bench clock (0 here)
        idle_start = bench_now() + case.pad_s
        active_start = idle_start + case.idle_s
        period = PREPROCESS_S + INFERENCE_S
        count = int(case.active_s // period)
        t = active_start
        for _ in range(count):
            link.state("preprocessing", t)
            link.state("inference", t + PREPROCESS_S)
            t += period
        active_end = t
        link.state("idle", active_end)
        stop_at = active_end + case.pad_s
        while (remaining := stop_at - bench_now()) > 0:
            acq.poll()
            time.sleep(min(POLL_S, remaining))
        batch = acq.stop()
    finally:
        link.close()
    windows = [
        PhaseWindow("idle", idle_start + shift, active_start + shift),
        PhaseWindow("active", active_start + shift, active_end + shift, inferences=count),
    ]
    info = inst.info
    nplc = float(case.settings["nplc"])
    resolution = meter_facts().nplc_resolution_ppm[nplc] * 1e-6 * float(case.settings["range"])
    # The windows are the orchestrator's own (no agent clock): only the meter's start and its
    # interval estimate are uncertain, as for a campaign's idle window.
    energy = trial_energy(batch.t, to_watts(info, batch.values), windows, info,
                          estimate=acq.interval_estimate,
                          timing_s=timing_uncertainty_s(inst, 0.0, acq.t0_uncertainty_s),
                          aperture_s=aperture_s(inst), resolution=resolution,
                          boundary=boundary)
    idle = true_mean_power(address, idle_start, active_start)
    active = true_mean_power(address, active_start, active_end)
    return score(energy, (active - idle) * (active_end - active_start) / count)


def meter_trials(
    case: MeterCase, runs: int, rng: np.random.Generator, boundary: BoundaryPolicy
) -> list[TrialResult]:
    """``runs`` trials with ONE meter process (one calibration error)."""
    meter = spawn_meter(case, rng)
    try:
        inst = open_meter(meter, case)
        try:
            return [measure(inst, meter.address, case, boundary) for _ in range(runs)]
        finally:
            inst.source.close()
    finally:
        meter.stop()


def run_meter_case(
    case: MeterCase, trials: int, rng: np.random.Generator, boundary: BoundaryPolicy = "exclude"
) -> ScenarioSummary:
    """``trials`` independent measurements, each with a meter of its own."""
    started = time.perf_counter()
    results = [meter_trials(case, 1, rng, boundary)[0] for _ in range(trials)]
    return summarise(case.name, results, time.perf_counter() - started)


def run_meter_multirun(
    case: MeterCase, campaigns: int, rng: np.random.Generator, boundary: BoundaryPolicy = "exclude"
) -> ScenarioSummary:
    """The mean of 5 runs with one meter, ``campaigns`` times (a meter each)."""
    started = time.perf_counter()
    means = [mean_of_runs(meter_trials(case, MULTIRUN_RUNS, rng, boundary))
             for _ in range(campaigns)]
    return summarise(f"{MULTIRUN_RUNS} runs, one meter (826 Hz)", means,
                     time.perf_counter() - started)
