"""A simulated JS220 behind the driver API, measuring a simulated device."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from hilbench.sim.device_feed import DeviceFeed
from hilbench.sim.js220 import SimulatedJs220Driver
from hilbench.sim.power_model import ARDUINO_NANO_33_BLE


@pytest.fixture
def feed() -> Iterator[DeviceFeed]:
    with DeviceFeed(ARDUINO_NANO_33_BLE) as f:
        yield f


def pulses(feed: DeviceFeed, count: int = 3, high_s: float = 0.004,
           low_s: float = 0.004) -> Callable[[], int]:
    """A stimulus: ``count`` inferences, each marked high on the marker pin; returns the
    number of edges made (two per pulse)."""

    def run() -> int:
        for _ in range(count):
            t = feed.set_state("inference")
            feed.mark(1, t)
            time.sleep(high_s)
            t = feed.set_state("idle")
            feed.mark(0, t)
            time.sleep(low_s)
        return 2 * count

    return run


@pytest.fixture
def make_sim(feed: DeviceFeed) -> Callable[..., SimulatedJs220Driver]:
    made: list[SimulatedJs220Driver] = []

    def make(**kwargs: object) -> SimulatedJs220Driver:
        sim = SimulatedJs220Driver(feed, seed=1, **kwargs)  # type: ignore[arg-type]
        made.append(sim)
        return sim

    yield make
    for sim in made:
        sim.finalize()
