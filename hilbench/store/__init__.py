"""The store: runs, phases, events, power samples and metrics in one SQLite file.

Write with :class:`StoreWriter` (a document consumer), read with :class:`Store`; pandas views
are in :mod:`hilbench.store.frames`.
"""

from typing import Any

from hilbench.store.errors import StoreDamaged, StoreError, StoreFault
from hilbench.store.paths import default_db_path
from hilbench.store.reader import Store
from hilbench.store.schema import SCHEMA_VERSION

__all__ = [
    "SCHEMA_VERSION",
    "Store",
    "StoreDamaged",
    "StoreError",
    "StoreFault",
    "StoreWriter",
    "default_db_path",
]


def __getattr__(name: str) -> Any:
    # The writer (and numpy with it) is imported on first use: `hilbench results` only reads.
    if name == "StoreWriter":
        from hilbench.store.writer import StoreWriter

        return StoreWriter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
