"""Where a power figure comes from, and two sources' agreement by E_n (ISO 13528)."""

from __future__ import annotations

import math

import pytest

from hilbench.power.provenance import (
    NOT_STATED,
    PowerOrigin,
    agreement,
    origin_of,
    origins_text,
    stated_uncertainty95,
)


@pytest.mark.parametrize(("x1", "u1", "x2", "u2", "en", "flagged"), [
    (10.0, 0.3, 10.4, 0.4, 0.8, False),
    (10.0, 0.3, 10.5, 0.4, 1.0, False),  # exactly 1 passes: flagged only above it
    (10.0, 0.3, 10.6, 0.4, 1.2, True),
    (38.0, 1.9, 60.0, 0.5, 22.0 / math.hypot(1.9, 0.5), True),
])
def test_en_is_the_difference_over_the_combined_expanded_uncertainty(x1, u1, x2, u2, en,
                                                                     flagged):
    found = agreement(x1, u1, x2, u2)
    assert found.en == pytest.approx(en) and found.flagged is flagged
    assert agreement(x2, u2, x1, u1).en == pytest.approx(en)  # symmetric


def test_without_an_uncertainty_there_is_no_en_and_it_says_which():
    found = agreement(10.0, None, 12.0, 0.1)
    assert found.en is None and not found.flagged
    assert found.reason == f"no E_n: {NOT_STATED} for the first figure"
    assert "both uncertainties are 0" in agreement(1.0, 0.0, 1.0, 0.0).reason
    assert agreement(1.0, 0.0, 2.0, 0.0).flagged  # two exact figures that differ disagree
    with pytest.raises(ValueError, match="finite"):
        agreement(float("nan"), 0.1, 1.0, 0.1)


def test_a_stated_bound_gives_the_95_percent_interval_of_a_rectangular_error():
    # ± 5 % of 20 W as a rectangular bound: 95 % of it holds 0.95 of the half-width
    assert stated_uncertainty95(20.0, 0.05, 0.0) == pytest.approx(0.95 * 1.0, rel=0.02)
    assert stated_uncertainty95(20.0, 0.0, 0.0) == 0.0


def test_an_origin_is_stored_read_back_and_named():
    agent = PowerOrigin.of_agent("cpu0", "rapl", stated=False)
    meta = {"power_source": agent.to_dict()}
    assert origin_of(meta) == agent
    assert agent.mark() == "agent report" and not agent.leaderboard_ok
    assert agent.explain() == f"agent cpu0's own report (rapl): {NOT_STATED}"
    meter = PowerOrigin("simulation", "dmm")
    assert meter.mark() == "" and meter.leaderboard_ok
    assert origins_text([meta, {"power_source": meter.to_dict()}, {}, None]) == (
        "agent cpu0's own report (rapl); simulated meter dmm")
    assert origin_of({"power_source": {"kind": "guess"}}) is None  # not a kind: no origin
