"""A PostgreSQL connection that the store's SQL runs on unchanged, as on a sqlite3 connection.

Why the store reads and writes through DB-API connections and not a SQLAlchemy engine, which
the store uses for its migrations (:meth:`DbTarget.engine`) and the daemon for its queue:
SQLAlchemy cannot meet `hilbench results`' limit (< 1 s at 100 000 stored runs, both back ends;
`hilbench bench results`). Measured 2026-11-29 on the 2-core machine at load 3.1-3.5, medians
of 7 runs, on the same 100 000-run stores: importing SQLAlchemy alone, before any engine or
row, took the command from 0.55-0.68 s to 0.70-1.09 s on SQLite and from 0.74-0.88 s to
1.21-1.23 s on PostgreSQL (``import sqlalchemy`` is 0.39 s of a fresh process's time there).
Past the import, fetching 20 000 rows took 108 ms through SQLAlchemy against 23 ms through
sqlite3, and an insert 7.7 µs (``exec_driver_sql``) or 22 µs (``text()``) against 2.7 µs: the
full listings (``--format csv|json``: 900 000 joined rows at that size) and the writer's ~40
statements per run would pay that on every row.

The store's statements are plain SQL with ``?`` placeholders, written to mean the same on both
back ends (PostgreSQL tables carry an explicit ``rowid`` column for the insertion order SQLite
keeps implicitly; see :mod:`hilbench.store.tables`). This module gives a psycopg connection the
few sqlite3 behaviours the store relies on: ``?`` parameters, rows readable by name and by
position, ``in_transaction``, and errors that are ``sqlite3.Error`` so every ``except`` in the
store catches them (:class:`PgError` keeps the SQLSTATE). It is the only such adapter.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any


class PgError(sqlite3.DatabaseError):
    """An error PostgreSQL (or the link to it) raised; ``sqlstate`` says which."""

    def __init__(self, message: str, sqlstate: str | None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate or ""


class Row:
    """A result row read by column name or position, like ``sqlite3.Row``."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: Sequence[Any], index: dict[str, int]) -> None:
        self._values = values
        self._index = index

    def __getitem__(self, key: str | int) -> Any:
        return self._values[self._index[key]] if isinstance(key, str) else self._values[key]

    def keys(self) -> list[str]:
        return list(self._index)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def _row_factory(cursor: Any) -> Any:
    index = {column.name: i for i, column in enumerate(cursor.description or ())}
    return lambda values: Row(values, index)


@functools.lru_cache(maxsize=512)
def to_pg(sql: str) -> str:
    """The statement with psycopg's ``%s`` placeholders (the store's SQL has no ``?`` or ``%``
    in literals); SQLite's ``BEGIN IMMEDIATE`` is PostgreSQL's plain ``BEGIN``."""
    if sql.startswith("BEGIN"):
        return "BEGIN"
    return sql.replace("%", "%%").replace("?", "%s")


class PgConnection:
    """The subset of ``sqlite3.Connection`` the store uses, on an autocommit psycopg
    connection (the store begins and commits its transactions itself)."""

    backend = "postgresql"

    def __init__(self, conn: Any) -> None:
        self.raw = conn
        self.row_factory: Any = None  # sqlite3.Row or None, as on sqlite3 connections

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Any:
        import psycopg
        from psycopg.rows import tuple_row

        try:
            cursor = self.raw.cursor(
                row_factory=_row_factory if self.row_factory is not None else tuple_row
            )
            cursor.execute(to_pg(sql), tuple(args) if args else None)
        except psycopg.Error as exc:
            raise PgError(str(exc).strip(), exc.sqlstate) from exc
        return cursor

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        import psycopg

        try:
            with self.raw.cursor() as cursor:
                cursor.executemany(to_pg(sql), rows)
        except psycopg.Error as exc:
            raise PgError(str(exc).strip(), exc.sqlstate) from exc

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self.raw.info.transaction_status != TransactionStatus.IDLE

    def close(self) -> None:
        self.raw.close()


def plain_rows(cursor: Any) -> Any:
    """The cursor yielding plain tuples (much cheaper than named rows), on either back end."""
    if isinstance(cursor, sqlite3.Cursor):
        cursor.row_factory = None  # type: ignore[assignment]
    else:
        from psycopg.rows import tuple_row

        cursor.row_factory = tuple_row
    return cursor


def is_postgresql(conn: Any) -> bool:
    return isinstance(conn, PgConnection)
