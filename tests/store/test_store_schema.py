"""The store identifies its files: WAL on, version checked, foreign files refused untouched."""

from __future__ import annotations

import sqlite3

import pytest

from hilbench.store import SCHEMA_VERSION, Store, StoreError, StoreWriter


def _pragma(path, name):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"PRAGMA {name}").fetchone()[0]
    finally:
        conn.close()


def test_a_new_store_is_versioned_and_in_wal_mode(db_path, full_run):
    with StoreWriter(db_path) as writer:
        full_run(writer)
    assert _pragma(db_path, "journal_mode") == "wal"
    assert _pragma(db_path, "user_version") == SCHEMA_VERSION


def test_a_store_from_a_newer_hilbench_is_refused_by_writer_and_reader(db_path, full_run):
    with StoreWriter(db_path) as writer:
        full_run(writer)
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    for open_it in (StoreWriter, Store):
        with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1}, newer") as exc:
            open_it(db_path)
        assert str(db_path) in str(exc.value)


def test_a_file_that_is_not_sqlite_is_refused_and_left_alone(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("campaign notes, not a database\n")
    for open_it in (StoreWriter, Store):
        with pytest.raises(StoreError, match="not a SQLite database") as exc:
            open_it(notes)
        assert str(notes) in str(exc.value)
    assert notes.read_text() == "campaign notes, not a database\n"


def test_another_programs_sqlite_database_is_refused(tmp_path):
    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE customers (id INTEGER)")
    conn.commit()
    conn.close()
    for open_it in (StoreWriter, Store):
        with pytest.raises(StoreError, match=r"not a hilbench store.*customers"):
            open_it(other)
    assert _pragma(other, "user_version") == 0


def test_reading_a_missing_store_fails_without_creating_it(tmp_path):
    missing = tmp_path / "nope.sqlite"
    with pytest.raises(StoreError, match=r"no hilbench store at .*nope\.sqlite"):
        Store(missing)
    assert not missing.exists()


def test_an_empty_file_becomes_a_store_only_when_written(tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    with pytest.raises(StoreError, match="empty SQLite database"):
        Store(empty)
    StoreWriter(empty).close()
    with Store(empty) as store:
        assert store.runs() == []


def test_default_path_follows_hilbench_db(monkeypatch, tmp_path):
    from hilbench.store import default_db_path

    monkeypatch.setenv("HILBENCH_DB", str(tmp_path / "x.sqlite"))
    assert default_db_path() == tmp_path / "x.sqlite"
    monkeypatch.delenv("HILBENCH_DB")
    assert default_db_path().name == "hilbench.sqlite"
