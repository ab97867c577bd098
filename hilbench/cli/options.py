"""Options several commands share, in a module that imports nothing heavy (`hilbench status`
starts in well under a second)."""

from __future__ import annotations

from pathlib import Path

import click

DB_OPTION = click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="SQLite results file [default: $HILBENCH_DB or ./hilbench.sqlite].",
)


def db_path(db: Path | None) -> Path:
    from hilbench.store.paths import default_db_path

    return db if db is not None else default_db_path()
