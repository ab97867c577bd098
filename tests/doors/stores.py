"""Store files as users meet them: a real store with one campaign, and the ways it goes wrong
on disk (unreadable, read-only folder with a write-ahead log pending, truncated, not SQLite,
locked by another process). Checks of permissions run the command without root's power to
ignore file modes (``setpriv`` drops it), so they mean the same for root as for anyone."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

CAMPAIGN = "c1"


def make_store(path: Path) -> Path:
    """A store at ``path`` holding campaign ``c1`` with one finished run."""
    from hilbench.store import StoreWriter
    from tests.store.conftest import write_full_run

    with StoreWriter(path) as writer:
        writer.begin_campaign("camp", CAMPAIGN, {"nodes": [10]})
        write_full_run(writer)
        writer.end_campaign("camp", "success")
    return path


def with_wal_pending(store: Path, out: Path) -> Path:
    """A copy of ``store`` at ``out`` whose last change is only in its ``-wal`` file (as after
    a crash, or while its writer runs)."""
    conn = sqlite3.connect(store, isolation_level=None)
    try:
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("UPDATE campaigns SET reason = 'pending'")
        shutil.copyfile(store, out)
        shutil.copyfile(f"{store}-wal", f"{out}-wal")
    finally:
        conn.close()
    return out


def without_file_privilege(command: list[str]) -> list[str]:
    """``command`` run so that file modes bind it: as is for a user, through ``setpriv``
    without the capabilities that let root ignore them."""
    if os.geteuid() != 0:
        return command
    caps = "-dac_override,-dac_read_search,-fowner"
    return ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", "--", *command]


def with_pages_damaged(store: Path, out: Path, tables: tuple[str, ...]) -> Path:
    """A copy of ``store`` at ``out`` whose ``tables``' root pages are overwritten: the file
    opens, its schema reads, and a read of those tables meets the damage."""
    conn = sqlite3.connect(store)
    try:
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        roots = [conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?",
                              (name,)).fetchone()[0] for name in tables]
    finally:
        conn.close()
    data = bytearray(store.read_bytes())
    for root in roots:
        data[(root - 1) * page: root * page] = b"\xff" * page
    out.write_bytes(bytes(data))
    return out
