"""Where the daemon's queue lives: a store file (SQLite) or a PostgreSQL server shared by benches.

One function turns what the user gave (`--db bench.sqlite`, `--db postgresql://lab/hb`) into a
SQLAlchemy engine with the transaction behaviour the queue needs: on SQLite every write
transaction takes the file's write lock at its start (``BEGIN IMMEDIATE``: one writer at a
time, as the single-host daemon always did), a read takes none; on PostgreSQL transactions are
the server's, and the queue claims items with ``FOR UPDATE SKIP LOCKED``. Credentials come from
libpq (service file, ``PG*`` environment, ``~/.pgpass``) and are never printed: `redact` is
what logs and `status` show.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url

from hilbench.store.schema import BUSY_TIMEOUT_S, open_store

URL_SCHEMES = ("postgresql:", "postgresql+psycopg:", "postgres:")


def is_url(location: str | Path | None) -> bool:
    """A PostgreSQL URL rather than a store file."""
    return location is not None and str(location).startswith(URL_SCHEMES)


def redact(location: str | Path) -> str:
    """The location as it may be shown: a URL without its password."""
    if not is_url(location):
        return str(location)
    try:
        return make_url(_sqlalchemy_url(str(location))).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL: show its scheme and host part only
        return str(location).split("@")[-1]


def _sqlalchemy_url(url: str) -> str:
    scheme, rest = url.split(":", 1)
    return "postgresql+psycopg:" + rest if scheme in ("postgresql", "postgres") else url


def queue_engine(location: str | Path) -> Engine:
    """An engine on ``location`` (a store file, created if new, or a PostgreSQL URL)."""
    if is_url(location):
        return create_engine(_sqlalchemy_url(str(location)), pool_pre_ping=True,
                             pool_size=2, max_overflow=2)
    path = Path(location)
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
