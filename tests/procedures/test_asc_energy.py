"""Energy per inference follows the single-stream time; the power-window loop time is checked
against it, never used in its place."""

from __future__ import annotations

import pytest

from hilbench.power.uncertainty import Quantity, UncertaintyBudget, UncertaintyComponent
from hilbench.procedures.asc_figures import energy_figure, loop_time


def _dynamic(watts: float, u: float) -> Quantity:
    return Quantity("dynamic power", watts, "W",
                    UncertaintyBudget((UncertaintyComponent("meter", "normal", u),)))


def test_energy_uses_the_single_stream_time_and_flags_a_different_loop_time():
    dyn = _dynamic(20.0, 0.1)
    # The device took 938 µs per sample over the test set but 765 µs repeating one sample.
    energy, meta = energy_figure(dyn, (938e-6, 2e-6), (765e-6, 1e-6))
    assert energy.value == pytest.approx(20.0 * 938e-6)
    assert meta["execution_time_s"] == 938e-6
    assert meta["loop_time"]["mismatch"] is True
    assert meta["flag"] and "ran differently" in meta["flag"]
    # Both uncertainties reach the energy: the power's and the time's.
    names = [c["name"] for c in meta["budget"]["components"]]
    assert "meter" in names and "execution time" in names


def test_agreeing_times_are_not_flagged():
    _, meta = energy_figure(_dynamic(20.0, 0.1), (938e-6, 5e-6), (945e-6, 3e-6))
    assert meta["loop_time"]["mismatch"] is False and meta["flag"] is None


def test_loop_time_weights_windows_by_their_samples():
    loops = [{"iterations": 300, "mean_s": 1e-3, "std_error_s": 1e-6},
             {"iterations": 100, "mean_s": 2e-3, "std_error_s": 1e-6}]
    mean, se = loop_time(loops)
    assert mean == pytest.approx(1.25e-3)
    assert 0 < se < 1e-6


def test_power_runs_take_consecutive_samples_wrapping_round_the_test_split():
    from hilbench.procedures.asc_power import power_rows

    assert power_rows(0, 1, 80) == [0]
    assert power_rows(3, 5, 6) == [3, 4, 5, 0, 1]
