"""One schema for both back ends: Alembic revisions agree with hilbench/store/tables.py, stores
made before Alembic are stamped in place, and foreign or newer databases are refused."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from hilbench.store import SCHEMA_VERSION, Store, StoreError, StoreWriter, migrations
from hilbench.store.engine import parse_db
from hilbench.store.schema import APPLICATION_ID, LEGACY_MIGRATIONS
from hilbench.store.tables import ROWID, metadata


def _differences(url) -> list:
    engine = parse_db(url).engine()
    try:
        with engine.connect() as conn:
            sqlite = conn.dialect.name == "sqlite"

            def include(obj, name, kind, reflected, compare_to) -> bool:
                if kind == "table" and name == "alembic_version":
                    return False
                return not (sqlite and kind == "column" and name == ROWID)  # implicit there

            context = MigrationContext.configure(conn, opts={
                "include_object": include, "compare_type": not sqlite,
                "compare_server_default": False,
            })
            diffs = compare_metadata(context, metadata)
    finally:
        engine.dispose()
    if sqlite:  # SQLite reflects a declared PRIMARY KEY column as nullable: not a difference
        keys = {(t.name, c.name) for t in metadata.tables.values() for c in t.primary_key}
        diffs = [d for d in diffs if not (isinstance(d, list) and d[0][0] == "modify_nullable"
                                          and (d[0][2], d[0][3]) in keys)]
    return diffs


def test_the_newest_revision_is_the_schema_version():
    assert migrations.head() == f"{SCHEMA_VERSION:04d}"


def test_every_revision_past_the_baseline_has_its_sqlite_step():
    """schema.migrate brings SQLite files to the baseline, stamps them, applies the frozen
    SQLite steps (SQLITE_MIGRATIONS) up to FIRST_ALEMBIC_STEP, then the Alembic revisions
    themselves; PostgreSQL runs every Alembic revision."""
    from hilbench.store.schema import BASELINE_VERSION, FIRST_ALEMBIC_STEP, SQLITE_MIGRATIONS

    assert sorted(SQLITE_MIGRATIONS) == list(range(BASELINE_VERSION + 1, FIRST_ALEMBIC_STEP))
    assert FIRST_ALEMBIC_STEP <= SCHEMA_VERSION


def test_a_run_may_end_unverified_and_nothing_else_new(store_url):
    """Schema 5: a run may end 'unverified' (its timing could not be verified); any other
    status is still refused by the database itself, and phases keep their three."""
    with StoreWriter(store_url):
        pass
    engine = parse_db(store_url).engine()
    insert = ("INSERT INTO runs (uid, campaign_uid, unit_key, procedure, params, agents,"
              " t_start, wall_time, hilbench_version, exit_status)"
              " VALUES (:uid, 'c', 'k', 'p', '{}', '{}', 0, 0, 'x', :status)")
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(insert), {"uid": "a", "status": "unverified"})
        with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
            conn.execute(sa.text(insert), {"uid": "b", "status": "late"})
        with pytest.raises(sa.exc.IntegrityError), engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO phases (uid, run_uid, name, t_start, clock_offsets,"
                                 " exit_status) VALUES ('p', 'a', 'x', 0, '{}', 'unverified')"))
    finally:
        engine.dispose()
    with Store(store_url) as store:
        assert store.run("a")["status"] == "unverified"


def test_a_new_store_has_the_schema_of_tables_py(store_url, full_run):
    with StoreWriter(store_url) as writer:
        full_run(writer)
    assert _differences(store_url) == []
    with parse_db(store_url).engine().connect() as conn:
        assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar() == \
            f"{SCHEMA_VERSION:04d}"


def _legacy_store(path, version: int) -> None:
    """A store as an older hilbench left it: the first ``version`` steps, no Alembic table."""
    from hilbench.store.groups import install_functions

    conn = sqlite3.connect(path)
    install_functions(conn)
    for statement in (s for step in LEGACY_MIGRATIONS[:version] for s in step):
        conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(
        "INSERT INTO runs (uid, campaign_uid, unit_key, procedure, params, agents, t_start,"
        " wall_time, hilbench_version, exit_status) VALUES ('r1', 'c', 'n=10/seed=3', 'qubo',"
        " '{}', '{}', 0, 1.0, '0.1', 'success')"
    )
    conn.commit()
    conn.close()


@pytest.mark.parametrize("version", [1, 4])
def test_a_store_made_before_alembic_is_upgraded_and_stamped_in_place(tmp_path, version):
    path = tmp_path / "old.sqlite"
    _legacy_store(path, version)
    with Store(path) as store:  # reading works at once
        assert store.run("r1")["status"] == "success"
    StoreWriter(path).close()  # the first write stamps it
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [
        (f"{SCHEMA_VERSION:04d}",)]
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    if version < 3:  # the run was stored before groups existed: filled in by the upgrade
        assert conn.execute("SELECT unit_group FROM runs").fetchone()[0] == "n=10/seed=*"
    conn.close()
    assert _differences(path) == []
    StoreWriter(path).close()  # opening again changes nothing
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM alembic_version").fetchone()[0] == 1


SHAPES = Path(__file__).parent / "shapes"


def test_a_store_made_by_an_older_hilbench_is_upgraded_in_place(tmp_path):
    """shapes/v5-main-3b35219.sqlite: a store as main's code (3b35219, schema 5) left it: a
    campaign of 5 runs (one unverified), a removed queue item, a schedule."""
    path = tmp_path / "v5.sqlite"
    shutil.copy(SHAPES / "v5-main-3b35219.sqlite", path)
    with Store(path) as store:  # reading upgrades it first
        before = [(run["uid"], run["status"]) for run in store.iter_runs()]
        total, groups = store.run_groups()
    assert sorted(status for _, status in before) == ["success"] * 4 + ["unverified"]
    assert total == 2 and sum(group.n_runs for group in groups) == 5
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [
        (f"{SCHEMA_VERSION:04d}",)]
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT COUNT(*) FROM daemon_schedules").fetchone()[0] == 1
    conn.close()
    assert _differences(path) == []
    with Store(path) as store:
        assert [(run["uid"], run["status"]) for run in store.iter_runs()] == before


def test_writers_opening_an_old_store_at_once_upgrade_it_once(tmp_path):
    """The frozen steps and the Alembic revisions run in two transactions: each opener waits
    for the file's write lock and finds the work done, none fails or upgrades twice."""
    path = tmp_path / "v5.sqlite"
    shutil.copy(SHAPES / "v5-main-3b35219.sqlite", path)
    assert _writers_open_at_once(path) == []
    assert _differences(path) == []
    with Store(path) as store:
        assert store.count_runs() == 5


def test_a_postgresql_store_of_schema_5_is_upgraded_in_place():
    from tests.postgres import fresh_database

    with fresh_database("hb_test") as url:
        engine = parse_db(url).engine()
        try:
            with engine.begin() as conn:
                migrations.upgrade(conn, "0005")
                conn.execute(sa.text(
                    "INSERT INTO runs (uid, campaign_uid, unit_key, procedure, params, agents,"
                    " t_start, wall_time, hilbench_version, exit_status) VALUES ('r1', 'c',"
                    " 'n=10/seed=3', 'qubo', '{}', '{}', 0, 1.0, '0.1', 'unverified')"))
        finally:
            engine.dispose()
        with Store(url) as store:
            assert store.run("r1")["status"] == "unverified"
        assert _differences(url) == []


def _pg(url):
    import psycopg

    return psycopg.connect(url, autocommit=True)


def test_postgresql_databases_that_are_not_our_store_are_refused(tmp_path):
    from tests.postgres import fresh_database

    with fresh_database("hb_test") as url:
        with pytest.raises(StoreError, match="empty database, not a hilbench store"):
            Store(url)
        with _pg(url) as conn:
            conn.execute("CREATE TABLE runs (id int)")
        for open_it in (Store, StoreWriter):
            with pytest.raises(StoreError, match="'runs' but no alembic_version"):
                open_it(url)
    with fresh_database("hb_test") as url:
        StoreWriter(url).close()
        with _pg(url) as conn:
            conn.execute("UPDATE alembic_version SET version_num = %s",
                         (f"{SCHEMA_VERSION + 1:04d}",))
        for open_it in (Store, StoreWriter):
            with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1}, newer"):
                open_it(url)


def test_benches_opening_a_new_postgresql_store_at_once_create_it_once():
    from tests.postgres import fresh_database

    with fresh_database("hb_test") as url:
        assert _writers_open_at_once(url) == []
        assert _differences(url) == []


def _writers_open_at_once(target, writers: int = 4) -> list[BaseException]:
    """What ``writers`` threads opening a StoreWriter on ``target`` at once raised."""
    import threading

    errors: list[BaseException] = []

    def open_it() -> None:
        try:
            StoreWriter(target).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors


def _schema_of(path) -> tuple[list[tuple], tuple]:
    conn = sqlite3.connect(path)
    try:
        objects = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"
                               " ORDER BY type, name").fetchall()
        marks = tuple(conn.execute(f"PRAGMA {p}").fetchone()[0]
                      for p in ("user_version", "application_id"))
        return objects, marks + tuple(conn.execute("SELECT * FROM alembic_version").fetchall())
    finally:
        conn.close()


def test_a_new_store_made_from_the_head_schema_equals_one_the_migrations_built(tmp_path):
    """hilbench/store/head_schema.sql is generated from the migrations: a store made from it has
    the same objects, statements, marks and Alembic stamp as one built step by step, and the
    file regenerates identically (it is stale the moment a revision is added)."""
    from hilbench.store import make_head_schema
    from hilbench.store.schema import open_store

    open_store(tmp_path / "head.sqlite", "write").close()
    open_store(tmp_path / "steps.sqlite", "write", from_head=False).close()
    assert _schema_of(tmp_path / "head.sqlite") == _schema_of(tmp_path / "steps.sqlite")
    assert make_head_schema.main(["--check"]) == 0


def test_a_head_schema_of_another_version_is_not_used(tmp_path, monkeypatch):
    """A file left behind by another version (a revision added, the file not regenerated) makes
    nothing: the new store is built by the migrations, at the code's version."""
    from hilbench.store import head_schema

    stale = tmp_path / "head_schema.sql"
    stale.write_text(head_schema.HEAD_SQL.read_text(encoding="utf-8").replace(
        f"schema {SCHEMA_VERSION} (Alembic revision {SCHEMA_VERSION:04d})",
        f"schema {SCHEMA_VERSION - 1} (Alembic revision {SCHEMA_VERSION - 1:04d})"))
    monkeypatch.setattr(head_schema, "HEAD_SQL", stale)
    assert head_schema.statements_for(SCHEMA_VERSION) is None
    StoreWriter(tmp_path / "new.sqlite").close()
    assert _differences(tmp_path / "new.sqlite") == []
    assert _schema_of(tmp_path / "new.sqlite")[1][0] == SCHEMA_VERSION
