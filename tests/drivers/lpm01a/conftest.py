"""An emulated LPM01A on a real pseudo-terminal, measuring a simulated device."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest

from hilbench.sim.device_feed import DeviceFeed
from hilbench.sim.power_model import ARDUINO_NANO_33_BLE
from hilbench_drivers.lpm01a.emulator import Lpm01aEmulator


@pytest.fixture
def feed() -> Iterator[DeviceFeed]:
    with DeviceFeed(ARDUINO_NANO_33_BLE) as f:
        yield f


@pytest.fixture
def board(feed: DeviceFeed) -> Iterator[Lpm01aEmulator]:
    with Lpm01aEmulator(feed, drift_ppm=30.0, seed=1) as emulator:
        yield emulator


def timed_regions(feed: DeviceFeed, count: int = 3, region_s: float = 0.01,
                  pulse_s: float = 1e-4) -> Callable[[], int]:
    """A stimulus the MLPerf Tiny way: a short pulse on D7 at the start and at the end of each
    timed region; returns the number of falling edges (the configured events)."""

    def pulse() -> float:
        t = feed.mark(1)
        feed.mark(0, t + pulse_s)
        return t

    def run() -> int:
        for _ in range(count):
            feed.set_state("inference", pulse())
            time.sleep(region_s)
            feed.set_state("idle", pulse())
            time.sleep(region_s)
        return 2 * count

    return run
