"""Who may use a daemon's files: the owner only, or with a group the owner's group too."""

from __future__ import annotations

import os
from pathlib import Path

from hilbench.private_files import private_dir


def share_store(db: Path, group: int | None) -> None:
    """With a group that may use the daemon, the store file (and SQLite's -wal and -shm beside
    it) becomes that group's to read and write (0660): its members' `queue add` writes the
    queue. Without one it stays as made: the owner's only. (Their folder must let the group
    make files, as the service's setgid state directory does: SQLite makes -wal there.)"""
    if group is None:
        return
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        if st.st_uid == os.geteuid():
            os.chown(path, -1, group)
            os.chmod(path, 0o660)


def share_logs_folder(logs: Path, group: int | None) -> None:
    """The store's logs folder (made if missing): the owner's only (0700), or, with a group
    that may ask the daemon, one its members can pass through to the control socket but not
    list (0710; the logs in it stay 0600)."""
    private_dir(logs, parents=True)
    if os.stat(logs).st_uid != os.geteuid():
        return
    if group is not None:
        os.chown(logs, -1, group)
    os.chmod(logs, 0o710 if group is not None else 0o700)
