"""The simulated Xylo Audio 2: the network in ``XyloSim`` (bit-accurate), device time from
Rockpool's cycle model at the set core clock, power from a labelled model.

What is simulated, and so said in every result: the chip's computation is exact (XyloSim is
the bit-accurate model of the SNN core), but its *time* is an estimate (cycles per step from
the activity of this sample / core clock) and its power is the published baseline's figures
(:mod:`hilbench.sim.xylo_power`), not a measurement. The simulated device holds each state for
the estimated device time on the wall clock, so a simulated meter reading its states sees the
timeline a real chip would produce.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from hilbench.clock import now
from hilbench_drivers.xylo import cycles, vendor
from hilbench_drivers.xylo.network import XyloNetwork

SIMULATION = ("Xylo Audio 2 simulated: XyloSim (bit-accurate SNN core), device time from "
              "Rockpool's cycle model, power from the published baseline figures, AFE by "
              "AFESim on the host")


@dataclass
class Inference:
    """One sample through the SNN core."""

    counts: np.ndarray  # output spikes per output channel
    device_s: float  # on the chip (simulated: cycle-model estimate)
    host_s: float  # host time spent (simulation, or USB round trip)
    t_start: float
    t_end: float
    extra: dict[str, Any]


class SimulatedXylo:
    """XyloSim behind the same calls as :class:`~hilbench_drivers.xylo.hardware.HardwareXylo`."""

    simulated = True
    simulation = SIMULATION
    onboard_power = False  # window replies carry measured per-rail power
    timing = ("pre-processing not measured (analog front end simulated on the host by Rockpool "
              "AFESim before the sample is in device memory); inference in XyloSim "
              "(bit-accurate), its time estimated by Rockpool's cycle model at the core clock "
              "(simulated, not measured)")
    # A sample's time in a request's window outside its (simulated) inference: the host's
    # AFESim run when it is loaded (~3 s uncached on a 2-core VM, cached after) and XyloSim
    # evolving the network in host time.
    sample_untimed: ClassVar[dict[str, Any]] = {
        "max_s": 60.0, "reason": "the host simulates the analog front end (Rockpool AFESim, ~3 s "
        "a sample uncached on a 2-core VM) and XyloSim evolves the network in host time; the "
        "inference time is the cycle model's"}

    def __init__(self, core_clock_hz: float = 50e6) -> None:
        self.core_clock_hz = float(core_clock_hz)
        self._x = vendor.rockpool_xylo_a2()
        self._cycles_model = cycles.load_cycles_model()
        self._sim: Any = None
        self.network: XyloNetwork | None = None

    def configure(self, network: XyloNetwork) -> dict[str, Any]:
        self._sim = self._x.XyloSim.from_specification(**network.specification(),
                                                       output_mode="Spike")
        self.network = network
        return {"backend": "xylosim", "core_clock_hz": self.core_clock_hz}

    def infer(self, raster: np.ndarray, on_start: Any = None) -> Inference:
        """Run one raster; hold the wall clock until the estimated device time has passed."""
        assert self._sim is not None and self.network is not None
        t_start = now()
        if on_start:
            on_start(t_start)
        self._sim.reset_state()
        spikes, _, record = self._sim.evolve(np.asarray(raster, dtype=int), record=True)
        spikes = np.asarray(spikes)
        host_s = now() - t_start
        per_step, _ = self._cycles_model(cycles.config_view(self.network), raster,
                                         np.asarray(record["Spikes"]), spikes)
        device_s = float(per_step) * raster.shape[0] / self.core_clock_hz
        _wait_until(t_start + device_s)
        t_end = now()
        return Inference(spikes.sum(axis=0), device_s, host_s, t_start, t_end,
                         {"cycles_per_step": float(per_step), "steps": int(raster.shape[0]),
                          "time_source": "cycle model estimate (simulated)"})

    def idle(self, duration_s: float, stop: Any) -> dict[str, Any]:
        """The network configured and ready, nothing to do."""
        deadline = now() + duration_s
        while not stop.is_set() and now() < deadline:
            time.sleep(min(0.05, max(0.0, deadline - now())))
        return {"measured": False, "source": "simulation",
                "reason": "no on-board power monitor in simulation; a simulated meter with the "
                          "xylo-audio-2 power model measures this device"}

    def power_window_start(self) -> None:
        """No on-board monitor to start in simulation."""

    def power_window_end(self) -> dict[str, Any]:
        return self.power()

    def power(self) -> dict[str, Any]:
        return {"measured": False, "source": "simulation",
                "reason": "no on-board power monitor in simulation"}

    def describe(self) -> dict[str, Any]:
        return {"backend": "simulation", "simulator": "xylosim via rockpool XyloSim",
                "core_clock_hz": self.core_clock_hz, "cycle_model": cycles.describe()}

    def close(self) -> None:
        self._sim = None


def _wait_until(t: float) -> None:
    while (remaining := t - now()) > 0:
        time.sleep(min(remaining, 0.01) if remaining > 0.002 else 0)
