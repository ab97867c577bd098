"""The store's schema version, opening a store (SQLite file or PostgreSQL database), and the
checks made before a SQLite file is trusted.

The schema is described once, in :mod:`hilbench.store.tables`, and versioned by Alembic
revisions named by the schema version (:mod:`hilbench.store.migrations`). SQLite stores made
before Alembic reach version 4 (the Alembic baseline) by the frozen :data:`LEGACY_MIGRATIONS`
and are then stamped with revision ``0004``, and version 5 by its frozen SQLite step; from
version 6 (:data:`FIRST_ALEMBIC_STEP`) on, the Alembic revisions themselves run on both back
ends, the daemon's queue tables included (revision 0007).
PostgreSQL stores are opened by :mod:`hilbench.store.pg_schema`, and either kind by
:mod:`hilbench.store.opening`.

A hilbench store is marked by ``PRAGMA application_id`` and versioned by ``PRAGMA user_version``,
so a file is identified without reading any table: a file that is not SQLite, a SQLite database
of some other program, or a store written by a newer hilbench is refused with a message naming
the file, rather than being written into or misread.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path
from typing import Literal

from hilbench.store import head_schema
from hilbench.store.engine import BUSY_TIMEOUT_S, parse_db
from hilbench.store.errors import (
    StoreError,
    StoreFault,
    access_problem,
    damaged,
    store_error,
)
from hilbench.store.groups import install_functions

APPLICATION_ID = 0x48494C42  # "HILB"
SQLITE_HEADER = b"SQLite format 3\x00"

# LEGACY_MIGRATIONS[i] takes a SQLite store from version i to version i + 1, up to the Alembic
# baseline (version 4). Frozen: new schema versions are Alembic revisions.
LEGACY_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE campaigns (
            uid TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            config TEXT NOT NULL,              -- JSON
            wall_start REAL NOT NULL,          -- UTC seconds
            wall_stop REAL,
            status TEXT CHECK (status IN ('success', 'fail', 'abort')),  -- NULL: not ended
            resumes INTEGER NOT NULL DEFAULT 0
        )""",
        """CREATE TABLE runs (
            uid TEXT PRIMARY KEY,
            campaign_uid TEXT NOT NULL,
            unit_key TEXT NOT NULL,
            procedure TEXT NOT NULL,
            params TEXT NOT NULL,              -- JSON
            agents TEXT NOT NULL,              -- JSON
            t_start REAL NOT NULL,             -- orchestrator monotonic clock
            wall_time REAL NOT NULL,           -- UTC seconds at t_start
            hilbench_version TEXT NOT NULL,
            t_stop REAL,
            exit_status TEXT CHECK (exit_status IN ('success', 'fail', 'abort')),  -- NULL: no stop
            reason TEXT NOT NULL DEFAULT ''
        )""",
        "CREATE INDEX runs_by_unit ON runs (campaign_uid, unit_key, exit_status)",
        """CREATE TABLE phases (
            uid TEXT PRIMARY KEY,
            run_uid TEXT NOT NULL REFERENCES runs (uid),
            name TEXT NOT NULL,
            t_start REAL NOT NULL,
            clock_offsets TEXT NOT NULL,       -- JSON
            t_stop REAL,
            exit_status TEXT CHECK (exit_status IN ('success', 'fail', 'abort')),
            reason TEXT NOT NULL DEFAULT ''
        )""",
        "CREATE INDEX phases_by_run ON phases (run_uid)",
        """CREATE TABLE events (
            id INTEGER PRIMARY KEY,            -- stream order
            run_uid TEXT NOT NULL REFERENCES runs (uid),
            phase_uid TEXT REFERENCES phases (uid),
            name TEXT NOT NULL,
            t REAL NOT NULL,
            data TEXT NOT NULL                 -- JSON
        )""",
        "CREATE INDEX events_by_run ON events (run_uid, name)",
        """CREATE TABLE samples (
            id INTEGER PRIMARY KEY,            -- stream order; one row per batch
            run_uid TEXT NOT NULL REFERENCES runs (uid),
            phase_uid TEXT REFERENCES phases (uid),
            source TEXT NOT NULL,
            unit TEXT NOT NULL,
            n INTEGER NOT NULL,
            t_first REAL,
            t_last REAL,
            t BLOB NOT NULL,                   -- float64 little-endian
            vals BLOB NOT NULL,                -- float64 little-endian
            meta TEXT NOT NULL                 -- JSON
        )""",
        "CREATE INDEX samples_by_run ON samples (run_uid, source)",
        """CREATE TABLE metrics (
            id INTEGER PRIMARY KEY,
            run_uid TEXT NOT NULL REFERENCES runs (uid),
            name TEXT NOT NULL,
            value REAL,
            unit TEXT NOT NULL,
            uncertainty REAL,
            meta TEXT NOT NULL,                -- JSON
            UNIQUE (run_uid, name)
        )""",
    ),
    (
        # A run built on a simulated device or instrument says so (and what is simulated).
        "ALTER TABLE runs ADD COLUMN simulated INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE runs ADD COLUMN simulation TEXT NOT NULL DEFAULT ''",
    ),
    # 3: `hilbench results` filters, orders and summarises in SQL, fast at 10 000s of runs:
    # unit_group is the unit key with seed/repetition blanked (hilbench.store.groups).
    (
        "ALTER TABLE runs ADD COLUMN unit_group TEXT NOT NULL DEFAULT ''",
        "UPDATE runs SET unit_group = replicate_key(unit_key)",
        "CREATE INDEX runs_by_time ON runs (wall_time)",
        "CREATE INDEX runs_by_campaign ON runs (campaign_uid, wall_time)",
        "CREATE INDEX runs_by_procedure ON runs (procedure, wall_time)",
        "CREATE INDEX runs_by_group ON runs (campaign_uid, procedure, unit_group, exit_status)",
        "CREATE INDEX campaigns_by_name ON campaigns (name, wall_start)",
    ),
    # 4: why a campaign stopped (could not start, an agent lost, a signal), beside its status.
    ("ALTER TABLE campaigns ADD COLUMN reason TEXT NOT NULL DEFAULT ''",),
)
MIGRATIONS = LEGACY_MIGRATIONS  # the name before Alembic
BASELINE_VERSION = len(LEGACY_MIGRATIONS)
# The newest schema version = the number of the newest Alembic revision (tests check they agree).
SCHEMA_VERSION = 7

# SQLITE_MIGRATIONS[v] took a SQLite store from version v - 1 to v, what the Alembic revision of
# the same number does on PostgreSQL; frozen like the revisions. It rewrites a table definition
# in the schema (SQLite's documented way to change a constraint:
# https://www.sqlite.org/lang_altertable.html, "Making Other Kinds Of Table Schema Changes"), so
# migrate() runs it with writable_schema on and the schema cookie raised.
SQLITE_MIGRATIONS: dict[int, tuple[str, ...]] = {
    # 5: a run may end 'unverified'. The new check is looser, so every stored row passes it.
    5: (
        "UPDATE sqlite_master SET sql = replace(sql,"
        " 'exit_status IN (''success'', ''fail'', ''abort'')',"
        " 'exit_status IN (''success'', ''fail'', ''abort'', ''unverified'')')"
        " WHERE type = 'table' AND name = 'runs'",
    ),
}
# From this version on the schema evolves one way: each Alembic revision, run on SQLite too.
FIRST_ALEMBIC_STEP = 6
ALEMBIC_VERSION_TABLE = (
    "CREATE TABLE IF NOT EXISTS alembic_version (version_num VARCHAR(32) NOT NULL,"
    " CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num))"
)

Mode = Literal["read", "write"]


def open_store(path: Path, mode: Mode, *, from_head: bool = True) -> sqlite3.Connection:
    """Open ``path`` as a hilbench store, creating (``write``) or migrating it when needed.

    ``read`` never creates a file and uses a read-only connection, so a reader cannot corrupt a
    store that a campaign is writing; an older schema is migrated first by a short write.
    A new store is made from the head schema (:mod:`hilbench.store.head_schema`) unless
    ``from_head`` is False (the migrations then build it step by step).
    """
    _check_file(path, create=mode == "write")
    if mode == "write":
        _create_private(path)
        conn = _connect(path, readonly=False)
        try:
            _check_identity(conn, path, allow_empty=True)
            _set_wal(conn, path)
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            migrate(conn, path, from_head=from_head)
        except sqlite3.Error as exc:  # e.g. no room for the write-ahead log
            conn.close()
            raise access_problem(path, write=True) or store_error(
                path, "open the store for writing", exc) from exc
        except BaseException:
            conn.close()
            raise
        return conn

    conn = _connect(path, readonly=True)
    try:
        version = _check_identity(conn, path, allow_empty=False)
        if version < SCHEMA_VERSION:
            conn.close()
            upgrader = _connect(path, readonly=False)
            try:
                migrate(upgrader, path)
            finally:
                upgrader.close()
            conn = _connect(path, readonly=True)
    except BaseException:
        conn.close()
        raise
    return conn


def migrate(conn: sqlite3.Connection, path: Path, *, from_head: bool = True) -> None:
    """Bring the store to SCHEMA_VERSION: the frozen steps in one transaction, then the Alembic
    revisions in another; safe against a concurrent migrator (each waits for the write lock
    and reads the version again). An empty database gets the head schema at once."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        _refuse_newer(version, path)
        if from_head and version == 0 and _is_empty(conn) and \
                head_schema.create(conn, SCHEMA_VERSION, APPLICATION_ID):
            conn.execute("COMMIT")
            return
        _frozen_steps(conn, version)
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise store_error(path, "create or upgrade the store schema", exc) from exc
    if version < SCHEMA_VERSION:
        _upgrade_by_alembic(path)


def _frozen_steps(conn: sqlite3.Connection, version: int) -> None:
    """The legacy steps to the baseline, the Alembic stamp, the frozen SQLite steps up to
    FIRST_ALEMBIC_STEP, in the caller's transaction."""
    install_functions(conn)  # functions a migration may call
    for statements in LEGACY_MIGRATIONS[version:]:
        for statement in statements:
            conn.execute(statement)
    # Stamped as Alembic's baseline (a store of version 4 made before Alembic gets it now).
    conn.execute(ALEMBIC_VERSION_TABLE)
    if not conn.execute("SELECT 1 FROM alembic_version").fetchone():
        conn.execute(
            "INSERT INTO alembic_version VALUES (?)", (f"{max(version, BASELINE_VERSION):04d}",)
        )
    if version < BASELINE_VERSION:
        conn.execute(f"PRAGMA user_version = {BASELINE_VERSION}")
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    for step in range(max(version, BASELINE_VERSION) + 1, FIRST_ALEMBIC_STEP):
        cookie = conn.execute("PRAGMA schema_version").fetchone()[0]
        conn.execute("PRAGMA writable_schema = ON")
        for statement in SQLITE_MIGRATIONS[step]:
            conn.execute(statement)
        conn.execute(f"PRAGMA schema_version = {cookie + 1}")
        conn.execute("PRAGMA writable_schema = OFF")
        conn.execute("UPDATE alembic_version SET version_num = ?", (f"{step:04d}",))
        conn.execute(f"PRAGMA user_version = {step}")


def _is_empty(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0


def _upgrade_by_alembic(path: Path) -> None:
    """The revisions from FIRST_ALEMBIC_STEP on, run by Alembic in one write transaction that
    also sets ``user_version`` (a second upgrader waits for the lock, then finds it done).
    SQLAlchemy is imported only here, when a store is behind."""
    from sqlalchemy.exc import SQLAlchemyError

    from hilbench.store import migrations

    engine = parse_db(path).engine()
    try:
        with engine.begin() as conn:
            if conn.exec_driver_sql("PRAGMA user_version").scalar_one() < SCHEMA_VERSION:
                migrations.upgrade(conn)
                conn.exec_driver_sql(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None)
        if isinstance(orig, sqlite3.Error):
            raise store_error(path, "upgrade the store schema", orig) from exc
        raise StoreError(f"{path}: could not upgrade the store schema: {exc}") from exc
    finally:
        engine.dispose()


def check_store_file(path: Path) -> bool:
    """Refuse, before anything is written, a file a campaign could not store into: a folder
    that does not exist (a mistyped ``--db`` is not silently created), a read-only file system,
    or an existing file that is not a hilbench store. True when the store will be a new file."""
    _check_file(path, create=True)
    if os.statvfs(path.parent).f_flag & os.ST_RDONLY:
        raise StoreFault(
            f"{path}: the store cannot be written: {path.parent} is on a read-only file system"
        )
    if not path.exists():
        return True
    if path.stat().st_size:  # an empty file may become a store
        open_store(path, "read").close()
    return False


def _check_file(path: Path, create: bool) -> None:
    if not path.exists():
        if not create:
            raise StoreError(f"no hilbench store at {path} (file does not exist)")
        if not path.parent.is_dir():
            raise StoreError(
                f"cannot create the store {path}: folder {path.parent} does not exist "
                "(create it first, or give another --db)"
            )
        return
    if not path.is_file():
        raise StoreError(f"{path} is not a file, so it cannot be a hilbench store")
    # The header is read only once SQLite has refused the file (_not_sqlite): POSIX locks
    # belong to the process, and closing *any* descriptor of the file drops every lock this
    # process's open connections hold on it. Another process then takes itself for the last
    # connection, checkpoints and deletes the WAL under them, and their later commits go to an
    # unlinked file nobody else reads (seen: a daemon's queue writes invisible to the CLI).


def _not_sqlite(path: Path) -> StoreError | None:
    """The error for a file that is not SQLite at all (None if its header says SQLite)."""
    try:
        with path.open("rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except OSError:
        return None  # said by access_problem, or the store_error that follows
    if head and head != SQLITE_HEADER:
        return StoreError(
            f"{path} is not a SQLite database (it starts with {head[:8]!r}), "
            "so it is not a hilbench store"
        )
    return None


def _create_private(path: Path) -> None:
    """A new store is readable by its owner only; SQLite gives its -wal and -shm files the
    same mode. (Results, host names and agent addresses are nobody else's business.)"""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _connect(path: Path, readonly: bool) -> sqlite3.Connection:
    # isolation_level=None: transactions are begun and committed explicitly by the writer.
    try:
        if readonly:
            uri = f"{path.resolve().as_uri()}?mode=ro"
            return sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        # The writer serialises its own calls with a lock, so a document stream emitted from
        # a worker thread may write through the connection opened by the main thread.
        return sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        raise access_problem(path, write=not readonly) or store_error(
            path, "open the store", exc) from exc


def _check_identity(conn: sqlite3.Connection, path: Path, allow_empty: bool) -> int:
    """Return the schema version of a hilbench store; refuse anything else."""
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = [
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
    except sqlite3.DatabaseError as exc:
        raise access_problem(path, write=allow_empty) or _not_sqlite(path) or store_error(
            path, "read it as a SQLite database", exc) from exc
    except UnicodeDecodeError:  # SQLite's message about a damaged schema quotes its bytes
        raise damaged(path, "read it as a SQLite database",
                      "its schema is not readable text") from None
    if app_id == APPLICATION_ID:
        _refuse_newer(version, path)
        return version
    if app_id == 0 and version == 0 and not tables:
        if allow_empty:
            return 0
        raise StoreError(f"{path} is an empty SQLite database, not a hilbench store")
    listed = ", ".join(tables[:5]) + (", …" if len(tables) > 5 else "")
    raise StoreError(
        f"{path} is a SQLite database but not a hilbench store "
        f"(application_id={app_id:#x}, tables: {listed or 'none'})"
    )


def _refuse_newer(version: int, path: Path) -> None:
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} has store schema version {version}, newer than the version "
            f"{SCHEMA_VERSION} this hilbench understands; upgrade hilbench to open it"
        )


def _set_wal(conn: sqlite3.Connection, path: Path) -> None:
    # WAL lets readers (`hilbench results`, notebooks) read while a campaign writes.
    mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
    if str(mode).lower() != "wal":
        raise StoreError(
            f"{path}: SQLite refused write-ahead logging (journal_mode stayed {mode!r}); "
            "put the store on a local file system"
        )
