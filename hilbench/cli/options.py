"""Options several commands share, in a module that imports nothing heavy (`hilbench status`
starts in well under a second)."""

from __future__ import annotations

from pathlib import Path

import click


def _db_value(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | str | None:
    """A file path as a Path; a postgresql:// URL kept as given (a Path would mangle it)."""
    from hilbench.store.engine import is_url

    if value is None or is_url(value):
        return value
    if Path(value).is_dir():
        raise click.BadParameter(f"{value!r} is a directory, not a store file", ctx, param)
    return Path(value)


DB_OPTION = click.option(
    "--db",
    type=str,
    callback=_db_value,
    default=None,
    help="The store: a SQLite file, or a postgresql:// URL (a lab's shared store and queue) "
         "[default: $HILBENCH_DB or ./hilbench.sqlite].",
)


def db_path(db: Path | str | None) -> Path | str:
    from hilbench.store.paths import default_db_path

    return db if db is not None else default_db_path()
