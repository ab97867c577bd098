"""Run listings at scale: replicate groups, SQL-side summaries and the indexes filters use."""

from __future__ import annotations

import math
import sqlite3
import statistics
import time

import pytest

from hilbench.documents import Metric, RunStart, RunStop, new_uid
from hilbench.store import Store, StoreWriter
from hilbench.store.groups import install_functions, replicate_key
from hilbench.store.listing import RunFilter


@pytest.mark.parametrize(
    ("key", "group"),
    [
        ("qubo/fixed_timeout/n=10/d=0.1/seed=3/sa/timeout=0.01/rep=2",
         "qubo/fixed_timeout/n=10/d=0.1/seed=*/sa/timeout=0.01/rep=*"),
        ("asc/power/cpu0/1a2b3c4d/stream=5/rep=0", "asc/power/cpu0/1a2b3c4d/stream=5/rep=*"),
        ("words/seedling/repetitions=1", "words/seedling/repetitions=1"),  # not replicate keys
        ("", ""),
    ],
)
def test_replicate_key_blanks_only_seed_and_repetition(key, group):
    assert replicate_key(key) == group


def test_std_error_aggregate_matches_statistics():
    conn = sqlite3.connect(":memory:")
    install_functions(conn)
    values = [1e9 + v for v in (0.1, 0.4, 0.2, 0.9, 0.5)]  # large offset: no cancellation
    conn.execute("CREATE TABLE t (v REAL)")
    conn.executemany("INSERT INTO t VALUES (?)", [(v,) for v in [*values, None]])
    got = conn.execute("SELECT std_error(v) FROM t").fetchone()[0]
    assert got == pytest.approx(statistics.stdev(values) / len(values) ** 0.5, rel=1e-6)
    assert conn.execute("SELECT std_error(v) FROM t WHERE v < 1e9 + 0.15").fetchone()[0] is None


def _write_group(path, values_by_key: dict[str, list[float]]) -> None:
    with StoreWriter(path) as writer:
        for key, values in values_by_key.items():
            for seed, value in enumerate(values):
                uid = new_uid()
                unit_key = f"qubo/fixed_timeout/n=10/d=0.1/seed={seed}/sa/timeout={key}/rep=0"
                writer(RunStart(uid, "c", unit_key, "qubo.fixed_timeout", {}, {}, 0.0,
                                time.time(), "0"))
                writer(Metric(uid, "avg_power_w", value, "W"))
                writer(RunStop(uid, 1.0, "success"))


def test_a_group_of_one_value_rounded_differently_has_no_spread_on_either_back_end(store_url):
    """Power figures of 38 W and 38 W + 1 ulp are one value: SQLite's Welford sum gives 0 or
    5e-15 by the rows' order and PostgreSQL's stddev_samp 7e-15; `results` must read the same
    on both (CI saw `38 ± 7.1e-15` against `38 ± 0`)."""
    up = math.nextafter(38.0, 99.0)
    spread = [38.0, 38.5, 38.25]
    _write_group(store_url, {"0.01": [38.0, up], "0.02": [up, 38.0, up], "0.03": spread})
    with Store(store_url) as store:
        _, groups = store.run_groups(RunFilter(), None)
    errors = {g.key.split("timeout=")[1].split("/")[0]: g.metrics[0].std_error for g in groups}
    assert errors["0.01"] == 0.0 and errors["0.02"] == 0.0
    assert errors["0.03"] == pytest.approx(statistics.stdev(spread) / 3**0.5, rel=1e-9)


def test_procedure_filter_matches_the_family_not_a_prefix_of_its_name(store_url):
    path = store_url
    with StoreWriter(path) as writer:
        for procedure in ("qubo.fixed_timeout", "qubo.time_to_solution", "qubox.other",
                          "qubo_like"):
            uid = new_uid()
            writer(RunStart(uid, "c", f"{procedure}/k", procedure, {}, {}, 0.0, time.time(), "0"))
            writer(Metric(uid, "m", 1.0, ""))
            writer(RunStop(uid, 1.0, "success"))
    with Store(path) as store:
        found = {r["procedure"] for r in store.iter_runs(RunFilter(procedure="qubo"))}
        assert found == {"qubo.fixed_timeout", "qubo.time_to_solution"}
        assert store.count_runs(RunFilter(procedure="qubo.fixed_timeout")) == 1
        assert store.count_runs(RunFilter(procedure="qubo_")) == 0  # _ is not a wildcard


@pytest.mark.parametrize(
    ("flt", "index"),
    [
        (RunFilter(campaign_uid="c"), "runs_by_campaign"),
        (RunFilter(procedure="qubo.fixed_timeout"), "runs_by_procedure"),
        (RunFilter(), "runs_by_time"),
    ],
)
def test_filters_and_ordering_use_an_index(tmp_path, flt, index):
    path = tmp_path / "i.sqlite"
    StoreWriter(path).close()
    with Store(path) as store:
        where, args = flt.where()
        plan = store._conn.execute(
            f"EXPLAIN QUERY PLAN SELECT * FROM runs r{where} ORDER BY r.wall_time", args
        ).fetchall()
    assert any(index in row[-1] for row in plan), plan



@pytest.mark.parametrize("flt", [RunFilter(), RunFilter(campaign_uid="c")])
def test_grouping_reads_the_group_index_alone(tmp_path, flt):
    """`hilbench results` groups every stored run: at 100 000 runs, reading each run's row
    (not just the index) and sorting made it slower than a second on SQLite."""
    from hilbench.store.listing import group_counts_sql

    path = tmp_path / "g.sqlite"
    StoreWriter(path).close()
    with Store(path) as store:
        where, args = flt.where()
        plan = [row[-1] for row in store._conn.execute(
            f"EXPLAIN QUERY PLAN {group_counts_sql(where)}", args).fetchall()]
    assert any("COVERING INDEX runs_by_group" in step for step in plan), plan
    assert not any("TEMP B-TREE" in step for step in plan), plan


def test_only_the_shown_groups_runs_are_read_for_their_metrics(store_url):
    """The newest groups' metrics: each group an index search, not a scan of every run."""
    _write_group(store_url, {f"0.0{i}": [30.0 + i, 31.0 + i] for i in range(1, 6)})
    with Store(store_url) as store:
        total, groups = store.run_groups(RunFilter(), 2)
        everything = store.run_groups(RunFilter(), None)[1]
    assert total == 5 and [g.key for g in groups] == [g.key for g in everything[-2:]]
    assert [g.metrics[0].mean for g in groups] == [34.5, 35.5]
    assert all(g.campaign_name is None for g in groups)  # campaign "c" was never begun


def test_an_older_store_gets_its_groups_filled_in_when_opened(tmp_path):
    from hilbench.store.schema import APPLICATION_ID, MIGRATIONS

    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    for statement in (s for step in MIGRATIONS[:2] for s in step):
        conn.execute(statement)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute("PRAGMA user_version = 2")
    for seed in (0, 1):
        conn.execute(
            "INSERT INTO runs (uid, campaign_uid, unit_key, procedure, params, agents, t_start,"
            " wall_time, hilbench_version, exit_status) VALUES (?, 'c', ?, 'qubo.fixed_timeout',"
            " '{}', '{}', 0, 0, '0', 'success')",
            (f"r{seed}", f"qubo/fixed_timeout/n=10/seed={seed}/rep=0"),
        )
    conn.commit()
    conn.close()
    with Store(path) as store:
        total, groups = store.run_groups()
    assert total == 1 and groups[0].key == "qubo/fixed_timeout/n=10/seed=*/rep=*"
    assert groups[0].statuses == {"success": 2}
