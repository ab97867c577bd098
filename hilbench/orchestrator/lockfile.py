"""Lock files no other local user can redirect, fake or dodge.

A lock is an exclusive ``flock`` on a file; the kernel releases it however its holder dies.
The flock is the truth. The line a holder writes in its file ("pid N on HOST (`command`,
campaign NAME)") is only a hint for the next asker, believed when the kernel agrees (see
:mod:`hilbench.orchestrator.lock_holder`).

What another user could hand us, and what happens:

- a lock folder that is a symlink, not a folder, another user's, or writable by others without
  the sticky bit (so they could remove or swap our lock files): refused, naming it;
- a symlink, FIFO, device or hard link in place of a lock file: refused, naming it; nothing is
  opened through it (``O_NOFOLLOW``; the file is looked at before it is opened);
- a lock file of theirs that nobody holds: taken (the kernel says it is free); replaced by our
  own when we may remove it, else held without our line in it;
- a lock file of theirs that they hold: refused, naming the holder the kernel names.

A shared lock file (the bench locks) is readable by everyone (0644), so any user can open it to
take the lock or to read who holds it, and it is removed when released, so the next holder owns
the file it writes in. A private lock file (a store's campaign and daemon locks) is 0600 and
stays.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from pathlib import Path

from hilbench.orchestrator.lock_holder import describe_holder, user_name

MAX_LOCK_FILE = 4096  # a holder line is one short line: anything larger is no lock file of ours
SHARED_FILE_MODE = 0o644
PRIVATE_FILE_MODE = 0o600
SHARED_FOLDER_MODE = 0o1777  # as /run/lock and /tmp: anyone makes files, removes only their own
_OPEN = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class LockRefused(RuntimeError):
    """A lock folder or file hilbench will not use; the message names it and says why."""


class Held(Exception):
    """Another process holds the lock; ``holder`` says who (pid, user, command, campaign)."""

    def __init__(self, holder: str) -> None:
        super().__init__(holder)
        self.holder = holder


def _check_folder(st: os.stat_result, path: Path, fix: str, what: str = "lock folder") -> None:
    me = os.geteuid()
    if not stat.S_ISDIR(st.st_mode):
        raise LockRefused(f"{what} {path} is not a folder")
    if st.st_uid not in (0, me):
        trusted = "root" if me == 0 else f"root or you, {user_name(me)}"
        raise LockRefused(
            f"{what} {path} belongs to {user_name(st.st_uid)}, not to {trusted}: its owner "
            f"could remove or replace the locks in it; {fix}")
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        raise LockRefused(
            f"{what} {path} is writable by other users without the sticky bit: they could "
            f"remove or replace the locks in it; {fix}")


def open_folder(path: Path, *, shared: bool = False, fix: str = "") -> int:
    """A descriptor of lock folder ``path`` and of no other (a symlink there is refused, not
    followed), after checking it: owned by root or by us, writable by others only with the
    sticky bit. A ``shared`` folder (every user's bench locks) is created if missing, mode
    1777 whatever the umask, and each folder above it is checked too (no other user may
    rename it away). Raises LockRefused naming the folder."""
    fix = fix or "remove it, or give another folder"
    path = Path(os.path.abspath(path))
    made = False
    try:
        if shared:
            above = Path(os.path.realpath(path.parent))
            for folder in (above, *above.parents):
                _check_folder(os.stat(folder), folder, "give a lock folder in a safe place",
                              f"folder above lock folder {path},")
        try:
            if stat.S_ISLNK(os.lstat(path).st_mode):
                raise LockRefused(f"lock folder {path} is a symlink; {fix}")
        except FileNotFoundError:
            if not shared:
                raise LockRefused(f"lock folder {path} does not exist") from None
            try:
                os.mkdir(path, 0o700)  # widened below, once it is known to be ours
                made = True
            except FileExistsError:
                pass
        fd = os.open(path, _FOLDER)
    except OSError as exc:
        raise LockRefused(
            f"lock folder {path}: {exc.strerror}; have root make it, mode 1777 (`install -d -m "
            f"1777 {path}`, or the tmpfiles.d line `hilbench systemd` prints), or give another "
            "folder" if shared else f"lock folder {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        _check_folder(st, path, fix)
        if made and st.st_uid == os.geteuid():
            os.fchmod(fd, SHARED_FOLDER_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


class LockFile:
    """A held lock: ``close()`` (or the end of a ``with`` block, or the process's death)
    releases it."""

    def __init__(self, fd: int, folder_fd: int | None, name: str, path: Path, *,
                 remove: bool = False) -> None:
        self.fd = fd
        self._folder_fd = folder_fd
        self._name = name
        self.path = path
        self._remove = remove

    def fileno(self) -> int:
        return self.fd

    def close(self) -> None:
        if self.fd < 0:
            return
        folder = self._folder_fd
        if folder is not None and self._remove and _same_file(folder, self._name,
                                                              os.fstat(self.fd)):
            # Removed while still held: whoever opened it meanwhile finds, once they hold it,
            # that it is no longer the file at this name, and takes the new one.
            with contextlib.suppress(OSError):
                os.unlink(self._name, dir_fd=folder)
        os.close(self.fd)
        if folder is not None:
            os.close(folder)
        self.fd = -1

    def __enter__(self) -> LockFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _same_file(folder_fd: int, name: str, st: os.stat_result) -> bool:
    try:
        now = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino)


def _refuse_unless_lock_file(st: os.stat_result, path: Path) -> None:
    if stat.S_ISLNK(st.st_mode):
        raise LockRefused(f"lock file {path} is a symlink (hilbench makes none): remove it")
    if not stat.S_ISREG(st.st_mode):
        raise LockRefused(f"lock file {path} is not a regular file: remove it")
    if st.st_nlink != 1:
        raise LockRefused(f"lock file {path} has {st.st_nlink} names (hard links; hilbench "
                          "makes one): remove it")
    if st.st_size > MAX_LOCK_FILE:
        raise LockRefused(f"lock file {path} holds {st.st_size} bytes, no lock line: remove it")


def _open_lock_file(folder_fd: int, name: str, path: Path, mode: int) -> int:
    """The regular file ``name``, opened (created if missing); looked at before it is opened,
    so a FIFO or device is never opened."""
    while True:
        try:
            seen = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
        except FileNotFoundError:
            try:
                fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | _OPEN, mode,
                             dir_fd=folder_fd)
            except FileExistsError:
                continue  # made by another meanwhile: look at it
            os.fchmod(fd, mode)  # whatever the umask: others must be able to open a shared one
            return fd
        _refuse_unless_lock_file(seen, path)
        try:
            fd = os.open(name, os.O_RDWR | _OPEN, dir_fd=folder_fd)
        except PermissionError:  # another user's: open to lock and read, not to write
            try:
                fd = os.open(name, os.O_RDONLY | _OPEN, dir_fd=folder_fd)
            except PermissionError:
                raise LockRefused(
                    f"lock file {path} is {user_name(seen.st_uid)}'s and unreadable to you "
                    "(hilbench makes them readable to all): remove it") from None
        except FileNotFoundError:
            continue
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # swapped for a symlink since we looked
                raise LockRefused(f"lock file {path} is a symlink (hilbench makes none): "
                                  "remove it") from None
            raise
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) != (seen.st_dev, seen.st_ino):
            os.close(fd)
            continue  # swapped since we looked: look again
        return fd


def hold(path: Path, who: str, *, shared: bool = False) -> LockFile:
    """Take lock file ``path`` now and write ``who`` in it for the next asker; raise Held
    naming the holder if another process has it, LockRefused if the folder or the file is
    not safe to use. ``shared``: a lock other users take too (see the module's docstring)."""
    path = Path(path)
    folder_fd = open_folder(path.parent, shared=shared)
    try:
        return _hold_in(folder_fd, path, who, shared)
    except OSError as exc:  # not one of the refusals above: the file system's own error
        os.close(folder_fd)
        raise LockRefused(f"lock file {path}: {exc.strerror}") from None
    except BaseException:
        os.close(folder_fd)
        raise


def _hold_in(folder_fd: int, path: Path, who: str, shared: bool) -> LockFile:
    name = path.name
    mode = SHARED_FILE_MODE if shared else PRIVATE_FILE_MODE
    while True:
        try:
            fd = _open_lock_file(folder_fd, name, path, mode)
        except PermissionError as exc:
            raise LockRefused(f"cannot make lock file {path}: {exc.strerror} (its folder must "
                              "let every user of the bench make files: mode 1777)") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            st = os.fstat(fd)
            holder = describe_holder(fd, st)
            os.close(fd)
            raise Held(holder) from None
        except BaseException:
            os.close(fd)
            raise
        st = os.fstat(fd)
        if not _same_file(folder_fd, name, st):
            os.close(fd)  # released and removed by its holder while we opened it: again
            continue
        if st.st_uid != os.geteuid():
            # Another user's file that nobody holds: ours to replace if we may remove it
            # (root, or the folder's owner), else held as it is, without our line.
            try:
                os.unlink(name, dir_fd=folder_fd)
            except OSError:
                return LockFile(fd, folder_fd, name, path, remove=shared)
            os.close(fd)
            continue
        try:
            os.fchmod(fd, mode)
            line = (" ".join(who.split()) + "\n").encode("utf-8", "replace")[:1024]
            os.ftruncate(fd, 0)
            os.pwrite(fd, line, 0)
        except BaseException:
            os.close(fd)
            raise
        return LockFile(fd, folder_fd, name, path, remove=shared)


def hold_device(node: str) -> LockFile | None:
    """An exclusive flock on device node ``node`` (a serial port), where pyserial
    (``exclusive=True``), picocom and tio take theirs: none of them, and no other campaign,
    opens the port meanwhile. None when the node cannot be opened here (not a character
    device, missing, no permission: the driver that opens it says why); Held naming the holder
    the kernel names when another has it."""
    real = Path(os.path.realpath(node))
    try:
        fd = os.open(real, os.O_RDONLY | _OPEN)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISCHR(st.st_mode):
        os.close(fd)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = describe_holder(fd, st, line=False)
        os.close(fd)
        raise Held(holder) from None
    return LockFile(fd, None, real.name, real)
