"""`hilbench bench stage-attribution` prints each stage against its truth and ends with the time
of one attribution."""

from __future__ import annotations

import re

from click.testing import CliRunner

from hilbench.cli import cli


def test_the_benchmark_prints_stage_powers_beside_their_truth_and_the_time_last():
    result = CliRunner().invoke(cli, ["bench", "stage-attribution", "--readings", "3000",
                                       "--repeat", "1", "--seeds", "2"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    for stage in ("preprocessing", "inference", "between"):
        line = next(x for x in lines if x.strip().startswith(f"{stage}:"))
        value, half, truth = map(float, re.findall(r"\d+\.\d+", line))
        assert abs(value - truth) <= 3 * half, line
    assert "coverage of the 95 % intervals over 2 windows" in result.output
    assert re.fullmatch(r"one attribution of \d+ readings: median \d\.\d+ s .*", lines[-1])


def test_too_few_readings_are_refused_with_the_option_named():
    result = CliRunner().invoke(cli, ["bench", "stage-attribution", "--readings", "10"])
    assert result.exit_code == 2
    assert "--readings >= 3000" in result.output
