"""Power models of simulated devices and the readings a meter would take of them.

The simulated device's true power is piecewise constant per state (idle, preprocessing,
inference, solving, …), so the true energy of any window is known exactly; instrument noise and
quantisation are added only to the *readings*. This is what makes accuracy testable.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class DevicePowerModel:
    """True power (watts) per device state, and the supply voltage the device runs from."""

    name: str
    state_watts: dict[str, float]
    supply_v: float = 5.0

    def watts(self, state: str) -> float:
        try:
            return self.state_watts[state]
        except KeyError:
            known = ", ".join(sorted(self.state_watts))
            raise KeyError(
                f"power model {self.name!r} has no state {state!r} (known: {known})"
            ) from None


# Total system power of the NeuroBench Arduino Nano 33 BLE baseline
# (DESIGN.md, reference baselines).
ARDUINO_NANO_33_BLE = DevicePowerModel(
    name="arduino-nano-33-ble",
    state_watts={"idle": 0.07940, "preprocessing": 0.10072, "inference": 0.10015},
    supply_v=5.0,
)

# A plausible desktop CPU package for the simulated bench in the QUBO demo.
SIMULATED_CPU = DevicePowerModel(
    name="simulated-cpu",
    state_watts={"idle": 12.0, "solving": 38.0, "preprocessing": 30.0, "inference": 35.0},
    supply_v=12.0,
)


@dataclass
class StateTimeline:
    """The device's state over time: a sorted list of (t, state) changes, seconds on one clock.

    Queries cost what the window they ask about holds, not the whole history: a long campaign
    adds changes for hours, and each reading must cost the same at its end as at its start.
    The energy up to each change is kept as a running sum per power model, extended as
    changes arrive; a query looks up its window's changes by bisection.
    """

    initial_state: str = "idle"
    t0: float = 0.0
    _times: list[float] = field(default_factory=list)
    _states: list[str] = field(default_factory=list)
    # id(model) -> (model, energy from t0 to each change): the running sums, per power model
    _sums: dict[int, tuple[DevicePowerModel, list[float]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._times = [self.t0]
        self._states = [self.initial_state]

    def set(self, t: float, state: str) -> None:
        """Record that the device entered ``state`` at ``t`` (changes must come in time order)."""
        if t < self._times[-1]:
            raise ValueError(
                f"state change at {t} is earlier than the last one at {self._times[-1]}"
            )
        self._times.append(t)
        self._states.append(state)

    def state_at(self, t: float) -> str:
        i = bisect.bisect_right(self._times, t) - 1
        return self._states[max(i, 0)]

    def durations(self, t_start: float, t_end: float) -> dict[str, float]:
        """Seconds spent in each state within [t_start, t_end]."""
        out: dict[str, float] = {}
        times, n = self._times, len(self._times)
        first = max(bisect.bisect_right(times, t_start) - 1, 0)
        last = bisect.bisect_right(times, t_end)
        for i in range(first, last):
            t_a = times[i]
            t_b = times[i + 1] if i + 1 < n else float("inf")
            lo, hi = max(t_a, t_start), min(t_b, t_end)
            if hi > lo:
                state = self._states[i]
                out[state] = out.get(state, 0.0) + (hi - lo)
        return out

    def energy(self, model: DevicePowerModel, t_start: float, t_end: float) -> float:
        """True energy (joules) the device used within [t_start, t_end]."""
        return sum(model.watts(s) * d for s, d in self.durations(t_start, t_end).items())

    def mean_power(self, model: DevicePowerModel, t_start: float, t_end: float) -> float:
        return self.energy(model, t_start, t_end) / (t_end - t_start)

    def cumulative_energy(self, model: DevicePowerModel, t: np.ndarray) -> np.ndarray:
        """True energy (joules) from the timeline's start up to each time in ``t``, vectorised.

        A meter may ask for hundreds of thousands of readings at once; differences of this
        function give every aperture's energy without a Python loop per reading. Time before
        the timeline's start counts as no energy, as in :meth:`durations`. The cost is that of
        the changes between the earliest and the latest time asked about, whatever the
        length of the history before them.
        """
        times = self._times
        t = np.maximum(np.asarray(t, dtype=np.float64), times[0])
        if t.size == 0:
            return np.zeros_like(t)
        first = max(bisect.bisect_right(times, float(t.min())) - 1, 0)
        last = bisect.bisect_right(times, float(t.max()))
        sums = self._running_sums(model, last)
        seg_times = np.asarray(times[first:last], dtype=np.float64)
        seg_watts = np.array([model.watts(s) for s in self._states[first:last]], dtype=np.float64)
        seg_sums = np.asarray(sums[first:last], dtype=np.float64)
        i = np.searchsorted(seg_times, t, side="right") - 1
        return seg_sums[i] + seg_watts[i] * (t - seg_times[i])

    def _running_sums(self, model: DevicePowerModel, upto: int) -> list[float]:
        """Energy from the start to each of the first ``upto`` changes, for ``model``; only
        the changes not yet summed are added."""
        entry = self._sums.get(id(model))
        if entry is None or entry[0] is not model:
            entry = (model, [0.0])
            self._sums[id(model)] = entry
        sums = entry[1]
        times, states = self._times, self._states
        for k in range(len(sums), upto):
            sums.append(sums[k - 1] + model.watts(states[k - 1]) * (times[k] - times[k - 1]))
        return sums


def quantise(values: np.ndarray, resolution: float) -> np.ndarray:
    """Round to the instrument's resolution (one least significant digit)."""
    if resolution <= 0:
        return values
    return np.round(values / resolution) * resolution


def simulate_readings(
    model: DevicePowerModel,
    timeline: StateTimeline,
    t_starts: np.ndarray,
    aperture_s: float,
    noise_std_w: float,
    resolution_w: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Readings (watts) a meter integrating over ``aperture_s`` from each ``t_starts[i]`` reports.

    Each reading is the exact mean true power over its aperture, plus Gaussian instrument noise,
    quantised to ``resolution_w``.
    """
    t_starts = np.asarray(t_starts, dtype=np.float64)
    energy = timeline.cumulative_energy(model, t_starts + aperture_s) - timeline.cumulative_energy(
        model, t_starts
    )
    true = energy / aperture_s
    noisy = true + rng.normal(0.0, noise_std_w, size=true.shape) if noise_std_w > 0 else true
    return quantise(noisy, resolution_w)
