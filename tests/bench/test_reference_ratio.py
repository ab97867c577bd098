"""`hilbench bench reference` measures an honest spawned agent against the reference responder
and says how far its largest ratio stays from the factor the trust rule uses (R13a)."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from hilbench.bench.reference_ratio import reference_ratio
from hilbench.wire.link_probe import REFERENCE_FACTOR


@pytest.mark.slow
@pytest.mark.serial  # a ratio of round trips against a bound
def test_an_honest_agent_stays_within_the_factor_and_the_headline_says_so():
    result = CliRunner().invoke(reference_ratio, ["--pairs", "3"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0].startswith("3 pool pairs of 24 echoes or more")
    ratios = re.findall(r"(median|75th   ) ratio min ([\d.]+)  median ([\d.]+)  p90 ([\d.]+)  "
                        r"max ([\d.]+)", result.output)
    assert [r[0] for r in ratios] == ["median", "75th   "]
    for _, *figures in ratios:
        low, _, _, high = (float(x) for x in figures)
        assert 0 < low <= high < REFERENCE_FACTOR  # an honest agent keeps its own echoes
    assert lines[-1].endswith("0 of 3 pools would hold this honest agent to the reference")
