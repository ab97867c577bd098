"""Files and folders that hold results, logs or keys are created owner-only, whatever the umask:
the mode is given at creation (``open(2)``'s and ``mkdir(2)``'s mode argument), so no other user
can read them even for a moment, and a umask of 000 cannot widen them. A file of ours that an
older version or another tool left readable by others is narrowed when opened."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path
from typing import IO, Any

FILE_MODE = 0o600
DIR_MODE = 0o700

_FLAGS = {
    "w": os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
    "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
    "a+": os.O_RDWR | os.O_CREAT | os.O_APPEND,
    "x": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
}


def private_dir(path: str | os.PathLike[str], *, parents: bool = False) -> Path:
    """Create folder ``path`` (and, with ``parents``, each missing folder above it) with mode
    0700; a folder that exists already is left as it is."""
    path = Path(path)
    missing = []
    for folder in (path, *path.parents):
        if folder.exists():
            break
        missing.append(folder)
        if not parents:
            break
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(folder, DIR_MODE)  # a umask such as 0o200 removes bits even from 0700
    if not path.is_dir():
        raise NotADirectoryError(f"{path} is not a folder")
    return path


def open_private(
    path: str | os.PathLike[str], mode: str = "a", *, binary: bool = False, **kw: Any
) -> IO[Any]:
    """``open(path, mode)`` where a new file gets mode 0600; ``mode`` is "w", "a", "a+" or "x"
    (text unless ``binary``)."""
    fd = os.open(path, _FLAGS[mode] | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & 0o077:
            os.fchmod(fd, stat.S_IMODE(st.st_mode) & 0o700)
    except BaseException:
        os.close(fd)
        raise
    if binary:
        return os.fdopen(fd, mode.replace("x", "w") + "b")
    kw.setdefault("encoding", "utf-8")
    return os.fdopen(fd, mode.replace("x", "w"), **kw)


class PrivateLogHandler(logging.FileHandler):
    """``logging.FileHandler`` whose file is owner-only (0600) whatever the umask."""

    def _open(self) -> IO[str]:
        return open_private(self.baseFilename, "a", encoding=self.encoding or "utf-8")
