"""Where the store lives when nobody says: ``$HILBENCH_DB``, else ``./hilbench.sqlite``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

DEFAULT_DB_NAME = "hilbench.sqlite"


def default_db_path() -> Path:
    """Read at call time, so a campaign and `hilbench results` in one shell agree."""
    return Path(os.environ.get("HILBENCH_DB") or DEFAULT_DB_NAME)


def logs_dir(store_path: Path | Any) -> Path:
    """Where a campaign writing to ``store_path`` keeps its logs: ``<store>.logs/`` beside a
    file; for a PostgreSQL store (a ``DbTarget``), ``hilbench-<database>.logs/`` in the
    working directory (the logs stay on the bench that wrote them)."""
    if isinstance(store_path, Path):
        return store_path.with_name(store_path.name + ".logs")
    if getattr(store_path, "path", None) is not None:
        return logs_dir(store_path.path)
    return Path.cwd() / f"hilbench-{store_path.label}.logs"
