"""Where the store lives when nobody says: ``$HILBENCH_DB``, else ``./hilbench.sqlite``."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_DB_NAME = "hilbench.sqlite"


def default_db_path() -> Path:
    """Read at call time, so a campaign and `hilbench results` in one shell agree."""
    return Path(os.environ.get("HILBENCH_DB") or DEFAULT_DB_NAME)


def logs_dir(store_path: Path) -> Path:
    """Where a campaign writing to ``store_path`` keeps its logs: ``<store>.logs/`` beside it."""
    return store_path.with_name(store_path.name + ".logs")
