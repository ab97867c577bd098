"""Table-6 figures over several trials: common-mode instrument error, and the 5 % rule."""

from __future__ import annotations

import math

import pytest

from hilbench.report.asc_table import combine, format_figure


def _metric(value: float, gain_u: float, stat_u: float) -> dict:
    components = [
        {"name": "instrument gain", "standard_uncertainty": gain_u},
        {"name": "statistical (active)", "standard_uncertainty": stat_u},
    ]
    return {"value": value, "unit": "W", "uncertainty": 2 * math.hypot(gain_u, stat_u),
            "meta": {"budget": {"components": components}}}


def test_the_instruments_gain_error_does_not_average_out_over_trials():
    runs = [{"p": _metric(10.0, 0.1, 0.1)} for _ in range(4)]
    fig = combine(runs, "p")
    # gain: the same 0.1 in every trial; statistical: 0.1 / sqrt(4)
    assert fig.uncertainty == pytest.approx(2 * math.hypot(0.1, 0.05))
    assert fig.uncertainty > 2 * math.hypot(0.1, 0.1) / 2  # the old, all-independent figure


def test_every_trial_within_5_percent_or_flagged():
    agree = [{"p": _metric(v, 0.1, 0.1)} for v in (10.0, 10.2, 9.9, 10.1, 9.8)]
    fig = combine(agree, "p")
    assert fig.trials_agree is True
    assert "(5 trials, all within 5 %)" in format_figure(fig)
    off = [{"p": _metric(v, 0.1, 0.1)} for v in (10.0, 10.0, 10.0, 10.0, 12.0)]
    fig = combine(off, "p")
    assert fig.trials_agree is False
    assert "NOT all within 5 %, worst 15.4 %" in format_figure(fig)
    assert combine(agree[:1], "p").trials_agree is None


def test_the_int8_models_own_line_names_its_features_and_network():
    from hilbench.report.asc_table import AscGroup, describe
    from hilbench.workloads.asc import packaged_model_path
    from hilbench.workloads.asc.model_files import load_model_file

    model = load_model_file(packaged_model_path())
    group = AscGroup(agent="cpu0", params={"fixture": True, "sample_rate": 16000,
                                           "model_description": model.description})
    workload = [ln for ln in describe(group) if ln.startswith("workload:")]
    assert workload == [f"workload: synthetic fixture, 16000 Hz, MFE features (40 filters × "
                        f"{model.input_frames} frames) + int8 CNN ({len(model.convs)} conv "
                        f"blocks, {len(model.classes)} classes)"]
