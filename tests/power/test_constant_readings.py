"""A source whose readings are constant still carries what it states: its resolution and
accuracy, never ± 0. The Keysight driver states its resolution (the data sheet's ppm of range
at the chosen NPLC), so identical idle and active readings give a dynamic power of 0 with an
uncertainty of at least half a step each; a source that states nothing gives a figure whose
uncertainty is "not stated"."""

from __future__ import annotations

import numpy as np
import pytest

from hilbench.power.estimators import PhaseWindow, phase_power
from hilbench.power.metrics import dynamic_power
from hilbench.power.source import SourceInfo
from hilbench.workloads.asc.procedures.figures import never_zero
from hilbench_drivers.keysight34465a.driver import Keysight34465A
from hilbench_drivers.keysight34465a.settings import Keysight34465ASettings

T = np.arange(0.0, 10.0, 0.1)


def _estimates(info: SourceInfo, amps: float):
    watts = np.full(T.shape, amps * (info.supply_voltage_v or 1.0))
    idle = phase_power(T, watts, PhaseWindow("idle", 0.5, 4.5), info, aperture_s=0.1)
    active = phase_power(T, watts, PhaseWindow("active", 5.0, 9.5), info, aperture_s=0.1)
    return idle, active


def test_a_dmm_reading_a_constant_current_states_its_resolution_and_accuracy():
    settings = Keysight34465ASettings(function="current", range=0.1, nplc=10.0,
                                      sample_interval_s=0.25, supply_voltage_v=5.0)
    info = Keysight34465A("TCPIP::dmm::5025::SOCKET", settings).info
    step = 0.1e-6 * 0.1  # 0.1 ppm of the 100 mA range at NPLC 10
    assert info.resolution == pytest.approx(step)
    idle, active = _estimates(info, 0.018)
    assert idle.std_error_w == 0 and idle.quantisation_half_width_w == pytest.approx(
        step * 5.0 / 2)
    assert idle.uncertainty95 > 0.0001 * 0.1 * 5.0  # at least the stated offset (of range)
    dynamic = dynamic_power(idle, active)
    assert dynamic.value == pytest.approx(0.0, abs=1e-15)
    # the offset cancels and the gain scales 0: only the two half steps are left, never 0
    assert dynamic.uncertainty95 >= 0.95 * step * 5.0 / 2


def test_a_source_stating_nothing_gives_no_uncertainty_rather_than_zero():
    info = SourceInfo("monitor", "W", 0.1)
    idle, active = _estimates(info, 0.35e-3)
    dynamic = dynamic_power(idle, active)
    assert idle.uncertainty95 == dynamic.uncertainty95 == 0.0  # nothing known to bound it
    value, uncertainty, meta = never_zero(idle.mean_w, idle.uncertainty95, {})
    assert value == idle.mean_w and uncertainty is None
    assert meta["uncertainty_note"].startswith("uncertainty not stated")


def test_a_spread_of_a_few_ulps_is_rounding_and_states_nothing_either():
    """A mean of constant readings can come out a few ulps off each reading (CI once stated
    ± 6.6e-19 W on a 1 mW rail); that is float64's rounding, not a measured spread."""
    value = 0.35e-3
    _, uncertainty, meta = never_zero(value, 3 * np.spacing(value), {})
    assert uncertainty is None and meta["uncertainty_note"].startswith("uncertainty not stated")
    measured = 1e-9 * value  # a part per billion is a spread a meter can state
    assert never_zero(value, measured, {})[1] == measured
