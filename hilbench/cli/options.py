"""Options several commands share, in a module that imports nothing heavy (`hilbench status`
starts in well under a second)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NoReturn

import click

DB_HELP = ("The store: a SQLite file, or a PostgreSQL URL (postgresql://host/db, "
           "postgresql:///?service=NAME) [default: $HILBENCH_DB or ./hilbench.sqlite].")


class DbParam(click.ParamType):
    """A ``--db`` value: a PostgreSQL URL becomes a :class:`~hilbench.store.engine.DbTarget`
    (whose str() hides the password), anything else a file ``Path`` as before."""

    name = "FILE|URL"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        from hilbench.store.engine import is_url

        if is_url(value):
            from hilbench.store.engine import parse_db
            from hilbench.store.errors import StoreError

            try:
                return parse_db(value)
            except StoreError as exc:
                self.fail(str(exc), param, ctx)
        if value.endswith("/") or (value and Path(value).is_dir()):
            self.fail(f"{value!r} is a directory, not a store file", param, ctx)
        return Path(value)


DB = DbParam()
DB_OPTION = click.option("--db", type=DB, default=None, help=DB_HELP)


def db_path(db: Any) -> Any:
    """The ``--db`` value, or the default store (a ``Path``; a ``DbTarget`` for a URL)."""
    if db is not None:
        return db
    from hilbench.store.engine import is_url, parse_db
    from hilbench.store.paths import default_db_path

    env = os.environ.get("HILBENCH_DB", "")
    return parse_db(env) if is_url(env) else default_db_path()


def store_failed(exc: Exception) -> NoReturn:
    """Say a store error in one line and exit: 4 when the store could not be written (a full
    disk, an I/O error, a read-only file or folder), else 2 (the file given is not one this
    user can use as a store). The exit codes are the ones `hilbench --help` lists."""
    from hilbench.cli import EXIT_STORE_FAULT, EXIT_USAGE
    from hilbench.store.errors import StoreFault

    click.echo(f"{click.style('error:', fg='red')} {exc}", err=True)
    raise SystemExit(EXIT_STORE_FAULT if isinstance(exc, StoreFault) else EXIT_USAGE)
