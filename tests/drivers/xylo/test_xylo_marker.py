"""The xylo agent's host GPIO marker (issue 35), without Rockpool: a back end that takes a known
time per inference stands in for XyloSim. The marker is declared only when the line opens; the
line is high exactly around each timed region (a single-stream inference, a repeat window), in
the sysfs file and, through the device link, in the simulated bench's feed — the line a
simulated JS220 samples — beside the power states."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from hilbench.clock import now
from hilbench.sim.device_feed import DeviceFeed
from hilbench.sim.xylo_power import XYLO_AUDIO_2
from hilbench_drivers.xylo.driver import XyloDriver
from hilbench_drivers.xylo.simulated import Inference
from tests.agent.test_marker_gpio import fake_sysfs

INFERENCE_S = 0.004


class TimedBackend:
    """Takes INFERENCE_S per inference and writes down the marker line's level meanwhile."""

    simulated = True
    simulation = "a stand-in back end"
    onboard_power = False
    timing = "stand-in"

    def __init__(self) -> None:
        self.sample_untimed = {"max_s": 1.0, "reason": "stand-in"}
        self.value_file = None
        self.seen: list[str] = []

    def infer(self, raster, on_start=None) -> Inference:
        t_start = now()
        if on_start:
            on_start(t_start)
        if self.value_file is not None:
            self.seen.append(self.value_file.read_text().strip())
        time.sleep(INFERENCE_S)
        return Inference(np.zeros(4), INFERENCE_S, INFERENCE_S, t_start, now(), {})

    def power(self):
        return {"measured": False, "source": "simulation", "reason": "stand-in"}

    power_window_end = power

    def power_window_start(self) -> None:
        pass

    def describe(self):
        return {"backend": "stand-in"}

    def close(self) -> None:
        pass


@pytest.fixture
def feed():
    with DeviceFeed(XYLO_AUDIO_2) as found:
        yield found


def _driver(monkeypatch, tmp_path, feed, spec="gpio17"):
    monkeypatch.setenv("HILBENCH_GPIO_ROOT", str(tmp_path))
    backend = TimedBackend()
    driver = XyloDriver(device=backend, sim_meter=feed.address, marker_gpio=spec,
                        marker_latency_s="2e-5")
    return driver, backend


def _wait_for(feed: DeviceFeed, count: int) -> list[tuple[float, int]]:
    deadline = time.monotonic() + 5
    while len(edges := feed.edges()) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    return edges


def test_the_marker_is_declared_only_when_the_line_opens(monkeypatch, tmp_path, feed):
    base = fake_sysfs(tmp_path, 17)
    driver, _ = _driver(monkeypatch, tmp_path, feed)
    marker = driver.capabilities()["marker"]
    assert marker["line"] == str(base / "gpio17" / "value") and marker["latency_s"] == 2e-5
    driver.close()
    absent, _ = _driver(monkeypatch, tmp_path, feed, spec="gpio4")  # not exported, no export
    assert "marker" not in absent.capabilities()
    assert "gpio4 did not open" in absent.marker.reason
    absent.close()


@pytest.mark.serial  # edges within 2 ms of their region: a loaded host delayed a drop by 4 ms
def test_the_line_is_high_around_each_timed_region_in_the_file_and_the_feed(
        monkeypatch, tmp_path, feed):
    base = fake_sysfs(tmp_path, 17)
    driver, backend = _driver(monkeypatch, tmp_path, feed)
    backend.value_file = base / "gpio17" / "value"
    raster = np.zeros((10, 16), np.int64)
    single = driver._infer(raster)
    window = driver._loop([(0, raster)], 0.03, threading.Event(), repeat=0)
    assert backend.value_file.read_text().strip() == "0"
    assert set(backend.seen) == {"1"}  # high whenever the back end ran
    edges = _wait_for(feed, 4)
    assert [level for _, level in edges] == [1, 0, 1, 0]
    # each region brackets its work: raised as it starts, dropped once it ended
    for (rise, _), (fall, _), (start, end) in ((edges[0], edges[1],
                                                (single.t_start, single.t_end)),
                                               (edges[2], edges[3],
                                                (window.t_start, window.t_end))):
        assert start <= rise < start + 0.002 and end <= fall < end + 0.002
    assert window.iterations >= 2
    driver.close()


def test_without_a_line_nothing_is_marked(monkeypatch, tmp_path, feed):
    driver, _ = _driver(monkeypatch, tmp_path, feed, spec=None)
    driver._infer(np.zeros((10, 16), np.int64))
    time.sleep(0.1)
    assert feed.edges() == [] and "marker" not in driver.capabilities()
    driver.close()
