"""A store whose disk fills up, turns read-only or fails with an I/O error stops the campaign with
exit 4, one line saying why and the command that resumes; no completed run is lost, and the
next run gives every campaign and run a status. The disk is a real, small tmpfs (the machine
and CI run as root, so it is mounted here), the campaign a real `hilbench run`."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from hilbench.store import Store, StoreWriter
from tests.campaign_toml import agent, campaign, qubo, write_campaign
from tests.disks import remount, small_tmpfs
from tests.subprocesses import hilbench, unit_runs

pytestmark = pytest.mark.slow

UNITS = 40  # 20 seeds x SA and Tabu on 10 nodes, 1 ms each


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs: a campaign's write-ahead log fills it after a few runs."""
    with small_tmpfs(tmp_path / "disk") as disk:
        yield disk


def _campaign(tmp_path: Path) -> Path:
    sweep = qubo(nodes=[10], seeds=list(range(UNITS // 2)), solvers=["sa", "tabu"],
                 timeouts_s=[0.001])
    return write_campaign(tmp_path, campaign(agent(), sweep, name="full"))


def _resume_line_last(text: str, path: Path, db: Path) -> bool:
    """The last line printed is the command that resumes (as it was invoked)."""
    last = text.strip().splitlines()[-1]
    return last.startswith("to resume: ") and last.endswith(f" run {path} --db {db}")


def test_a_full_disk_stops_with_exit_4_and_the_next_run_completes_every_status(
    tmp_path, small_disk
):
    """README exit-code table, row 4."""
    path = _campaign(tmp_path)
    db = small_disk / "s.sqlite"
    first = hilbench("run", path, "--db", db, "-q")
    assert first.returncode == 4, first.stderr
    assert "Traceback" not in first.stderr
    assert "the disk is full" in first.stderr
    assert _resume_line_last(first.stderr, path, db)
    # Every run reported complete (one line per finished run on stdout) is in the store.
    reported = {
        line.split()[2] for line in first.stdout.splitlines() if " success; " in line
    }
    assert 0 < len(reported) < UNITS
    with Store(db) as store:
        kept = {r["uid"][:8]: r for r in unit_runs(store) if r["status"] == "success"}
    assert set(kept) == reported

    remount(small_disk, "size=32m")  # space returns
    second = hilbench("run", path, "--db", db, "-q")
    assert second.returncode == 0, second.stderr
    with Store(db) as store:
        [row] = store.campaigns()
        runs = unit_runs(store)
    assert row["status"] == "success"
    assert all(r["status"] is not None and r["status"] != "incomplete" for r in runs), runs
    succeeded = [r for r in runs if r["status"] == "success"]
    assert len(succeeded) == UNITS == len({r["unit_key"] for r in succeeded})
    assert {r["uid"][:8] for r in succeeded} >= reported  # 0 completed results lost
    left_open = [r for r in runs if r["status"] != "success"]
    # Aborted with the store's reason: found on resume, or the fault itself when the stop
    # document still fitted (the failed write's rollback freed the pages it needed).
    assert all(r["status"] == "abort"
               and ("store could not be" in r["reason"] or "disk is full" in r["reason"])
               for r in left_open), left_open


def test_a_store_on_a_read_only_file_system_exits_4_before_anything_starts(tmp_path, small_disk):
    db = small_disk / "s.sqlite"
    StoreWriter(db).close()
    remount(small_disk, "ro")
    try:
        path = _campaign(tmp_path)
        done = hilbench("run", path, "--db", db, "-q")
    finally:
        remount(small_disk, "rw")
    assert done.returncode == 4, done.stderr
    assert "read-only file system" in done.stderr and "Traceback" not in done.stderr
    assert _resume_line_last(done.stderr, path, db)
    assert sorted(p.name for p in small_disk.iterdir()) == ["s.sqlite"]


@pytest.mark.parametrize(
    ("code", "words"), [(10, "an I/O error"), (13, "the disk is full"), (8, "read-only")]
)
def test_an_error_of_the_medium_from_sqlite_stops_the_campaign_with_exit_4(
    tmp_path, monkeypatch, code, words
):
    """Supplement to the real disks above: SQLite's own I/O error, full and read-only codes
    raised on the third metric (mid-run) take the same path."""
    from hilbench.cli import cli

    calls = {"n": 0}
    real_metric = StoreWriter.metric

    def failing_metric(self, doc):
        calls["n"] += 1
        if calls["n"] == 3:
            exc = sqlite3.OperationalError("injected")
            exc.sqlite_errorcode = code
            raise exc
        return real_metric(self, doc)

    monkeypatch.setattr(StoreWriter, "metric", failing_metric)
    path = write_campaign(tmp_path, campaign(agent(), qubo(seeds=[0, 1]), name="io"))
    db = tmp_path / "s.sqlite"
    result = CliRunner().invoke(cli, ["run", str(path), "--db", str(db), "-q"])
    assert result.exit_code == 4, result.output
    assert words in result.output and "injected" in result.output
    assert "to resume: " in result.output and f" run {path} --db {db}" in result.output
    with Store(db) as store:
        [row] = store.campaigns()
        [run] = unit_runs(store)
    assert row["status"] == "abort"  # the store still took the statuses: completed at once
    assert run["status"] == "abort" and words in run["reason"]
