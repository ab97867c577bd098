"""What can go wrong with a store, told apart: a bad file (the user's input, exit 2), a damaged
store (salvage it), and a storage fault — a full disk, an I/O error, a read-only file system —
that stops a campaign (exit 4) but leaves every committed run intact, so the same command
resumes once the disk is fixed."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

# OSError numbers that mean the medium failed, not that the user named a wrong file.
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS, errno.EFBIG})

# SQLite primary result codes (sqlite3.h) and what they mean for a store.
_SQLITE_BUSY, _SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_NOTADB = (
    5, 8, 10, 11, 13, 26)
_FAULTS = {
    _SQLITE_FULL: "the disk is full",
    _SQLITE_IOERR: "an I/O error",
    _SQLITE_READONLY: "the store is read-only",
}
# Python < 3.11 has no sqlite_errorcode: the messages SQLite gives for the same codes.
_FAULT_MESSAGES = {
    "database or disk is full": _SQLITE_FULL,
    "disk i/o error": _SQLITE_IOERR,
    "attempt to write a readonly database": _SQLITE_READONLY,
    "database disk image is malformed": _SQLITE_CORRUPT,
    "file is not a database": _SQLITE_NOTADB,
    "database is locked": _SQLITE_BUSY,
}


class StoreError(Exception):
    """The store cannot be opened or a document cannot be stored; the message says why."""


class StoreFault(StoreError):
    """The store's medium failed (disk full, I/O error, read-only). Runs committed before it
    are intact; the campaign stops and the same command resumes once the disk is fixed."""


class StoreDamaged(StoreError):
    """SQLite found the file damaged (truncated, overwritten); `hilbench store check` says
    where and `hilbench store salvage` recovers the intact runs."""


def _primary_code(exc: sqlite3.Error) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return int(code) & 0xFF
    text = str(exc).lower()
    return next((c for message, c in _FAULT_MESSAGES.items() if message in text), None)


# PostgreSQL SQLSTATEs (and classes) that mean the medium or the link failed, not the request.
_PG_FAULTS = {
    "53100": "the database server's disk is full",
    "53200": "the database server is out of memory",
    "25006": "the store is read-only",
    "57P01": "the database server shut down",
    "57P02": "the database server shut down",
    "57P03": "the database server is not accepting connections",
}
_PG_FAULT_CLASSES = {"08": "the connection to the database was lost", "58": "a system error"}


def store_error(path: object, what: str, error: sqlite3.Error) -> StoreError:
    """The StoreError for a database error met while doing ``what`` with the store at
    ``path`` (a file, or a PostgreSQL target whose ``str()`` hides the password). One line:
    SQLite quotes a damaged schema, line breaks and all."""
    exc = " ".join(str(error).split())
    sqlstate = getattr(error, "sqlstate", None)
    if sqlstate is not None:  # PostgreSQL (hilbench.store.backend.PgError)
        fault = _PG_FAULTS.get(sqlstate) or _PG_FAULT_CLASSES.get(sqlstate[:2])
        if fault or not sqlstate:  # no SQLSTATE: the link failed before the server answered
            reason = fault or "the connection to the database failed"
            return StoreFault(f"{path}: could not {what}: {reason} ({exc})")
        return StoreError(f"{path}: could not {what}: {exc}")
    code = _primary_code(error)
    if code in _FAULTS:
        return StoreFault(f"{path}: could not {what}: {_FAULTS[code]} ({exc})")
    if code == _SQLITE_BUSY:
        return StoreError(f"{path}: could not {what}: another process holds the store locked "
                          f"and did not let go in time ({exc})")
    if code in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return damaged(path, what, exc)
    return StoreError(f"{path}: could not {what}: {exc}")


def if_damaged(path: object, what: str, error: BaseException) -> StoreDamaged | None:
    """The StoreDamaged for ``error`` when SQLite found the store at ``path`` damaged while
    doing ``what``, else None: for callers that let other database errors (a full disk, a lost
    server) go up as they are, since the daemon waits those out."""
    if not isinstance(error, sqlite3.DatabaseError):
        return None
    found = store_error(path, what, error)
    return found if isinstance(found, StoreDamaged) else None


def damaged(path: object, what: str, why: str) -> StoreDamaged:
    """The error for a store SQLite found damaged, with the commands that examine and rescue
    it."""
    why = " ".join(why.split())
    return StoreDamaged(
        f"{path}: could not {what}: the store is damaged ({why}); "
        f"`hilbench store check --db {path}` says where, "
        f"`hilbench store salvage {path} --out NEW` recovers the intact runs"
    )


def is_storage_fault(exc: BaseException) -> bool:
    """True for an error of the medium: a StoreFault, or an OSError such as ENOSPC or EROFS."""
    if isinstance(exc, StoreFault):
        return True
    return isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS


def access_problem(path: Path, write: bool) -> StoreError | None:
    """Why this user cannot open the SQLite store ``path`` (to ``write``, or to read), in the
    user's terms, or None when the file system allows it. SQLite says only "unable to open
    database file"; reading a store whose write-ahead log holds changes also needs the
    ``-shm`` file beside it, so a folder the user cannot write can stop a reader too."""
    if not os.access(path, os.R_OK):
        return StoreError(f"{path}: cannot be read: permission denied ({_owner(path)})")
    folder = path.parent
    folder_ok = os.access(folder, os.W_OK | os.X_OK)
    if write and not os.access(path, os.W_OK):
        return StoreFault(f"{path}: cannot be written: permission denied ({_owner(path)})")
    if write and not folder_ok:
        return StoreFault(f"{path}: cannot be written: SQLite keeps its journal beside the "
                          f"store, and folder {folder} is not writable by you "
                          f"({_owner(folder)})")
    wal, shm = (path.with_name(path.name + suffix) for suffix in ("-wal", "-shm"))
    if wal.exists() and not folder_ok and not (shm.exists() and os.access(shm, os.R_OK)):
        return StoreError(f"{path}: cannot be read here: its write-ahead log {wal.name} holds "
                          f"changes not yet in the store, and reading them needs {shm.name}, "
                          f"which cannot be made in {folder} (not writable by you, "
                          f"{_owner(folder)}); copy the store with its {wal.name} to a folder "
                          "you can write, or have its owner open it once")
    return None


def _owner(path: Path) -> str:
    try:
        st = path.stat()
    except OSError:
        return "not found"
    return f"owner uid {st.st_uid}, mode {st.st_mode & 0o7777:04o}; you are uid {os.geteuid()}"
