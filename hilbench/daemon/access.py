"""Who may use a daemon's files: the owner only, or with a group the owner's group too; and
where its control socket is when nobody says."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from hilbench.private_files import private_dir

CONTROL_SOCKET = "control.sock"  # in the store's logs folder: the default control address
MAX_IPC_PATH = 107  # sun_path holds 108 bytes with the final NUL


def default_control(logs: Path, group: int | None) -> str:
    """The control address of the daemon whose store keeps its logs in ``logs``:
    ``ipc://STORE.logs/control.sock``, or, where that path is longer than a Unix socket's name
    may be (a store deep in a folder tree), a socket named by the store's hash in this user's
    runtime folder (``$XDG_RUNTIME_DIR/hilbench``, else ``/tmp/hilbench-UID``), made owner-only
    (with ``group``: its members may pass, 0710). The address is written into the store, so
    `status` finds either."""
    beside = logs / CONTROL_SOCKET
    if len(os.fsencode(str(beside))) <= MAX_IPC_PATH:
        return f"ipc://{beside}"
    import hashlib
    import tempfile  # only here: `hilbench status` imports this module and stays light

    runtime = os.environ.get("XDG_RUNTIME_DIR")
    folder = (Path(runtime) / "hilbench" if runtime
              else Path(tempfile.gettempdir()) / f"hilbench-{os.geteuid()}")
    private_dir(folder, parents=True)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise OSError(f"{folder}: the folder for the control socket of {logs.parent} is not "
                      f"this user's own (owner uid {st.st_uid}, mode "
                      f"{stat.S_IMODE(st.st_mode):04o}); remove it, or give --control")
    if group is not None:
        os.chown(folder, -1, group)
    os.chmod(folder, 0o710 if group is not None else 0o700)
    name = hashlib.sha256(os.fsencode(str(logs))).hexdigest()[:20]
    return f"ipc://{folder / f'{name}.sock'}"


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
