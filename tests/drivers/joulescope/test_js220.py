"""The JS220 driver against its simulator: marker-cut windows hold the true energy within the
stated edge uncertainty; errors name the setting; the vendor library is imported lazily."""

from __future__ import annotations

import time

import numpy as np
import pytest

from hilbench.power.markers import cut_windows, info_edge_uncertainty_s
from hilbench.power.source import PowerSourceError
from hilbench_drivers.joulescope import Joulescope220, Js220Settings
from tests.instrument_cassettes import run_without


def test_marker_windows_hold_the_true_energy_within_their_uncertainty(feed, make_sim):
    """1 MS/s, a timebase 80 ppm fast, GPI 0.6 us late (stated: 1 us): each 2 ms inference's
    energy, cut by its marker, is within the edge budget of the truth."""
    sim = make_sim(drift_ppm=80.0, gpi_latency_s=0.6e-6)
    source = Joulescope220("", Js220Settings(rate_hz=1_000_000), api=lambda: sim)
    source.configure()
    source.arm()
    source.start()
    time.sleep(0.03)
    truth = []
    for _ in range(5):
        t_on = feed.set_state("inference")
        feed.mark(1, t_on)
        time.sleep(0.002)
        t_off = feed.set_state("idle")
        feed.mark(0, t_off)
        truth.append((t_on, t_off))
        time.sleep(0.003)
    batches = [source.read()]
    time.sleep(0.02)
    batches.append(source.stop())
    watts = np.concatenate([b.values for b in batches])
    (edges,) = source.markers()
    windows = cut_windows(edges, sample_period_s=source.info.sample_period_s,
                          marker_latency_s=source.info.marker_latency_s)
    source.close()
    assert len(windows) == 5
    u = info_edge_uncertainty_s(source.info)
    for window, (t_on, t_off) in zip(windows, truth, strict=True):
        true = feed.true_energy(t_on, t_off)
        assert abs(window.energy_j(watts) - true) <= window.edge_energy_uncertainty_j(watts)
        # the instrument's own clock: its samples are 80 ppm short in bench seconds
        bench_duration = window.samples * 2 / sim.counter_rate  # 2 MHz counter, 1 MS/s
        assert abs(bench_duration - (t_off - t_on)) < u


def test_unknown_and_bad_settings_are_named():
    with pytest.raises(ValueError, match=r"unknown JS220 setting.*rate"):
        Js220Settings.from_mapping({"rate": 1000}, where="instrument js")
    with pytest.raises(ValueError, match="rate_hz 2000000 is not a JS220 rate"):
        Js220Settings(rate_hz=2_000_000)
    with pytest.raises(ValueError, match="supply_voltage_v"):
        Js220Settings(quantity="current")
    with pytest.raises(ValueError, match="marker_gpi"):
        Js220Settings(marker_gpi=(5,))


def test_a_missing_device_is_named(feed, make_sim):
    sim = make_sim()
    source = Joulescope220("u/js220/000999", Js220Settings(), api=lambda: sim)
    with pytest.raises(PowerSourceError, match=r"no JS220 at u/js220/000999.*SIM0001"):
        source.configure()
    source.close()


def test_without_the_vendor_library_the_driver_imports_and_says_what_to_install():
    said = run_without(["pyjoulescope_driver"], (
        "import json\n"
        "from hilbench_drivers.joulescope import Joulescope220, Js220Settings\n"
        "from hilbench.power.source import PowerSourceError\n"
        "try:\n    Joulescope220('', Js220Settings()).configure()\n"
        "except PowerSourceError as e:\n    print(json.dumps(str(e)))\n"))
    assert "pip install hilbench[joulescope]" in said
