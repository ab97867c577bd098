"""The device feed hears a simulated device through the same link the simulated meter does:
states and marker edges over loopback TCP, with the truth kept."""

from __future__ import annotations

import time

import numpy as np
import pytest

from hilbench.clock import bench_now
from hilbench.sim.device_feed import DeviceFeed
from hilbench.sim.device_link import SimulatedDeviceLink
from hilbench.sim.power_model import ARDUINO_NANO_33_BLE


def _wait_for(condition, timeout_s: float = 2.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "the feed never heard it"
        time.sleep(0.005)


def test_states_and_marker_edges_arrive_over_the_link_with_their_stamps():
    with DeviceFeed(ARDUINO_NANO_33_BLE) as feed:
        link = SimulatedDeviceLink(feed.address)
        t0 = bench_now()
        link.state("inference", t0)
        link.marker(1, t0)
        link.state("idle", t0 + 0.002)
        link.marker(0, t0 + 0.002)  # the last line: once its edge is in, so is every line
        _wait_for(lambda: len(feed.edges()) == 2)  # (CI: "idle" was still on its way)
        link.close()
        assert feed.edges() == [(t0, 1), (t0 + 0.002, 0)]
        assert feed.line(np.array([t0 - 1e-6, t0 + 1e-3, t0 + 3e-3])).tolist() == [0, 1, 0]
        assert feed.true_energy(t0, t0 + 0.002) == pytest.approx(0.10015 * 0.002)
        watts = feed.mean_power(np.array([t0 + 0.001]), 0.002)
        assert watts[0] == pytest.approx((0.10015 + 0.0794) / 2)


def test_a_held_link_limits_what_the_instruments_may_compute():
    with DeviceFeed(ARDUINO_NANO_33_BLE) as feed:
        t = bench_now()
        feed.hold(t)
        assert feed.told_until() == t
        feed.live()
        assert feed.told_until() >= t


def test_bad_lines_are_ignored_not_fatal(caplog):
    feed = DeviceFeed(ARDUINO_NANO_33_BLE)
    feed.execute("SIM:STAT nosuchstate,1.0")
    feed.execute("SIM:MARK 7,1.0")
    feed.execute("*RST")
    assert len(feed.edges()) == 0
    assert sum("device feed" in r.message for r in caplog.records) == 3
