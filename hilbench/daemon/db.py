"""Where the daemon's queue lives: a store file (SQLite) or a PostgreSQL server shared by benches.

One function turns what the user gave (`--db bench.sqlite`, `--db postgresql://lab/hb`) into a
SQLAlchemy engine with the transaction behaviour the queue needs: on SQLite every write
transaction takes the file's write lock at its start (``BEGIN IMMEDIATE``: one writer at a
time, as the single-host daemon always did), a read takes none; on PostgreSQL transactions are
the server's, and the queue claims items with ``FOR UPDATE SKIP LOCKED``. Credentials come from
libpq (service file, ``PG*`` environment, ``~/.pgpass``) and are never printed: `redact` is
what logs and `status` show (hilbench.store.engine parses the URL and hides the password).
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, create_engine, event

from hilbench.store.engine import CONNECT_TIMEOUT_S, DbTarget, is_url, parse_db, redact
from hilbench.store.schema import BUSY_TIMEOUT_S, open_store

__all__ = ["is_url", "queue_engine", "redact"]


def queue_engine(location: str | Path | DbTarget) -> Engine:
    """An engine on ``location`` (a store file, created if new, or a PostgreSQL URL)."""
    target = parse_db(location)
    if target.is_postgresql:
        import psycopg

        def connect() -> psycopg.Connection:
            # Not the store's autocommit connections: a claim is a transaction of its own.
            return psycopg.connect(target.conninfo, connect_timeout=CONNECT_TIMEOUT_S,
                                   application_name="hilbench-daemon")

        return create_engine("postgresql+psycopg://", creator=connect, pool_pre_ping=True,
                             pool_size=2, max_overflow=2)
    path = target.path
    assert path is not None
    open_store(path, "write").close()  # creates or checks the store itself
    engine = create_engine(
        f"sqlite:///{path}",
        connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False},
    )

    @event.listens_for(engine, "connect")
    def _no_implicit_tx(dbapi_conn, _record) -> None:
        dbapi_conn.isolation_level = None  # SQLAlchemy's "begin" below decides

    @event.listens_for(engine, "begin")
    def _begin(conn) -> None:
        read = conn.get_execution_options().get("hb_read", False)
        conn.exec_driver_sql("BEGIN" if read else "BEGIN IMMEDIATE")

    return engine
