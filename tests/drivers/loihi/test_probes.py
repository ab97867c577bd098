"""The Loihi 2 probe path, against a stand-in with the API of lava-loihi's Loihi2HWProfiler as
its users call it (``power_breakdown()`` in W, ``energy_breakdown()`` in µJ, ``execution_time``
in µs per step; see drivers/loihi/probes.py for the source). lava-loihi is not public, so this
is as close to the board as CI gets; the figures below are made up for the test."""

from __future__ import annotations

import numpy as np
import pytest

from hilbench.power.source import PowerSource, PowerSourceError
from hilbench_drivers.loihi import LoihiDriver
from hilbench_drivers.loihi.probe_source import LoihiProbeSource
from hilbench_drivers.loihi.probes import COVERS, RAILS, read_profiler


class StandInLoihi2Profiler:
    """Returns fixed readings the way Loihi2HWProfiler does after a run of 4 steps."""

    execution_time = (250.0, 250.0, 300.0, 200.0)  # µs per step: 1 ms in all

    def power_breakdown(self):  # total, dynamic, static, vdd, vdd_m, vdd_io (W)
        return (1.2, 0.2, 1.0, 0.7, 0.4, 0.1)

    def energy_breakdown(self):  # the same six, µJ, over 1 ms
        return (1200.0, 200.0, 1000.0, 700.0, 400.0, 100.0)


def _through_source(profile, t_start=100.0):
    source = LoihiProbeSource()
    source.start()
    source.record(profile, t_start)
    samples = source.stop()
    return source, samples, source.report(samples)


def test_probe_readings_become_a_power_source_and_a_report_with_the_rails_it_covers():
    profile = read_profiler(StandInLoihi2Profiler())
    assert profile["energy_j"]["total"] == pytest.approx(1.2e-3)
    assert profile["step_s"] == pytest.approx([250e-6, 250e-6, 300e-6, 200e-6])
    source, samples, report = _through_source(profile)
    assert isinstance(source, PowerSource)
    assert source.info.unit == "W" and source.info.simulated is False
    assert source.info.domains == ("VDD", "VDD_M", "VDD_IO")
    assert source.info.time_resolution_s == pytest.approx(250e-6)  # the mean step
    assert source.health().ok
    # One sample per step, stamped at each step's start; they integrate to the probes' energy.
    assert samples.t == pytest.approx([100.0, 100.00025, 100.0005, 100.0008])
    durations = np.diff(np.append(samples.t, 100.001))
    assert float(np.dot(samples.values, durations)) == pytest.approx(1.2e-3)
    assert report["measured"] is True and report["simulated"] is False
    assert report["source"] == "loihi2-probes" and report["samples"] == 4
    assert report["energy_j"] == pytest.approx(1.2e-3)
    assert set(report["domains"]) == set(RAILS) == {"vdd", "vdd_m", "vdd_io"}
    assert report["rails"]["vdd_m"].startswith("VDD_M")
    assert report["domains"]["vdd_m"] == pytest.approx(400e-6)
    assert sum(report["domains"].values()) == pytest.approx(report["energy_j"])
    assert report["duration_s"] == pytest.approx(1e-3)
    assert report["avg_power_w"] == pytest.approx(1.2)
    assert report["static_power_w"] == 1.0 and report["dynamic_power_w"] == 0.2
    assert "not the board" in report["covers"] == COVERS
    assert "not published" in report["accuracy"]
    assert len(source.read()) == 0  # drained: a second read gives nothing new


def test_the_source_energy_follows_the_probes_not_power_times_time():
    """When the probes' energy and average power disagree, the samples carry the energy."""

    class Disagreeing(StandInLoihi2Profiler):
        def energy_breakdown(self):
            return (1500.0, 300.0, 1200.0, 900.0, 450.0, 150.0)

    _, samples, report = _through_source(read_profiler(Disagreeing()))
    assert report["energy_j"] == pytest.approx(1.5e-3)
    assert report["avg_power_w"] == pytest.approx(1.5)
    assert samples.values == pytest.approx([1.5] * 4)


def test_recording_before_start_is_refused():
    with pytest.raises(PowerSourceError, match="before start"):
        LoihiProbeSource().record(read_profiler(StandInLoihi2Profiler()), 0.0)


def test_a_profiler_with_the_wrong_shape_is_refused():
    class Short(StandInLoihi2Profiler):
        def power_breakdown(self):
            return (1.2, 0.2)

    with pytest.raises(ValueError):
        read_profiler(Short())
    with pytest.raises(RuntimeError, match="no profiler"):
        read_profiler(None)


def test_on_loihi2_the_driver_reports_probe_power_and_is_not_labelled_simulated(tmp_path):
    driver = LoihiDriver(backend="Loihi2")
    caps = driver.capabilities()
    assert caps["simulated"] is False and "simulation" not in caps
    assert caps["power"] == {
        "source": "loihi2-probes",
        "available": True,
        "reason": None,
        "rails": ["VDD", "VDD_M", "VDD_IO"],
        "simulated": False,
    }
    profiler = StandInLoihi2Profiler()
    driver.power_source.start()  # as run() does before Lava starts
    power = driver._power({"profile": read_profiler(profiler), "t_start": 5.0})
    assert power["source"] == "loihi2-probes" and power["measured"] is True
    assert power["energy_j"] == pytest.approx(profiler.energy_breakdown()[0] * 1e-6)
    assert power["samples"] == len(profiler.execution_time)
    driver.close()


def test_the_cpu_back_end_is_labelled_simulated_and_measures_no_power():
    driver = LoihiDriver()
    caps = driver.capabilities()
    assert caps["simulated"] is True
    assert caps["simulation"] == "Lava CPU back end: says nothing about Loihi's speed or power"
    assert caps["power"]["available"] is False and "no on-chip" in caps["power"]["reason"]
    with pytest.raises(PowerSourceError, match="no on-chip power probes"):
        driver.power_source.configure()
    power = driver._power({"profile": None})
    assert power["measured"] is False and "no on-chip power probes" in power["reason"]
    driver.close()


def test_an_unknown_backend_is_refused():
    from hilbench.agent.driver import DriverError

    with pytest.raises(DriverError, match="backend"):
        LoihiDriver(backend="Loihi3")
