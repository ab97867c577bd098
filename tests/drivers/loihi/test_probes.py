"""The Loihi 2 probe path, against a stand-in with the API of lava-loihi's Loihi2HWProfiler as
its users call it (``power_breakdown()`` in W, ``energy_breakdown()`` in µJ, ``execution_time``
in µs per step; see drivers/loihi/probes.py for the source). lava-loihi is not public, so this
is as close to the board as CI gets; the figures below are made up for the test."""

from __future__ import annotations

import pytest

from hilbench_drivers.loihi import LoihiDriver
from hilbench_drivers.loihi.probes import COVERS, RAILS, power_report, read_profiler


class StandInLoihi2Profiler:
    """Returns fixed readings the way Loihi2HWProfiler does after a run of 4 steps."""

    execution_time = (250.0, 250.0, 300.0, 200.0)  # µs per step: 1 ms in all

    def power_breakdown(self):  # total, dynamic, static, vdd, vdd_m, vdd_io (W)
        return (1.2, 0.2, 1.0, 0.7, 0.4, 0.1)

    def energy_breakdown(self):  # the same six, µJ, over 1 ms
        return (1200.0, 200.0, 1000.0, 700.0, 400.0, 100.0)


def test_probe_readings_become_a_power_report_with_the_rails_it_covers():
    profile = read_profiler(StandInLoihi2Profiler())
    assert profile["energy_j"]["total"] == pytest.approx(1.2e-3)
    assert profile["step_s"] == pytest.approx([250e-6, 250e-6, 300e-6, 200e-6])
    report = power_report(profile)
    assert report["measured"] is True and report["simulated"] is False
    assert report["source"] == "loihi2-probes"
    assert set(report["domains"]) == set(RAILS) == {"vdd", "vdd_m", "vdd_io"}
    assert report["domains"]["vdd_m"] == pytest.approx(400e-6)
    assert sum(report["domains"].values()) == pytest.approx(report["energy_j"])
    assert report["duration_s"] == pytest.approx(1e-3)
    assert report["avg_power_w"] == pytest.approx(report["energy_j"] / report["duration_s"])
    assert report["static_power_w"] == 1.0 and report["dynamic_power_w"] == 0.2
    assert "not the board" in report["covers"] == COVERS


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
    assert caps["power"] == {"source": "loihi2-probes", "available": True, "reason": None}
    power = driver._power({"profile": read_profiler(StandInLoihi2Profiler())})
    assert power["source"] == "loihi2-probes" and power["measured"] is True
    driver.close()


def test_the_cpu_back_end_is_labelled_simulated_and_measures_no_power():
    driver = LoihiDriver()
    caps = driver.capabilities()
    assert caps["simulated"] is True
    assert caps["simulation"] == "Lava CPU back end: says nothing about Loihi's speed or power"
    assert caps["power"]["available"] is False and "no on-chip" in caps["power"]["reason"]
    power = driver._power({"profile": None})
    assert power["measured"] is False and "no on-chip power probes" in power["reason"]
    driver.close()


def test_an_unknown_backend_is_refused():
    from hilbench.agent.driver import DriverError

    with pytest.raises(DriverError, match="backend"):
        LoihiDriver(backend="Loihi3")
