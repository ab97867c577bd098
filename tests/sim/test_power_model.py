"""The simulated device's true energy: running sums give what integrating the whole history
gives, however queries and state changes interleave."""

from __future__ import annotations

import numpy as np
import pytest

from hilbench.sim.power_model import ARDUINO_NANO_33_BLE, SIMULATED_CPU, StateTimeline


def _integrated(timeline: StateTimeline, model, t: np.ndarray) -> np.ndarray:
    """Energy up to each time by integrating every state from the start (the plain way)."""
    return np.array([timeline.energy(model, timeline.t0, float(x)) for x in t])


def test_cumulative_energy_matches_integration_while_changes_arrive() -> None:
    rng = np.random.default_rng(7)
    states = list(SIMULATED_CPU.state_watts)
    timeline = StateTimeline(initial_state="idle", t0=100.0)
    t = 100.0
    for step in range(400):
        t += float(rng.uniform(0.0005, 0.01))
        timeline.set(t, states[step % len(states)])
        if step % 37 == 0:
            # readings over the recent past, as a meter asks, and some over all of it
            recent = np.sort(rng.uniform(max(100.0, t - 0.05), t + 0.02, size=25))
            whole = np.sort(rng.uniform(90.0, t + 0.02, size=10))
            for asked in (recent, whole):
                got = timeline.cumulative_energy(SIMULATED_CPU, asked)
                assert got == pytest.approx(_integrated(timeline, SIMULATED_CPU, asked),
                                            rel=1e-9, abs=1e-12)


def test_each_power_model_has_its_own_sums() -> None:
    timeline = StateTimeline(initial_state="idle", t0=0.0)
    timeline.set(1.0, "inference")
    timeline.set(2.0, "idle")
    t = np.array([0.5, 1.5, 3.0])
    cpu = timeline.cumulative_energy(SIMULATED_CPU, t)
    arduino = timeline.cumulative_energy(ARDUINO_NANO_33_BLE, t)
    assert cpu == pytest.approx([6.0, 12.0 + 17.5, 12.0 + 35.0 + 12.0])
    assert arduino == pytest.approx(
        [0.0397, 0.0794 + 0.050075, 0.0794 + 0.10015 + 0.0794], rel=1e-9
    )


def test_times_before_the_start_and_empty_queries() -> None:
    timeline = StateTimeline(initial_state="idle", t0=10.0)
    timeline.set(11.0, "solving")
    assert timeline.cumulative_energy(SIMULATED_CPU, np.array([5.0, 10.0])) == pytest.approx(
        [0.0, 0.0]
    )
    assert timeline.cumulative_energy(SIMULATED_CPU, np.array([])).shape == (0,)
    assert timeline.durations(10.5, 11.5) == pytest.approx({"idle": 0.5, "solving": 0.5})
