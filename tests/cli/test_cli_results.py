"""`hilbench results` reads a real store file back as table, CSV and JSON."""

from __future__ import annotations

import csv
import io
import json
import time

import numpy as np
import pytest
from click.testing import CliRunner

from hilbench.cli import EXIT_OK, EXIT_USAGE, cli
from hilbench.documents import (
    Event,
    Metric,
    PhaseStart,
    PhaseStop,
    RunStart,
    RunStop,
    Samples,
    new_uid,
)
from hilbench.store import StoreWriter


def _run(writer, campaign, unit, status="success", reason="", gap=0.02):
    uid = new_uid()
    params = {"nodes": 50, "density": 0.05, "seed": int(unit[-1])}
    writer(RunStart(uid, campaign, unit, "qubo.fixed_timeout", params, {}, 10.0, time.time(), "0"))
    phase = new_uid()
    writer(PhaseStart(phase, uid, "solve", 10.0, {}))
    writer(Event(uid, phase, "solution", 10.4, {"cost": -20}))
    writer(Event(uid, phase, "solution", 10.9, {"cost": -21}))
    writer(Samples(uid, phase, "rapl", "W", np.linspace(10, 11, 11), np.full(11, 30.0)))
    writer(PhaseStop(phase, uid, 11.0, "success"))
    writer(Metric(uid, "bks_gap", gap, "", 0.001))
    writer(Metric(uid, "power.avg", 30.0, "W", 0.5))
    writer(RunStop(uid, 11.5, status, reason))
    return uid


@pytest.fixture
def store(tmp_path):
    path = tmp_path / "bench.sqlite"
    with StoreWriter(path) as writer:
        writer.begin_campaign("qubo-sweep-1", "sweep", {})
        uids = [
            _run(writer, "qubo-sweep-1", "seed0"),
            _run(writer, "qubo-sweep-1", "seed1", "fail", "agent cpu@host lost", gap=None),
            _run(writer, "asc-power-1", "seed2"),
        ]
    return path, uids


def _invoke(*args):
    return CliRunner().invoke(cli, ["results", *args])


def test_csv_lists_one_row_per_run_and_metric(store):
    path, uids = store
    result = _invoke("--db", str(path), "--format", "csv")
    assert result.exit_code == EXIT_OK, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert len(rows) == 6
    failed = [r for r in rows if r["run_uid"] == uids[1]]
    assert {r["status"] for r in failed} == {"fail"}
    assert failed[0]["reason"] == "agent cpu@host lost"
    gap = next(r for r in failed if r["metric"] == "bks_gap")
    assert gap["value"] == ""  # no value stays empty, never 0
    power = next(r for r in rows if r["run_uid"] == uids[0] and r["metric"] == "power.avg")
    assert (float(power["value"]), float(power["uncertainty"]), power["unit"]) == (30.0, 0.5, "W")
    assert json.loads(power["params"])["nodes"] == 50


def test_json_is_one_document_with_every_run_and_its_metrics(store):
    path, uids = store
    result = _invoke("--db", str(path), "--format", "json", "--campaign", "qubo")
    assert result.exit_code == EXIT_OK, result.output
    document = json.loads(result.stdout)
    assert [r["uid"] for r in document["runs"]] == uids[:2]
    assert document["runs"][0]["metrics"][0] == {
        "name": "bks_gap",
        "value": 0.02,
        "uncertainty": 0.001,
        "unit": "",
        "meta": {},
    }


def test_run_detail_by_prefix_shows_phases_events_and_samples(store):
    path, uids = store
    result = _invoke("--db", str(path), "--run", uids[0][:10], "--format", "json")
    assert result.exit_code == EXIT_OK, result.output
    detail = json.loads(result.stdout)
    assert detail["run"]["uid"] == uids[0]
    assert [p["name"] for p in detail["phases"]] == ["solve"]
    assert detail["event_counts"] == {"solution": 2}
    assert detail["samples"][0]["source"] == "rapl" and detail["samples"][0]["n"] == 11

    table = _invoke("--db", str(path), "--run", uids[1][:10])
    assert table.exit_code == EXIT_OK, table.output
    for expected in (uids[1], "fail", "agent cpu@host lost", "solve", "rapl", "power.avg"):
        assert expected in table.stdout


def test_all_table_shows_short_uid_status_and_metric_with_uncertainty(store):
    path, uids = store
    result = _invoke("--db", str(path), "--all")
    assert result.exit_code == EXIT_OK, result.output
    assert uids[0][:8] in result.stdout
    assert "30 ± 0.5 W" in result.stdout
    assert "fail" in result.stdout


def test_default_db_comes_from_hilbench_db(store, monkeypatch):
    path, _ = store
    monkeypatch.setenv("HILBENCH_DB", str(path))
    result = _invoke("--format", "json")
    assert len(json.loads(result.stdout)["runs"]) == 3


def test_missing_store_is_a_usage_error_naming_the_file(tmp_path):
    missing = tmp_path / "missing.sqlite"
    result = _invoke("--db", str(missing))
    assert result.exit_code == EXIT_USAGE
    assert "missing.sqlite" in result.stderr and "does not exist" in result.stderr
    assert not missing.exists()


def test_unknown_run_is_a_usage_error(store):
    path, _ = store
    unknown = _invoke("--db", str(path), "--run", "zzzz")
    assert unknown.exit_code == EXIT_USAGE and "no run matching 'zzzz'" in unknown.stderr


def test_empty_store_says_so(tmp_path):
    path = tmp_path / "empty.sqlite"
    StoreWriter(path).close()
    result = _invoke("--db", str(path))
    assert result.exit_code == EXIT_OK and "no runs" in result.stdout
    assert json.loads(_invoke("--db", str(path), "--format", "json").stdout)["runs"] == []


def test_a_simulated_run_says_so_in_every_format(tmp_path):
    path = tmp_path / "sim.sqlite"
    with StoreWriter(path) as writer:
        real = _run(writer, "c", "seed0")
        sim = new_uid()
        writer(RunStart(sim, "c", "seed1", "asc.power", {}, {}, 0.0, time.time(), "0",
                        simulated=True, simulation="instrument dmm0: simulated bench meter"))
        writer(Metric(sim, "idle_power_w", 12.0, "W", 0.1))
        writer(RunStop(sim, 1.0, "success"))
    table = _invoke("--db", str(path), "--all")
    assert table.exit_code == EXIT_OK, table.output
    (sim_line,) = [line for line in table.stdout.splitlines() if sim[:8] in line]
    assert "SIMULATED" in sim_line
    assert not any("SIMULATED" in line for line in table.stdout.splitlines() if real[:8] in line)
    rows = list(csv.DictReader(io.StringIO(_invoke("--db", str(path), "--format", "csv").stdout)))
    assert {r["simulated"] for r in rows if r["run_uid"] == sim} == {
        "instrument dmm0: simulated bench meter"}
    assert {r["simulated"] for r in rows if r["run_uid"] == real} == {""}
    groups = _invoke("--db", str(path)).stdout.splitlines()
    (sim_group,) = [line for line in groups if "asc.power" in line]
    assert "SIMULATED" in sim_group
    assert not any("SIMULATED" in line for line in groups if "qubo.fixed_timeout" in line)
    detail = _invoke("--db", str(path), "--run", sim[:8])
    assert "instrument dmm0: simulated bench meter" in detail.stdout
# -- summaries, filters and campaign names ------------------------------------------------------

KEY = "qubo/fixed_timeout/n={n}/d=0.05/seed={seed}/sa/timeout=0.01/rep={rep}"


def _grid_campaign(writer, name, gaps_by_n, fail=()):
    """A campaign whose runs differ in n, seed and repetition; ``fail`` lists failed (n, seed)."""
    campaign = new_uid()
    writer.begin_campaign(campaign, name, {})
    for n, gaps in gaps_by_n.items():
        for i, gap in enumerate(gaps):
            seed, rep = i % 2, i // 2
            uid = new_uid()
            status = "fail" if (n, seed) in fail else "success"
            writer(RunStart(uid, campaign, KEY.format(n=n, seed=seed, rep=rep),
                            "qubo.fixed_timeout", {"nodes": n, "seed": seed}, {}, 0.0,
                            time.time(), "0"))
            writer(Metric(uid, "bks_gap", gap, "", 0.001))
            writer(RunStop(uid, 1.0, status, "agent lost" if status == "fail" else ""))
    writer.end_campaign(campaign, "success")
    return campaign


@pytest.fixture
def grid(tmp_path):
    path = tmp_path / "grid.sqlite"
    with StoreWriter(path) as writer:
        old = _grid_campaign(writer, "sweep", {10: [0.5, 0.5]})
        new = _grid_campaign(writer, "sweep", {10: [0.01, 0.03, 0.02, 0.04], 25: [0.1, 9.9]},
                             fail={(25, 1)})
        other = _grid_campaign(writer, "other", {50: [0.2]})
    return path, old, new, other


def test_table_summarises_replicates_and_never_averages_failed_runs(grid):
    path, *_ = grid
    result = _invoke("--db", str(path), "--campaign", "sweep", "--format", "table")
    assert result.exit_code == EXIT_OK, result.output
    out = result.stdout
    assert "6 run(s) in 2 group(s)" in out
    assert "n=10/d=0.05/seed=*/sa/timeout=0.01/rep=*" in out
    # seeds 0 and 1, repetitions 0 and 1: mean 0.025, sample std 0.0129, std error 0.0065
    assert "bks_gap: 0.025 ± 0.0065 [4]" in out
    # n=25: one success (0.1), the failed run's 9.9 is counted but not averaged
    assert "bks_gap: 0.1 [1]" in out and "1 fail" in out and "9.9" not in out
    assert "every run: --all, or --format csv|json" in out


def test_campaign_name_picks_the_newest_of_that_name_and_says_so(grid):
    path, old, new, _other = grid
    result = _invoke("--db", str(path), "--campaign", "sweep", "--format", "json")
    assert result.exit_code == EXIT_OK, result.output
    assert {r["campaign_uid"] for r in json.loads(result.stdout)["runs"]} == {new}
    assert f"2 campaigns are named 'sweep'; showing the newest, {new[:8]}" in result.stderr
    assert old[:8] in result.stderr
    by_uid = _invoke("--db", str(path), "--campaign", old[:10], "--format", "json")
    assert {r["campaign_uid"] for r in json.loads(by_uid.stdout)["runs"]} == {old}
    missing = _invoke("--db", str(path), "--campaign", "nosuch")
    assert missing.exit_code == EXIT_USAGE and "no campaign matching 'nosuch'" in missing.stderr


def test_procedure_and_status_filters(grid):
    path, *_ = grid
    failed = _invoke("--db", str(path), "--status", "fail", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(failed.stdout)))
    assert [r["status"] for r in rows] == ["fail"] and "seed=1" in rows[0]["unit_key"]
    every = _invoke("--db", str(path), "--procedure", "qubo", "--format", "json")
    assert len(json.loads(every.stdout)["runs"]) == 9
    assert json.loads(_invoke("--db", str(path), "--procedure", "qub", "--format",
                              "json").stdout)["runs"] == []
    none = _invoke("--db", str(path), "--procedure", "asc")
    assert none.exit_code == EXIT_OK and "matching the filters" in none.stdout


def test_limits_say_what_was_left_out(grid):
    path, *_ = grid
    groups = _invoke("--db", str(path), "--limit", "1")
    assert "showing the newest 1 of 4 groups (--limit 0 shows all)" in groups.stdout
    assert "other" in groups.stdout and "sweep" not in groups.stdout
    runs = _invoke("--db", str(path), "--all", "--limit", "2")
    assert "9 run(s), the newest 2" in runs.stdout
    assert "showing 2 of 9 runs" in runs.stdout


def test_overruns_and_infeasible_answers_are_flagged_in_the_table(tmp_path):
    """An overrun or an infeasible answer is said beside the statuses, per group and per run,
    not left to a metric mean that a reader has to interpret."""
    path = tmp_path / "flags.sqlite"
    with StoreWriter(path) as writer:
        writer.begin_campaign("flags-1", "flags", {})
        for seed, overrun, feasible in [(0, 1.0, 1.0), (1, 0.0, 0.0), (2, 0.0, 1.0)]:
            uid = new_uid()
            unit = f"qubo/fixed_timeout/n=50/d=0.05/seed={seed}/sa/timeout=0.001/rep=0"
            params = {"nodes": 50, "density": 0.05, "seed": seed}
            writer(RunStart(uid, "flags-1", unit, "qubo.fixed_timeout", params, {}, 1.0,
                            time.time(), "0"))
            writer(Metric(uid, "overrun", overrun, "", None))
            writer(Metric(uid, "feasible", feasible, "", None))
            writer(RunStop(uid, 2.0, "success", ""))
    grouped = _invoke("--db", str(path))
    assert grouped.exit_code == EXIT_OK, grouped.output
    assert "OVERRUN 1/3" in grouped.output
    assert "INFEASIBLE 1/3" in grouped.output
    every = _invoke("--db", str(path), "--all")
    assert every.exit_code == EXIT_OK, every.output
    assert every.output.count("OVERRUN") == 1
    assert every.output.count("INFEASIBLE") == 1


def test_an_infeasible_runs_cost_is_counted_never_averaged(tmp_path):
    """`hilbench results` averaged cost over an infeasible run too (-7.25 with a +9 in it)."""
    path = tmp_path / "cost.sqlite"
    with StoreWriter(path) as writer:
        writer.begin_campaign("cost-1", "cost", {})
        for seed, feasible, cost in [(0, 1.0, -12.0), (1, 1.0, -13.0), (2, 1.0, -13.0),
                                     (3, 0.0, 9.0)]:
            uid = new_uid()
            unit = f"qubo/fixed_timeout/n=50/d=0.05/seed={seed}/sa/timeout=0.1/rep=0"
            writer(RunStart(uid, "cost-1", unit, "qubo.fixed_timeout", {"seed": seed}, {}, 1.0,
                            time.time(), "0"))
            writer(Metric(uid, "feasible", feasible, "", None))
            writer(Metric(uid, "cost", cost, "", None))
            writer(RunStop(uid, 2.0, "success", ""))
    data = _invoke("--db", str(path))
    assert data.exit_code == EXIT_OK, data.output
    assert "-12.67" in data.output and "-7.25" not in data.output
    assert "INFEASIBLE 1/4" in data.output
