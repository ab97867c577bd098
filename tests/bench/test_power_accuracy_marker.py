"""`bench power-accuracy --inference-ms … --rate … [--marker] --json`: a 1 ms inference at
1 MS/s, windows cut by marker edges in the instrument's stream or placed by software alignment,
scored against the simulation's truth in virtual time (no timing: not serial)."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest
from click.testing import CliRunner

from hilbench.bench.power_accuracy_command import power_accuracy
from hilbench.bench.power_accuracy_marker import Simulation, layout, marker_level, run


def _consistent(summary, low: float, high: float) -> bool:
    """The coverage's Wilson 95 % interval overlaps the target band."""
    ci_low, ci_high = summary.coverage_ci95
    return ci_low <= high and ci_high >= low


def test_marker_cut_windows_meet_the_error_and_coverage_targets():
    summary = run(1.0, 1e6, True, 200, seed=11)
    assert summary.median_abs_error <= 0.01
    assert _consistent(summary, 0.93, 0.97), summary


def test_software_alignment_states_its_larger_error_honestly():
    marked = run(1.0, 1e6, True, 200, seed=12)
    software = run(1.0, 1e6, False, 200, seed=12)
    assert software.median_abs_error > 1.5 * marked.median_abs_error
    assert software.median_relative_uncertainty95 > 1.5 * marked.median_relative_uncertainty95
    assert _consistent(software, 0.90, 0.99), software


def test_an_understated_mapping_uncertainty_is_caught_by_coverage():
    # The bench must be able to fail: an alignment that states a third of its true error.
    summary = run(1.0, 1e6, False, 100, seed=13, sim=Simulation(offset_true_scale=3.0))
    assert summary.coverage_ci95[1] < 0.90, summary


def test_the_marker_line_is_high_over_both_regions_only():
    lay = layout(1e-3, 1e-6, Simulation())
    t = np.array([0.0, lay.idle_start, lay.idle_end, lay.active_start - 1e-9, lay.active_start,
                  lay.active_end - 1e-9, lay.active_end])
    assert marker_level(lay, t).tolist() == [0, 1, 0, 0, 1, 1, 0]


def test_memory_stays_flat_with_the_trial_count():
    def peak(trials: int) -> int:
        tracemalloc.start()
        run(1.0, 2e6, True, trials, seed=14)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return top

    few, many = peak(2), peak(12)
    assert many < 1.3 * few, (few, many)


def test_the_command_prints_json_with_the_simulation_parameters():
    result = CliRunner().invoke(power_accuracy, ["--inference-ms", "2", "--rate", "200000",
                                                 "--marker", "--trials", "20", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["trials"] == 20 and out["rate"] == 200000 and out["inference_ms"] == 2.0
    assert out["marker"] is True and out["simulated"] is True
    assert 0 <= out["coverage_ci95"][0] <= out["coverage"] <= out["coverage_ci95"][1] <= 1
    for key in ("accuracy_relative", "noise_w", "drift_ppm", "marker_latency_s",
                "offset_uncertainty_s"):
        assert key in out["simulation"]


@pytest.mark.parametrize("args", [["--rate", "0"], ["--inference-ms", "-1"]])
def test_bad_figures_get_one_line(args):
    result = CliRunner().invoke(power_accuracy, [*args, "--trials", "3"])
    assert result.exit_code == 2 and "must be positive" in result.output


def test_the_sweep_draws_the_points_its_json_holds(tmp_path):
    from hilbench.bench.power_accuracy_sweep import SERIES, sweep_figure, write_sweep
    from hilbench.report.figures.style import figure_context

    paths = write_sweep(tmp_path, 4, 3, inference_ms=(0.3, 30.0), rates=(30.0, 3e4))
    assert [p.name for p in paths] == ["power-accuracy-sweep.json", "power-accuracy-sweep.png",
                                       "power-accuracy-sweep.svg"]
    assert all(p.stat().st_size > 0 for p in paths)
    points = json.loads(paths[0].read_text())["points"]
    assert len(points) == 8 and not any("refused" in p for p in points)
    with figure_context():
        fig = sweep_figure(points)
    (error_ms, error_rate), (coverage_ms, coverage_rate) = np.asarray(fig.axes).reshape(2, 2)
    for ax, axis, key in ((error_ms, "inference_ms", "median_abs_error"),
                          (error_rate, "rate", "median_abs_error"),
                          (coverage_ms, "inference_ms", "coverage"),
                          (coverage_rate, "rate", "coverage")):
        # error bars: the container carries the label, its first line the points
        drawn = {line.get_label(): line for line in ax.get_lines()
                 if line.get_label() in SERIES.values()}
        drawn.update({c.get_label(): c.lines[0] for c in ax.containers
                      if c.get_label() in SERIES.values()})
        assert set(drawn) == set(SERIES.values())
        for marker, name in SERIES.items():
            mine = sorted((p for p in points if p["axis"] == axis and p["marker"] == marker),
                          key=lambda p: p["inference_ms"] if axis == "inference_ms"
                          else p["rate"])
            x = [p["inference_ms"] * 1e-3 if axis == "inference_ms" else p["rate"]
                 for p in mine]
            assert drawn[name].get_xdata().tolist() == pytest.approx(x)
            assert drawn[name].get_ydata().tolist() == pytest.approx([p[key] for p in mine])


def test_the_command_writes_the_sweep(tmp_path):
    result = CliRunner().invoke(power_accuracy, ["--sweep", str(tmp_path / "map"),
                                                 "--trials", "1"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "map").iterdir()) == [
        "power-accuracy-sweep.json", "power-accuracy-sweep.png", "power-accuracy-sweep.svg"]
    points = json.loads((tmp_path / "map" / "power-accuracy-sweep.json").read_text())["points"]
    assert {p["axis"] for p in points} == {"inference_ms", "rate"} and len(points) == 30
