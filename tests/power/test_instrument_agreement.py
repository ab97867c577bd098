"""Several instruments on one device: each further instrument's figure beside the headline's,
with E_n (ISO 13528), flagged by name above 1 (hilbench/power/instrument_agreement.py)."""

from __future__ import annotations

import math

import pytest

from hilbench.power.instrument_agreement import (
    compare_instruments,
    disagreeing_instruments,
    disagreement_text,
)

pytestmark = pytest.mark.timeout(10)


def test_each_figure_carries_every_further_instruments_value_and_en():
    headline = {"idle_power_w": (0.0794, 0.0001, {}), "active_power_w.inference": (0.1, 0.0001, {}),
                "meta": {"instrument": "x"}}
    others = [("b", {"idle_power_w": (0.07945, 0.0001, {}),
                     "active_power_w.inference": (0.1, 0.0001, {})}),
              ("c", {"idle_power_w": (0.0794 * 1.03, 0.0001, {}),
                     "active_power_w.inference": (0.103, 0.0001, {})})]
    found = compare_instruments("a", headline, others)
    assert set(found) == {"idle_power_w", "active_power_w.inference"}  # never the meta
    idle = found["idle_power_w"]
    assert idle["headline"] == "a" and [e["id"] for e in idle["others"]] == ["b", "c"]
    b, c = idle["others"]
    assert b["en"] == pytest.approx(0.00005 / math.hypot(0.0001, 0.0001))
    assert not b["flagged"] and c["flagged"] and c["en"] > 10
    assert idle["disagree"] == ["c"]


def test_an_instrument_without_a_figure_says_why_and_is_not_flagged():
    found = compare_instruments("a", {"idle_power_w": (0.08, 0.0001, {})},
                                [("b", {"reason": "instrument b: no readings in idle"}),
                                 ("c", {"idle_power_w": (0.08, None, {})})])
    b, c = found["idle_power_w"]["others"]
    assert b["value"] is None and b["reason"] == "instrument b: no readings in idle"
    assert c["en"] is None and "not stated" in c["reason"] and not c["flagged"]
    assert found["idle_power_w"]["disagree"] == []


def test_the_cell_text_names_the_disagreeing_instrument_over_runs():
    runs = [compare_instruments("a", {"p": (1.0, 0.01, {})},
                                [("b", {"p": (1.0 + d, 0.01, {})}),
                                 ("c", {"p": (1.03, 0.01, {})})])["p"]
            for d in (0.001, -0.002)]
    metas = [{"instruments": r} for r in runs] + [None, {}]
    text = disagreement_text(metas)
    assert "b 0.9995 ± 0.01 (mean of 2 runs) agrees with a: E_n ≤ 0.14" in text
    assert "c 1.03 ± 0.01 (mean of 2 runs) DISAGREES with a: E_n up to 2.1 (2/2 runs above 1)" \
        in text
    assert disagreeing_instruments(metas) == ["c"]
    assert disagreement_text([{}, None]) == "" and disagreeing_instruments([None]) == []
