"""Names are not paths: the one place where a name hilbench did not choose (a campaign name, an
agent id, a system or instrument name, a run uid, a stream or figure name) becomes a file name,
and where a relative path read from a file, a URL or a store is checked to stay in its folder.

:func:`safe_name` turns any text into one plain file name (no separator, never ``.`` or ``..``,
no leading dot or dash); when it had to change the text it adds a short hash of the original, so
two names that differ only in the characters it replaced still get two files.
:func:`inside` joins a folder and a relative name and refuses a result outside the folder,
symbolic links included; :func:`open_inside` opens such a file without following a link in its
last component, and for reading accepts only a regular file.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path, PurePosixPath
from typing import IO, Any

ALLOWED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
MAX_LENGTH = 96  # leaves room for a prefix, the hash and a suffix within NAME_MAX (255)
HASH_LENGTH = 8


class OutsideFolder(OSError):
    """A path refused: it would leave its folder (``..``, absolute, a symbolic link pointing
    out) or is not a plain regular file. An OSError, so every command that reports a file it
    cannot write or read in one line reports this one too."""


def safe_name(text: str, *, empty: str = "unnamed") -> str:
    """``text`` as one file name of ``[A-Za-z0-9._-]``: other characters become ``_``, a leading
    dot or dash too, and the name is cut to :data:`MAX_LENGTH`; if anything changed, ``-`` and
    the first 8 hex digits of the text's sha256 follow, so the result is unique in practice.
    The same text always gives the same name (report figures are byte-identical run to run)."""
    kept = "".join(c if c in ALLOWED else "_" for c in text)
    if kept[:1] in (".", "-"):
        kept = "_" + kept[1:]
    kept = kept[:MAX_LENGTH]
    if kept == text and text:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_LENGTH]
    return f"{kept or empty}-{digest}"


def relative_parts(name: str | os.PathLike[str]) -> tuple[str, ...]:
    """The parts of a plain relative path; :class:`OutsideFolder` for an absolute path, an
    empty, ``.`` or ``..`` part, a backslash or a NUL."""
    text = os.fspath(name)
    if "\x00" in text:
        raise OutsideFolder(f"{text!r}: a NUL character in a path")
    if "\\" in text:
        raise OutsideFolder(f"{text!r}: a backslash in a path")
    path = PurePosixPath(text)
    if path.is_absolute():
        raise OutsideFolder(f"{text}: an absolute path where a name inside a folder was expected")
    parts = tuple(text.split("/"))
    if not parts or any(p in ("", ".", "..") for p in parts):
        raise OutsideFolder(f"{text!r}: not a plain relative path (empty, '.' or '..' part)")
    return parts


def inside(folder: str | os.PathLike[str], name: str | os.PathLike[str]) -> Path:
    """``folder / name``, refused (:class:`OutsideFolder`) unless ``name`` is a relative path
    without ``.``, ``..`` or empty parts and the result, with every symbolic link resolved, is
    in ``folder`` (itself resolved: a folder that is a link is the user's choice)."""
    parts = relative_parts(name)
    target = Path(folder).joinpath(*parts)
    root, real = Path(folder).resolve(), target.resolve()
    if root not in real.parents:
        # no '..' and not absolute: only a symbolic link on the way can lead out
        raise OutsideFolder(f"{target}: a symbolic link leading outside {folder} (to {real})")
    return target


_WRITE_FLAGS = {
    "w": os.O_WRONLY | os.O_CREAT,  # truncated once checked
    "x": os.O_WRONLY | os.O_CREAT | os.O_EXCL,
    "a": os.O_WRONLY | os.O_CREAT | os.O_APPEND,
}


def _open_flags(kind: str, mode: str) -> int:
    """os.open flags for ``kind`` (r, w, x, a): never following a link in the last part."""
    if kind == "r":
        flags = os.O_RDONLY
    elif kind in _WRITE_FLAGS:
        flags = _WRITE_FLAGS[kind]
    else:
        raise ValueError(f"mode {mode!r}: r, w, x or a, with b for binary")
    # O_NONBLOCK: a FIFO put in the file's place must not hang the open (it is then refused)
    return flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


def _check_opened(fd: int, path: Any, kind: str) -> None:
    """What was opened is a regular file, and (to write) has no other hard link."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise OutsideFolder(f"{path}: not a regular file")
    if kind != "r" and info.st_nlink > 1:  # a hard link: the same file elsewhere too
        raise OutsideFolder(f"{path}: has other hard links, refused")


def open_inside(folder: str | os.PathLike[str], name: str | os.PathLike[str],
                mode: str = "rb", *, file_mode: int = 0o666, **kw: Any) -> IO[Any]:
    """Open ``name`` in ``folder`` (checked by :func:`inside`) without following a symbolic
    link in its last part. ``mode``: ``r``, ``w``, ``x`` or ``a``, ``b`` for binary. Reading
    accepts a regular file only (no device, FIFO or folder), and so does writing; a new file
    gets ``file_mode`` less the umask (as with :func:`open`; 0o600 for a private file)."""
    path = inside(folder, name)
    kind = mode.replace("b", "")
    binary = "b" in mode
    flags = _open_flags(kind, mode)
    try:
        fd = os.open(path, flags, file_mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise OutsideFolder(f"{path}: a symbolic link, refused") from None
        if exc.errno == errno.ENXIO:
            raise OutsideFolder(f"{path}: not a regular file") from None
        raise
    try:
        _check_opened(fd, path, kind)
        if kind == "w":
            os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
        if binary:
            return os.fdopen(fd, kind + "b")
        kw.setdefault("encoding", "utf-8")
        return os.fdopen(fd, kind, **kw)
    except BaseException:
        os.close(fd)
        raise


def write_inside(folder: str | os.PathLike[str], name: str | os.PathLike[str],
                 data: bytes | str, *, file_mode: int = 0o666) -> Path:
    """Write ``data`` to ``name`` in ``folder`` (replacing a regular file, never through a
    link); returns the path."""
    with open_inside(folder, name, "wb", file_mode=file_mode) as fh:
        fh.write(data.encode("utf-8") if isinstance(data, str) else data)
    return inside(folder, name)
