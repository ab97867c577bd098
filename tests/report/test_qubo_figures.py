"""The report's QUBO figures (BKS-gap and average power against the fixed timeout: the
NeuroBench paper's QUBO system-track figures) draw the stored runs: a panel per graph size and
density, a series per solver, each point the mean over the seeds worked out here again from the
store's metrics (not from pixels); the power points carry the uncertainty of their mean, and a
figure built on a simulated meter says so."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

import pytest

from hilbench.report.campaign_data import load_campaign_data
from hilbench.store import Store
from hilbench.workloads.qubo.report.figures import (
    Source,
    fixed_timeout_data,
    gap_figure,
    power_figure,
    timeout_series,
)
from tests.report.qubo_store import write_qubo_store

pytest.importorskip("matplotlib")


@pytest.fixture
def stored(tmp_path):
    db = tmp_path / "q.sqlite"
    uid = write_qubo_store(db)
    return db, uid


def _expected(db, uid):
    """Per (nodes, density), solver, timeout: the feasible gaps and the power figures."""
    found = defaultdict(lambda: defaultdict(lambda: defaultdict(lambda: ([], []))))
    with Store(db) as store:
        for run in store.campaign_runs(uid):
            if run["procedure"] != "qubo.fixed_timeout" or run["status"] != "success":
                continue
            p = run["params"]
            metrics = {m["name"]: m for m in store.metrics(run["uid"])}
            gaps, powers = found[(p["nodes"], p["density"])][p["solver"]][p["timeout_s"]]
            if metrics["feasible"]["value"] == 1.0 and metrics["bks_gap"]["value"] is not None:
                gaps.append(metrics["bks_gap"]["value"])
            power = metrics.get("avg_power_w")
            if power and power["value"] is not None:
                powers.append((power["value"], power["uncertainty"]))
    return found


def test_each_point_is_the_mean_of_the_stored_runs_of_its_panel_series_and_timeout(stored):
    db, uid = stored
    data = fixed_timeout_data([Source("qubo-test", load_campaign_data(db, uid))])
    expected = _expected(db, uid)
    assert list(data.panels) == sorted(expected) == [(10, 0.05), (50, 0.05)]
    assert data.series == ["sa", "tabu"]  # one line per solver
    gaps, powers = timeout_series(data, "gap"), timeout_series(data, "power")
    drawn_gaps = drawn_powers = 0
    for panel, solvers in expected.items():
        for solver, timeouts in solvers.items():
            want_gap = [(t, 100 * statistics.fmean(g), None)
                        for t, (g, _) in sorted(timeouts.items()) if g]
            want_power = [(t, statistics.fmean(v for v, _ in p),
                           math.sqrt(sum(u * u for _, u in p)) / len(p))
                          for t, (_, p) in sorted(timeouts.items()) if p]
            assert _flat(gaps[panel][solver]) == pytest.approx(_flat(want_gap)), (panel, solver)
            assert _flat(powers[panel][solver]) == pytest.approx(_flat(want_power)), panel
            drawn_gaps += len(want_gap)
            drawn_powers += len(want_power)
    # The store holds an infeasible answer: its timeout keeps the other seed's gap only.
    assert drawn_gaps == 2 * 2 * 3 and drawn_powers > 0
    assert all(err is not None and err > 0 for panel in powers.values()
               for series in panel.values() for _, _, err in series)


def _flat(points):
    return [x for point in points for x in point]


def test_the_figures_label_their_panels_and_axes_and_say_simulated(stored, tmp_path):
    db, uid = stored
    data = fixed_timeout_data([Source("qubo-test", load_campaign_data(db, uid))])
    assert data.simulation  # the store's runs used a simulated meter
    _, gap_svg = gap_figure(data, tmp_path)  # (png, svg)
    power = power_figure(data, tmp_path)
    assert power is not None
    for svg, ylabel in ((gap_svg, "BKS-gap (%)"), (power[1], "average power (W), from 0")):
        text = svg.read_text()
        for label in ("n = 10, density 5 %", "n = 50, density 5 %", "timeout (s)", ylabel,
                      "sa", "tabu"):
            assert f"<!-- {label} -->" in text, (svg.name, label)
        assert "SIMULATED" in text, svg.name
