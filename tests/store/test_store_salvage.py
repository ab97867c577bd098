"""A store cut short (a copy that stopped half way, a disk that lost its tail): `hilbench store
check` says what is damaged and `hilbench store salvage` copies every run whose pages survive.
Which runs survive is decided by SQLite itself on the damaged copy: a run survives when each of
its rows in the original can still be read there by rowid (root, interior, leaf and overflow
pages all present)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from hilbench.cli import cli
from hilbench.store import StoreWriter
from tests.store.conftest import write_full_run

TABLES = ("phases", "events", "samples", "metrics")


def _rows(conn: sqlite3.Connection, table: str, where: str, *args) -> list[tuple]:
    return conn.execute(f"SELECT rowid, * FROM {table} WHERE {where} ORDER BY rowid",
                        args).fetchall()


def _make_store(path: Path, runs: int) -> None:
    """Runs of every size: some with samples that need overflow pages, some that stopped
    with fail or never stopped."""
    with StoreWriter(path) as writer:
        writer.begin_campaign("camp", "c", {"runs": runs})
        for i in range(runs):
            write_full_run(writer, unit_key=f"n=10/seed={i}", n_samples=[20, 300, 1500][i % 3],
                           exit_status="fail" if i % 7 == 3 else "success")


def _surviving(original: Path, damaged: Path) -> tuple[set[str], set[str]]:
    """Uids of the original's runs, and of those whose every row reads back from ``damaged``."""
    src = sqlite3.connect(original)
    cut = sqlite3.connect(f"{damaged.resolve().as_uri()}?immutable=1", uri=True)
    # SQLite refuses a file shorter than its header says unless the schema is writable; then
    # it reads what is there and reports each missing page as it meets it.
    cut.execute("PRAGMA writable_schema = ON")
    everyone, survivors = set(), set()
    for (uid,) in src.execute("SELECT uid FROM runs"):
        everyone.add(uid)
        wanted = [("runs", r) for r in _rows(src, "runs", "uid = ?", uid)]
        wanted += [(t, r) for t in TABLES for r in _rows(src, t, "run_uid = ?", uid)]
        try:
            ok = all(
                cut.execute(f"SELECT rowid, * FROM {t} WHERE rowid = ?", (row[0],)).fetchall()
                == [row]
                for t, row in wanted
            )
        except sqlite3.DatabaseError:  # a page on the way to a row is lost
            ok = False
        if ok:
            survivors.add(uid)
    src.close()
    cut.close()
    return everyone, survivors


def _compare(
    original: Path, out: Path, survivors: set[str], everyone: set[str]
) -> tuple[set[str], set[str]]:
    """Check the salvaged store ``out`` against the original; returns the recovered runs and
    those marked invalid."""
    src, new = sqlite3.connect(original), sqlite3.connect(out)
    recovered = {uid for (uid,) in new.execute("SELECT uid FROM runs")}
    assert survivors <= recovered <= everyone
    invalid = set()
    for uid in recovered:
        for table in TABLES:  # never a row that was not in the original
            assert set(_rows(new, table, "run_uid = ?", uid)) <= set(
                _rows(src, table, "run_uid = ?", uid))
        [was] = _rows(src, "runs", "uid = ?", uid)
        [now] = _rows(new, "runs", "uid = ?", uid)
        if now[12].startswith("invalid: salvaged"):
            assert now[11] == "fail"
            invalid.add(uid)
        else:
            assert now == was
    for uid in survivors:  # every row of a surviving run is there, as it was
        for table in TABLES:
            assert _rows(new, table, "run_uid = ?", uid) == _rows(src, table, "run_uid = ?", uid)
    # A run that lost rows is never passed off as intact.
    assert recovered - survivors <= invalid
    return recovered, invalid


@pytest.fixture(scope="module")
def original(tmp_path_factory) -> Path:
    """300 runs (3.6 MB): enough that tables split early and half the file holds whole runs."""
    path = tmp_path_factory.mktemp("original") / "original.sqlite"
    _make_store(path, 300)
    return path


@pytest.mark.slow
def test_salvage_of_a_store_cut_at_half_recovers_every_run_whose_pages_survive(
    tmp_path, original
):
    damaged = tmp_path / "damaged.sqlite"
    shutil.copyfile(original, damaged)
    with damaged.open("r+b") as fh:
        fh.truncate(original.stat().st_size // 2)
    everyone, survivors = _surviving(original, damaged)
    assert 0 < len(survivors) < len(everyone)

    runner = CliRunner()
    checked = runner.invoke(cli, ["store", "check", "--db", str(damaged)])
    assert checked.exit_code == 1, checked.output
    assert "DAMAGED" in checked.output and "the file is cut short" in checked.output
    assert "hilbench store salvage" in checked.output
    assert runner.invoke(cli, ["store", "check", "--db", str(original)]).exit_code == 0
    assert [p.name for p in tmp_path.iterdir()] == ["damaged.sqlite"]  # check wrote nothing

    out = tmp_path / "new.sqlite"
    done = runner.invoke(cli, ["store", "salvage", str(damaged), "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert oct(out.stat().st_mode & 0o777) == "0o600"

    _recovered, invalid = _compare(original, out, survivors, everyone)
    # Marking is conservative only next to a lost range: most surviving runs stay as they were.
    assert len(survivors - invalid) >= 0.8 * len(survivors), (len(survivors), len(invalid))
    [campaign] = sqlite3.connect(out).execute("SELECT uid, name FROM campaigns").fetchall()
    assert campaign == ("camp", "c")


def test_check_and_salvage_refuse_what_they_cannot_work_on(tmp_path):
    runner = CliRunner()
    text = tmp_path / "notes.txt"
    text.write_text("not a store\n")
    refused = runner.invoke(cli, ["store", "check", "--db", str(text)])
    assert refused.exit_code == 2 and "not a SQLite database" in refused.output
    store = tmp_path / "s.sqlite"
    _make_store(store, 3)
    taken = tmp_path / "taken.sqlite"
    taken.write_bytes(b"")
    again = runner.invoke(cli, ["store", "salvage", str(store), "--out", str(taken)])
    assert again.exit_code == 2 and "already exists" in again.output
    assert taken.read_bytes() == b""


@pytest.mark.parametrize("cut", [0.6, 0.75, 0.9])
def test_salvage_at_other_cuts_loses_no_surviving_run(tmp_path, original, cut):
    damaged = tmp_path / "damaged.sqlite"
    shutil.copyfile(original, damaged)
    with damaged.open("r+b") as fh:
        fh.truncate(int(original.stat().st_size * cut))
    everyone, survivors = _surviving(original, damaged)
    assert survivors
    out = tmp_path / "new.sqlite"
    assert CliRunner().invoke(cli, ["store", "salvage", str(damaged), "--out", str(out)]
                              ).exit_code == 0
    _compare(original, out, survivors, everyone)
