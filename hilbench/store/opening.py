"""Opening a store of either back end from a ``--db`` value: the one place that chooses between
:mod:`hilbench.store.schema` (a SQLite file) and :mod:`hilbench.store.pg_schema` (a PostgreSQL
database), so neither of those needs the other."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hilbench.store.backend import PgConnection
from hilbench.store.engine import DbTarget, parse_db
from hilbench.store.pg_schema import has_store, open_pg_store
from hilbench.store.schema import Mode, check_store_file, open_store


def open_target(target: DbTarget | str | Path, mode: Mode) -> sqlite3.Connection | PgConnection:
    """Open a store of either back end: a ``sqlite3.Connection`` for a file, a
    :class:`~hilbench.store.backend.PgConnection` for a PostgreSQL URL."""
    target = parse_db(target)
    if target.path is not None:
        return open_store(target.path, mode)
    return open_pg_store(target, mode)


def check_store_path(path: Path | DbTarget | str) -> bool:
    """Refuse, before anything is written, a store a campaign could not write into (see
    :func:`~hilbench.store.schema.check_store_file`); True when the store will be new. A
    PostgreSQL store is opened for writing (its schema created in an empty database); True when
    it held no store before."""
    target = parse_db(path)
    if target.path is not None:
        return check_store_file(target.path)
    new = not has_store(target)
    open_target(target, "write").close()
    return new
