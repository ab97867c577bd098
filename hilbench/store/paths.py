"""Where the store lives when nobody says: ``$HILBENCH_DB``, else ``./hilbench.sqlite``."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_DB_NAME = "hilbench.sqlite"


def default_db_path() -> Path:
    """Read at call time, so a campaign and `hilbench results` in one shell agree."""
    return Path(os.environ.get("HILBENCH_DB") or DEFAULT_DB_NAME)
