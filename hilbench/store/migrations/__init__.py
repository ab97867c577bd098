"""The store's Alembic migrations: one revision per schema version (``0004`` is the baseline).

hilbench runs them itself when it opens a store that is behind (no ``alembic`` command or
``alembic.ini`` is needed); :func:`upgrade` takes an open SQLAlchemy connection, in the
transaction the caller holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from alembic.config import Config
    from sqlalchemy.engine import Connection

HERE = Path(__file__).parent


def config(connection: Connection | None = None) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(HERE))
    cfg.attributes["connection"] = connection
    return cfg


def head() -> str:
    """The newest revision (the schema version the code reads and writes)."""
    from alembic.script import ScriptDirectory

    return str(ScriptDirectory.from_config(config()).get_current_head())


def upgrade(connection: Connection, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(config(connection), revision)
