"""Opening a store a second time in one process must not drop the first connection's locks.

POSIX locks belong to the process: closing any descriptor of the database file releases them
all. If opening a store read its header through a descriptor it then closed, another process
closing its own connection would think itself the last one, checkpoint and delete the WAL, and
this process's later commits would go to an unlinked file that nobody else ever reads.
"""

from __future__ import annotations

import subprocess
import sys

from hilbench.store import Store
from hilbench.store.schema import open_store

COUNT = (
    "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
    "print(c.execute('SELECT COUNT(*) FROM campaigns').fetchone()[0])"
)


def test_a_commit_after_a_second_open_is_seen_by_other_processes(tmp_path):
    db = tmp_path / "s.sqlite"
    writer = open_store(db, "write")
    try:
        with Store(db):  # a second connection in this process, opened and closed
            pass
        # another process opens and closes the store: it must not take itself for the last one
        subprocess.run([sys.executable, "-c", COUNT, str(db)], check=True, capture_output=True)
        writer.execute(
            "INSERT INTO campaigns (uid, name, config, wall_start) VALUES ('c1', 'n', '{}', 0)"
        )
        seen = subprocess.run([sys.executable, "-c", COUNT, str(db)], check=True,
                              capture_output=True, text=True).stdout.strip()
    finally:
        writer.close()
    assert seen == "1"
