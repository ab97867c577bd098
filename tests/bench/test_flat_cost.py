"""`hilbench bench flat-cost` runs a real campaign on the simulated bench and prints its
figures (a benchmark: the figures themselves are not asserted)."""

from __future__ import annotations

import re

import pytest

from tests.subprocesses import hilbench


@pytest.mark.slow
def test_flat_cost_prints_first_and_last_tenth_and_growth_per_run():
    proc = hilbench("bench", "flat-cost", "--units", "100", "--no-meter", "--trace", timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("runs: 100 in ")
    assert "allocation sites that grew most" in proc.stdout
    assert re.fullmatch(
        r"runs/s first tenth [\d.]+, last tenth [\d.]+ \(\d+% of first\); RSS growth [+-]\d+ B/run",
        lines[-1],
    ), lines[-1]
