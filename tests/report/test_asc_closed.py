"""Closed vs open ASC rows (issue 36): a row without a NIR graph says `open`; the leaderboard
puts closed rows together, one block per graph, before the open ones, each block in the order
found; the ratio of measured to modelled energy carries the measured figure's uncertainty."""

from __future__ import annotations

import pytest

from hilbench.workloads.asc.report.closed import EnergyComparison, closed_fields, order_rows
from hilbench.workloads.asc.report.table import AscGroup


def test_a_group_without_a_graph_is_open():
    assert closed_fields(AscGroup(agent="cpu0", params={"model": "m.npz"})) == {
        "asc_category": "open"}


def test_closed_rows_are_grouped_by_graph_before_open_rows():
    rows = [{"entry": "a", "asc_category": "open"},
            {"entry": "b", "asc_category": "closed", "asc_graph_sha256": "g1"},
            {"entry": "c", "asc_category": "closed", "asc_graph_sha256": "g2"},
            {"entry": "q", "benchmark": "qubo"},
            {"entry": "d", "asc_category": "closed", "asc_graph_sha256": "g1"}]
    assert [r["entry"] for r in order_rows(rows)] == ["b", "d", "c", "a", "q"]


def test_the_ratio_scales_the_measured_uncertainty_and_needs_both_figures():
    e = EnergyComparison(measured_j=8e-6, measured_u95_j=2e-7, modelled_j=2e-7)
    assert e.ratio == pytest.approx(40.0) and e.ratio_u95 == pytest.approx(1.0)
    assert EnergyComparison(None, None, 2e-7, "no power runs").ratio is None
    assert EnergyComparison(8e-6, None, 0.0).ratio is None
