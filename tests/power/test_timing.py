"""The power arithmetic of a measured window (hilbench.power.timing): readings to watts and the
timing uncertainty of a window, usable without an orchestrator."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from hilbench.power import timing
from hilbench.power.source import InstrumentFault, SourceInfo


def info(unit: str, supply_v: float | None = None) -> SourceInfo:
    return SourceInfo(name="meter", unit=unit, time_resolution_s=1e-3, supply_voltage_v=supply_v)


def test_amps_become_watts_at_the_declared_supply():
    assert np.allclose(timing.to_watts(info("A", 5.0), np.array([0.01, 0.02])), [0.05, 0.10])
    watts = np.array([1.5])
    assert timing.to_watts(info("W"), watts) is watts


def test_amps_without_a_supply_voltage_are_refused():
    with pytest.raises(InstrumentFault, match="meter: readings in A cannot be turned into watts"):
        timing.to_watts(info("A"), np.array([0.01]))


def test_timing_uncertainty_adds_offset_start_and_drift():
    measured = SimpleNamespace(source=SimpleNamespace(t0_uncertainty_s=2e-4))
    assert timing.timing_uncertainty_s(measured, 1e-4, drift_residual_s=3e-5) == \
        pytest.approx(1e-4 + 2e-4 + 3e-5)
    unknown = SimpleNamespace(source=SimpleNamespace())
    assert timing.timing_uncertainty_s(unknown, 1e-4) == \
        pytest.approx(1e-4 + timing.DEFAULT_START_UNCERTAINTY_S)


def test_aperture_is_the_drivers_where_it_says():
    with_aperture = SimpleNamespace(source=SimpleNamespace(
        settings=SimpleNamespace(aperture_s=0.2)))
    assert timing.aperture_s(with_aperture) == 0.2
    assert timing.aperture_s(SimpleNamespace(source=SimpleNamespace())) is None


def test_no_estimate_leaves_no_drift_residual():
    assert timing.drift_residual_s(None, 12.0) == 0.0
