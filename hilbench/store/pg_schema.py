"""Opening a PostgreSQL store: identify the database, create or migrate its schema (Alembic,
under an advisory lock so that several benches starting at once migrate it once).

A database is a hilbench store when it has Alembic's ``alembic_version`` holding one of the
store's revisions. An empty database (no ``runs`` table) becomes one when opened for writing;
a database whose ``runs`` table is not ours, or whose revision is newer than this hilbench
knows, is refused with a message naming it, and nothing is written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hilbench.store.backend import PgConnection, PgError
from hilbench.store.errors import StoreError, store_error
from hilbench.store.schema import SCHEMA_VERSION

if TYPE_CHECKING:
    from hilbench.store.engine import DbTarget

MIGRATION_LOCK = 0x48494C42  # pg_advisory_xact_lock key: "HILB"


def open_pg_store(target: DbTarget, mode: str) -> PgConnection:
    conn = PgConnection(target.connect_postgresql())
    try:
        state = _revision(conn, target)
        if state != _revision_name(SCHEMA_VERSION):
            if state is None and mode != "write":
                raise StoreError(
                    f"{target} is an empty database, not a hilbench store yet (a campaign or "
                    "`hilbench store copy` creates it)"
                )
            _migrate(target)
        if mode == "read":
            conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
    except PgError as exc:
        conn.close()
        raise store_error(target, "open the store", exc) from exc
    except BaseException:
        conn.close()
        raise
    return conn


def has_store(target: DbTarget) -> bool:
    """Whether the database holds a hilbench store already (it may be empty)."""
    conn = PgConnection(target.connect_postgresql())
    try:
        return _revision(conn, target) is not None
    except PgError as exc:
        raise store_error(target, "open the store", exc) from exc
    finally:
        conn.close()


def _revision_name(version: int) -> str:
    return f"{version:04d}"


def _revision(conn: PgConnection, target: DbTarget) -> str | None:
    """The store's revision; None for a database with no store yet. Refuses foreign and newer
    databases."""
    has_version, has_runs = conn.execute(
        "SELECT to_regclass('alembic_version') IS NOT NULL, to_regclass('runs') IS NOT NULL"
    ).fetchone()
    if not has_version:
        if has_runs:
            raise StoreError(
                f"{target} has a table 'runs' but no alembic_version: it is not a hilbench "
                "store (give another database)"
            )
        return None
    row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    revision = row[0] if row else None
    if revision is None:
        return None
    if not revision.isdigit():
        raise StoreError(
            f"{target}: its alembic_version says {revision!r}, not a hilbench store revision"
        )
    if int(revision) > SCHEMA_VERSION:
        raise StoreError(
            f"{target} has store schema version {int(revision)}, newer than the version "
            f"{SCHEMA_VERSION} this hilbench understands; upgrade hilbench to open it"
        )
    return revision


def _migrate(target: DbTarget) -> None:
    """Create or upgrade the schema in one transaction; concurrent openers wait on the lock
    and find the work done."""
    from hilbench.store import migrations

    engine = target.engine()
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({MIGRATION_LOCK})")
            migrations.upgrade(conn)
    except Exception as exc:  # a SQLAlchemy/psycopg error: say which store and why
        if isinstance(exc, StoreError):
            raise
        raise StoreError(
            f"{target}: could not create or upgrade the store schema: {target.scrub(str(exc))}"
        ) from None
    finally:
        engine.dispose()
