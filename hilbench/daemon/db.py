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

from sqlalchemy import Engine

from hilbench.store.engine import DbTarget, is_url, parse_db, redact
from hilbench.store.opening import open_target

__all__ = ["is_url", "queue_engine", "redact"]


def queue_engine(location: str | Path | DbTarget) -> Engine:
    """An engine on ``location`` (a store file, created if new, or a PostgreSQL URL), whose
    schema (the queue's tables with the rest) is made or upgraded first."""
    target = parse_db(location)
    open_target(target, "write").close()
    return target.engine(application_name="hilbench-daemon", pooled=True)
