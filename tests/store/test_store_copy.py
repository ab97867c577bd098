"""Runs copied between stores of either back end: whole, idempotent by run id, checked."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from hilbench.documents import Metric
from hilbench.store import Store, StoreWriter
from hilbench.store.copy import RunConflict, compare_runs, copy_runs
from tests.campaign_toml import agent, campaign, qubo, table
from tests.postgres import fresh_database
from tests.subprocesses import hilbench, run_campaign


def _two_runs(db, full_run, begin_run) -> list[str]:
    with StoreWriter(db) as writer:
        writer.begin_campaign("camp", "copy-test", {"x": 1})
        done = full_run(writer, unit_key="n=10/seed=0", n_samples=300)
        left_open = begin_run(writer, unit_key="n=10/seed=1")
        writer(Metric(left_open, "bks_gap", float("nan"), "", None))
        writer.end_campaign("camp", "abort", "interrupted")
    return [done, left_open]


def _store(tmp_path: Path, name: str) -> Path:
    return tmp_path / name


def test_runs_copy_whole_and_again_is_a_no_op(store_url, tmp_path, full_run, begin_run):
    src = tmp_path / "src.sqlite"
    uids = _two_runs(src, full_run, begin_run)
    first = copy_runs(src, store_url)
    assert first.copied == uids and first.skipped == [] and first.campaigns == 1
    again = copy_runs(src, store_url)
    assert again.copied == [] and again.skipped == uids
    check = compare_runs(src, store_url)
    assert check.difference is None and check.runs == 2
    assert check.counts["samples"] == 300 and check.counts["metrics"] == 2
    with Store(src) as a, Store(store_url) as b:
        assert a.campaigns()[0] == b.campaigns()[0]
        assert [r for r in a.iter_runs()] == [r for r in b.iter_runs()]
        for uid in uids:
            assert a.phases(uid) == b.phases(uid) and a.events(uid) == b.events(uid)
        t_a, v_a = a.samples(uids[0])
        t_b, v_b = b.samples(uids[0])
        assert t_a.tobytes() == t_b.tobytes() and v_a.tobytes() == v_b.tobytes()
        assert b.run(uids[1])["status"] == "incomplete"


def test_a_different_run_of_the_same_id_is_refused_by_name(store_url, tmp_path, full_run,
                                                           begin_run):
    src = tmp_path / "src.sqlite"
    uids = _two_runs(src, full_run, begin_run)
    copy_runs(src, store_url, [uids[0]])
    # The source's open run finishes later; the copy of the finished one is altered.
    with StoreWriter(store_url) as writer:
        writer._connection().execute("UPDATE metrics SET value = 0.5 WHERE run_uid = ?",
                                     (uids[0],))
    with pytest.raises(RunConflict, match=rf"run {uids[0]} .*metrics row 1, value: 0\.0 != 0\.5"):
        copy_runs(src, store_url)
    assert compare_runs(src, store_url, [uids[0]]).difference.startswith(f"run {uids[0]}")


@pytest.mark.slow
def test_a_demo_shaped_campaign_goes_to_postgresql_and_back_identical(tmp_path):
    """The demo's shape (spawned CPU agent, SA and Tabu at fixed timeouts, the simulated
    Keysight meter), smaller; copied SQLite -> PostgreSQL -> SQLite with `hilbench store copy`,
    and `hilbench results` reads the same on all three."""
    toml = tmp_path / "demo-small.toml"
    toml.write_text(campaign(
        agent("cpu0"),
        qubo(nodes=[10, 25], seeds=[0, 1], solvers=["sa", "tabu"], timeouts_s=[0.001, 0.02]),
        table("[[instruments]]", id="dmm", driver="keysight34465a", measures="cpu0",
              simulate="simulated-cpu"),
        table("[instruments.settings]", function="current", range=10.0, nplc=0.02,
              autozero=False, sample_interval_s=0.001, supply_voltage_v=12.0),
        name="demo-small",
    ))
    src = tmp_path / "demo.sqlite"
    ran = run_campaign(toml, src)
    assert ran.returncode in (0, 1), ran.stderr
    with fresh_database("hb_test") as url:
        there = hilbench("store", "copy", src, url)
        assert there.returncode == 0, there.stderr
        back_db = tmp_path / "back.sqlite"
        back = hilbench("store", "copy", url, back_db)
        assert back.returncode == 0, back.stderr
        n_runs = sqlite3.connect(src).execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        units = sqlite3.connect(src).execute(
            "SELECT COUNT(DISTINCT unit_key) FROM runs").fetchone()[0]
        assert units == 16 and n_runs >= 16  # a loaded host's unverified runs were repeated
        for out in (there.stdout, back.stdout):
            assert f"copied {n_runs} run(s)" in out and f"check: {n_runs} run(s) identical" in out
        assert "sample batches" in back.stdout
        for args in (["--all"], [], ["--format", "csv"]):  # every run; groups; csv
            listings = [hilbench("results", "--db", db, *args).stdout
                        for db in (src, url, back_db)]
            assert listings[0] == listings[1] == listings[2]
            assert "bks_gap" in listings[0] or "BKS" in listings[0]
        again = hilbench("store", "copy", src, url)
        assert "copied 0 run(s)" in again.stdout and f"{n_runs} already there" in again.stdout
    with Store(src) as a, Store(back_db) as b:
        assert list(a.iter_runs()) == list(b.iter_runs())
        for run in a.runs():
            for source in a.sample_sources(run["uid"]):
                t_a, v_a = a.samples(run["uid"], source["source"])
                t_b, v_b = b.samples(run["uid"], source["source"])
                assert t_a.tobytes() == t_b.tobytes() and v_a.tobytes() == v_b.tobytes()
