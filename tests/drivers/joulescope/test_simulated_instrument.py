"""The simulated JS220 as a campaign opens it (``simulate = "<power model>"``): a device reports
its stages and marker pin over TCP through the same link the simulated DMM hears, and the
marker-cut window of the instrument's own samples holds the feed's true mean power and the
true region's length within their stated uncertainty."""

from __future__ import annotations

import time

import numpy as np
import pytest

from hilbench.orchestrator.instruments import InstrumentSpec, check_instrument_settings
from hilbench.power.marker_windows import MARKER_CUT, marked_estimate, phase_alignment
from hilbench.sim.device_link import SimulatedDeviceLink
from hilbench.sim.power_model import ARDUINO_NANO_33_BLE
from hilbench_drivers.joulescope import Joulescope220

pytestmark = pytest.mark.timeout(60)


@pytest.mark.serial  # a region's length against a 60 ppm bound: it missed under load
def test_a_marked_region_told_over_tcp_is_cut_at_its_true_power_and_length():
    source, bench = Joulescope220.simulated(
        ARDUINO_NANO_33_BLE, {"rate_hz": 100_000, "marker_latency_s": 2e-6},
        drift_ppm=50.0, noise_std_w=0.0002)
    link = SimulatedDeviceLink(bench.address)
    try:
        assert source.info.simulated and "simulated JS220" in source.info.simulation
        source.arm()
        source.start()
        time.sleep(0.05)
        link.state("inference", marker=1)
        time.sleep(0.2)
        link.state("idle", marker=0)
        time.sleep(0.05)
        batch = source.stop()
        markers = source.markers()
    finally:
        link.close()
        source.close()
        bench.stop()
    ((t_on, level_on), (t_off, level_off)) = bench.feed.edges()
    assert (level_on, level_off) == (1, 0)
    found = phase_alignment(markers, source.info, len(batch), device_marks=True)
    assert found.method == MARKER_CUT, found.reason
    cut = found.cut
    # the cut's length (on the instrument's own, 50 ppm fast, clock) is the true region's
    # within one edge uncertainty and the timebase's error over it
    true_s = t_off - t_on
    assert abs(cut.duration_s - true_s) <= cut.edge_uncertainty_s + 60e-6 * true_s
    estimate = marked_estimate("active", np.asarray(batch.values), cut, source.info,
                               boundary="exclude")
    truth = ARDUINO_NANO_33_BLE.watts("inference")
    assert abs(estimate.mean_w - truth) <= estimate.uncertainty95
    assert estimate.uncertainty95 < 0.01 * truth  # 0.5 % stated accuracy dominates


def test_a_campaign_checks_its_settings_before_anything_starts():
    bad = InstrumentSpec("js", "joulescope", "dev", simulate="arduino-nano-33-ble",
                         settings={"rate_hz": 123})
    assert "rate_hz 123" in check_instrument_settings(bad)
    good = InstrumentSpec("js", "joulescope", "dev", simulate="arduino-nano-33-ble",
                          settings={"rate_hz": 50_000})
    assert check_instrument_settings(good) is None
