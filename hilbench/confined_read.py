"""Reading the files of a folder someone handed us (an audit bundle, a cassette) without leaving
it: a name inside is relative and normalised (no ``..``, no absolute path); every folder on the
way and the file itself are opened with ``O_NOFOLLOW`` from the folder's own descriptor, so no
symlink is followed anywhere, not even one swapped in while reading; only regular files are
read (no device, FIFO or socket), none on ``/proc`` or ``/sys``; and a file is read no further
than the size it had when opened (a file that grows, or a kernel file whose size says 0 and
that never ends, fails at once). Every refusal is a :class:`ConfinedError` naming the entry.

The folder itself is the one the user named, followed as given; what is inside it is not
trusted. (Writing files whose names come from names is another job: hilbench.safe_paths.)
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

BLOCK = 1 << 20
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a FIFO swapped in between the check and the open must not hang the open.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_KINDS = {stat.S_IFLNK: "a symlink", stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO",
          stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFSOCK: "a socket"}


class ConfinedError(ValueError):
    """An entry that may not be read; the message names it and says why."""


def entry_parts(name: str) -> tuple[str, ...]:
    """The components of ``name``, a relative, normalised path inside a folder; else
    :class:`ConfinedError` saying what is wrong with it."""
    if not isinstance(name, str) or not name:
        raise ConfinedError(f"{name!r}: not a file name")
    if any(ord(c) < 0x20 or c == "\x7f" for c in name):
        raise ConfinedError(f"{name!r}: a name with control characters")
    if name.startswith("/"):
        raise ConfinedError(f"{name}: an absolute path (names are relative to their folder)")
    parts = tuple(name.split("/"))
    if ".." in parts:
        raise ConfinedError(f"{name}: '..' leaves the folder")
    if any(part in ("", ".") for part in parts):
        raise ConfinedError(f"{name}: not a normalised name (an empty or '.' component)")
    return parts


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


@functools.cache
def _kernel_devices() -> frozenset[int]:
    """The devices of /proc and /sys: files there are not data, whatever their type says."""
    found = set()
    for place in ("/proc", "/sys"):
        with contextlib.suppress(OSError):
            found.add(os.stat(place).st_dev)
    return frozenset(found)


@dataclass(frozen=True)
class ConfinedFolder:
    """A folder whose entries are read only inside it (``prefix``: a sub-folder of ``root``
    reached the same way, e.g. a bundle's ``data/``)."""

    root: Path
    prefix: tuple[str, ...] = ()

    @property
    def path(self) -> Path:
        """Where it is (for messages and for writing beside it, never for reading)."""
        return self.root.joinpath(*self.prefix)

    def sub(self, name: str) -> ConfinedFolder:
        return ConfinedFolder(self.root, self.prefix + entry_parts(name))

    def __truediv__(self, name: str) -> Path:
        return self.path / name

    def __str__(self) -> str:
        return str(self.path)

    def label(self, name: str) -> str:
        """``name`` as a message shows it: the folder's path and the entry."""
        return str(self.path / name) if isinstance(name, str) else f"{self.path}/{name!r}"

    @contextlib.contextmanager
    def _parent(self, parts: tuple[str, ...], name: str) -> Iterator[int]:
        """A descriptor of the folder holding ``parts[-1]``, reached without a symlink."""
        try:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise ConfinedError(f"{self.root}: cannot be read as a folder "
                                f"({exc.strerror})") from None
        try:
            for i, part in enumerate(self.prefix + parts[:-1]):
                where = "/".join((self.prefix + parts)[: i + 1])
                try:
                    st = os.stat(part, dir_fd=fd, follow_symlinks=False)
                    if not stat.S_ISDIR(st.st_mode):
                        raise ConfinedError(f"{self.root / where}: {_kind(st.st_mode)}, not a "
                                            f"folder (on the way to {name})")
                    inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    raise _refusal(self.root / where, exc) from None
                os.close(fd)
                fd = inner
            yield fd
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def open(self, name: str, *, max_bytes: int | None = None) -> Iterator[ConfinedFile]:
        """The regular file ``name``, opened inside the folder; ``max_bytes``: refuse a
        larger file before reading a byte of it."""
        parts = entry_parts(name)
        label = self.label(name)
        with self._parent(parts, label) as folder:
            try:
                st = os.stat(parts[-1], dir_fd=folder, follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode):
                    raise ConfinedError(f"{label}: {_kind(st.st_mode)}, not a regular file")
                fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=folder)
            except OSError as exc:
                raise _refusal(Path(label), exc) from None
        try:
            opened = os.fstat(fd)
            if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino) \
                    or not stat.S_ISREG(opened.st_mode):
                raise ConfinedError(f"{label}: replaced while being opened")
            if opened.st_dev in _kernel_devices():
                raise ConfinedError(f"{label}: a kernel file (/proc or /sys), not data")
            if max_bytes is not None and opened.st_size > max_bytes:
                raise ConfinedError(f"{label}: {opened.st_size} bytes, more than the "
                                    f"{max_bytes} it may hold")
            os.set_blocking(fd, True)
            with os.fdopen(fd, "rb", buffering=0) as fh:
                fd = -1
                yield ConfinedFile(label, fh, opened.st_size)
        finally:
            if fd >= 0:
                os.close(fd)

    def read(self, name: str, *, max_bytes: int | None = None) -> bytes:
        """The whole of file ``name`` (at most ``max_bytes``)."""
        with self.open(name, max_bytes=max_bytes) as f:
            return f.read_all()

    def exists(self, name: str) -> bool:
        """True when ``name`` is there, whatever it is (reading it is checked by open)."""
        parts = entry_parts(name)
        try:
            with self._parent(parts, self.label(name)) as folder:
                os.stat(parts[-1], dir_fd=folder, follow_symlinks=False)
        except (ConfinedError, OSError):
            return False
        return True

    def sha256(self, name: str, *, max_line_bytes: int | None = None) -> str:
        """The sha256 of file ``name`` read in blocks; ``max_line_bytes``: a text file whose
        line runs longer fails there, without reading on."""
        digest = hashlib.sha256()
        since_newline = 0
        with self.open(name) as f:
            for block in f.blocks():
                digest.update(block)
                if max_line_bytes is None:
                    continue
                last = block.rfind(b"\n")
                if last < 0:
                    since_newline += len(block)
                else:
                    since_newline += block.find(b"\n")
                    if since_newline <= max_line_bytes:
                        since_newline = len(block) - last - 1
                if since_newline > max_line_bytes:
                    raise ConfinedError(f"{f.name}: a line longer than {max_line_bytes} bytes")
        return digest.hexdigest()

    def walk(self, sub: str | None = None) -> Iterator[tuple[str, str, int]]:
        """``(name, kind, size)`` of every entry under ``sub`` (default: the folder), names
        relative to the folder, sorted per folder; ``kind`` is "file", "folder" or what else
        it is ("a symlink", "a FIFO"...). Symlinks are listed, never followed."""
        start = entry_parts(sub) if sub else ()
        pending = [start]
        while pending:
            parts = pending.pop()
            label = self.label("/".join(parts) or ".")
            with self._parent((*parts, "."), label) as folder:
                try:
                    entries = [(n, os.stat(n, dir_fd=folder, follow_symlinks=False))
                               for n in sorted(os.listdir(folder))]
                except OSError as exc:
                    raise _refusal(Path(label), exc) from None
            for entry, st in entries:
                name = "/".join((*parts, entry))
                if stat.S_ISDIR(st.st_mode):
                    yield name, "folder", 0
                    pending.append((*parts, entry))
                elif stat.S_ISREG(st.st_mode):
                    yield name, "file", st.st_size
                else:
                    yield name, _kind(st.st_mode), 0


@dataclass
class ConfinedFile:
    """An open regular file and the size it had when opened: read no further."""

    name: str
    fh: BinaryIO
    size: int

    def blocks(self, block: int = BLOCK) -> Iterator[bytes]:
        left = self.size
        while left > 0:
            data = self.fh.read(min(block, left))
            if not data:
                raise ConfinedError(f"{self.name}: shorter than its size {self.size} "
                                    "(cut while being read)")
            left -= len(data)
            yield data
        if self.fh.read(1):
            raise ConfinedError(f"{self.name}: more bytes than its size {self.size} (it "
                                "grew while being read, or is no ordinary file)")

    def read_all(self) -> bytes:
        return b"".join(self.blocks())

    def lines(self, max_line_bytes: int) -> Iterator[bytes]:
        """Its lines, each with its newline (a last line may lack one), none longer than
        ``max_line_bytes``: a longer one fails without being read whole."""
        pending = b""
        for block in self.blocks():
            start = 0
            while True:
                end = block.find(b"\n", start)
                if end < 0:
                    break
                line = pending + block[start:end + 1]
                pending = b""
                if len(line) > max_line_bytes + 1:
                    raise ConfinedError(f"{self.name}: a line longer than {max_line_bytes} "
                                        "bytes")
                yield line
                start = end + 1
            pending += block[start:]
            if len(pending) > max_line_bytes:
                raise ConfinedError(f"{self.name}: a line longer than {max_line_bytes} bytes")
        if pending:
            yield pending


def _refusal(path: Path, exc: OSError) -> ConfinedError:
    if exc.errno == errno.ENOENT:
        return ConfinedError(f"{path}: missing")
    if exc.errno == errno.ELOOP:
        return ConfinedError(f"{path}: a symlink (not followed)")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return ConfinedError(f"{path}: cannot be read (permission denied)")
    return ConfinedError(f"{path}: cannot be read ({exc.strerror or exc})")


def confined(folder: str | os.PathLike[str] | ConfinedFolder) -> ConfinedFolder:
    """``folder`` as a :class:`ConfinedFolder` (a path: the folder the user named)."""
    return folder if isinstance(folder, ConfinedFolder) else ConfinedFolder(Path(folder))
