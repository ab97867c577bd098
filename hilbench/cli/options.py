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


def store_origin(db: Any) -> str:
    """How a command's store was chosen (``db``: the ``--db`` value as given), for the line
    that names the store it reads."""
    if db is not None:
        return "--db"
    if os.environ.get("HILBENCH_DB"):
        return "$HILBENCH_DB"
    from hilbench.store.paths import DEFAULT_DB_NAME

    return f"the default: ./{DEFAULT_DB_NAME} in the working directory"


def store_named(db: Any) -> str:
    """``store PATH (how it was chosen)``: what `status` and `queue` say before anything else,
    so a store read by mistake (another folder, a forgotten --db) shows at once."""
    store = db_path(db)
    where = store.resolve() if isinstance(store, Path) else store
    return f"store {where} ({store_origin(db)})"


def existing_store(db: Any) -> Any:
    """:func:`db_path`, refused in one line (exit 2) when it names a file that does not exist:
    a command that reads the queue never leaves an empty store in the wrong folder."""
    store = db_path(db)
    if not isinstance(store, Path):
        return store
    try:
        store.stat()
    except FileNotFoundError:
        why = "no store at"
    except OSError as exc:  # a folder on the way is not ours to pass
        why = f"{exc.strerror or exc}: cannot look for the store"
    else:
        return store
    from hilbench.cli import EXIT_USAGE

    click.echo(f"{click.style('error:', fg='red')} {why} {store.absolute()} "
               f"({store_origin(db)}); give --db FILE or set HILBENCH_DB, or run this in the "
               "store's folder", err=True)
    raise SystemExit(EXIT_USAGE)


def store_failed(exc: Exception) -> NoReturn:
    """Say a store error in one line and exit: 4 when the store could not be written (a full
    disk, an I/O error, a read-only file or folder), else 2 (the file given is not one this
    user can use as a store). The exit codes are the ones `hilbench --help` lists."""
    from hilbench.cli import EXIT_STORE_FAULT, EXIT_USAGE
    from hilbench.store.errors import StoreFault

    click.echo(f"{click.style('error:', fg='red')} {exc}", err=True)
    raise SystemExit(EXIT_STORE_FAULT if isinstance(exc, StoreFault) else EXIT_USAGE)


def boundary_option(help_text: str) -> Any:
    """``--boundary``: what is done with readings that straddle a window's edge (one option for
    `hilbench power` and `hilbench bench power-accuracy`, so their choices cannot drift)."""
    from hilbench.power.align import BOUNDARY_POLICIES

    return click.option("--boundary", type=click.Choice(BOUNDARY_POLICIES), default="exclude",
                        show_default=True, help=help_text)
