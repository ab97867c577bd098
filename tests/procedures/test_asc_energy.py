"""Energy per inference follows the single-stream time; the power-window loop time is checked
against it, never used in its place."""

from __future__ import annotations

import pytest

from hilbench.power.uncertainty import Quantity, UncertaintyBudget, UncertaintyComponent
from hilbench.workloads.asc.procedures.figures import energy_figure, loop_time


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
    from hilbench.workloads.asc.procedures.pipeline import PassLoop

    loops = [PassLoop("inference", 300, 1e-3, 1e-6, 1), PassLoop("inference", 100, 2e-3, 1e-6, 1)]
    mean, se = loop_time(loops)
    assert mean == pytest.approx(1.25e-3)
    assert 0 < se < 1e-6


def test_power_runs_take_consecutive_samples_wrapping_round_the_test_split():
    from hilbench.workloads.asc.procedures.power import power_rows

    assert power_rows(0, 1, 80) == [0]
    assert power_rows(3, 5, 6) == [3, 4, 5, 0, 1]


def test_a_single_stream_pass_is_checked_against_the_spread_of_passes_in_the_windows():
    """The single-stream time is one pass over the test set; in windows that run single stream
    the lists' means show how far one pass moves with the machine's speed."""
    from hilbench.workloads.asc.procedures.figures import time_consistency

    # 212 µs in single stream, 239 µs over the windows, one list's mean varying by 44 µs.
    within = time_consistency((212e-6, 6e-6), (239e-6, 4.5e-6), pass_spread_s=44e-6)
    assert within["mismatch"] is False and within["pass_spread_s"] == 44e-6
    # The same times with the samples' own standard errors alone: flagged.
    assert time_consistency((212e-6, 6e-6), (239e-6, 4.5e-6))["mismatch"] is True
    # A pass far outside what the lists did is still flagged, and a spread never narrows
    # the test below the single-stream standard error.
    assert time_consistency((212e-6, 6e-6), (400e-6, 4.5e-6), pass_spread_s=44e-6)["mismatch"]
    assert time_consistency((212e-6, 6e-6), (239e-6, 4.5e-6), pass_spread_s=1e-9)["mismatch"]


def test_the_windows_list_spread_and_loop_error_come_from_the_lists_means():
    import numpy as np

    from hilbench.workloads.asc.procedures.pipeline import PipelineWindow, list_spread

    rng = np.random.default_rng(1)
    # 50 lists of 80 samples; each list's speed shifted as a whole (the machine's), the
    # samples scattered by 5 µs around it.
    speed = rng.normal(0.0, 30e-6, 50)
    values = np.concatenate([250e-6 + s + rng.normal(0.0, 5e-6, 80) for s in speed])
    rows = [(80 * k, 80 * k + 79) for k in range(50)]
    samples = {"index": np.tile(np.arange(80), 50), "t_start": np.arange(4000) * 1e-3,
               "preprocess_s": values, "inference_s": values,
               "t_end": np.arange(4000) * 1e-3 + 5e-4}
    window = PipelineWindow(0, 0.0, 4.0, None, 0.0, 1e-4, None, samples, list_rows=rows)
    spread = list_spread([window], "inference")
    assert spread == pytest.approx(np.std([values[i:j + 1].mean() for i, j in rows], ddof=1))
    assert 20e-6 < spread < 40e-6
    loop = window.loop("inference")
    assert loop.std_error_s == pytest.approx(spread / np.sqrt(50))  # not 5 µs / sqrt(4000)
    assert loop.lists == 50 and loop.iterations == 4000
