"""The store: runs, phases, events, power samples and metrics, in a SQLite file (the default)
or a PostgreSQL database (a lab's shared store).

Write with :class:`StoreWriter` (a document consumer), read with :class:`Store`; pandas views
are in :mod:`hilbench.store.frames`. A ``--db`` value (file path or ``postgresql://…`` URL) is
parsed by :func:`hilbench.store.engine.parse_db` into a :class:`~hilbench.store.engine.DbTarget`
(``connect_postgresql()``, ``engine()``, a ``str()`` with the password hidden);
:func:`hilbench.store.copy.copy_runs` copies runs between stores, idempotent by run id.
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
