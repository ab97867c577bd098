"""The store: runs, phases, events, power samples and metrics in one SQLite file.

Write with :class:`StoreWriter` (a document consumer), read with :class:`Store`; pandas views
are in :mod:`hilbench.store.frames`.
"""

from hilbench.store.paths import default_db_path
from hilbench.store.reader import Store
from hilbench.store.schema import SCHEMA_VERSION, StoreError
from hilbench.store.writer import StoreWriter

__all__ = ["SCHEMA_VERSION", "Store", "StoreError", "StoreWriter", "default_db_path"]
