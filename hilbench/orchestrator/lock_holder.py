"""Who holds a lock, as the kernel says, with the holder's own line when the kernel agrees.

Anyone who can write a lock file can write any line in it, so the line alone proves nothing.
``/proc/locks`` lists, for each flock, the pid that took it and the file's device and inode; the
process's owner and command line are in ``/proc/PID``. A holder line is shown as written only
when its pid is the one the kernel names and the file is that process's user's, writable by no
one else; otherwise the kernel's facts are shown and the line is labelled as a claim.
"""

from __future__ import annotations

import os
import pwd
import re
import stat

PROC_LOCKS = "/proc/locks"
MAX_LINE = 500  # a holder line: pid, host, command (160), campaign name
_PID_LINE = re.compile(r"pid (\d+) ")


def user_name(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def printable(text: str, limit: int = MAX_LINE) -> str:
    """``text`` safe to print on one line of a terminal: no control characters (a lock file
    or a command line is another user's text), at most ``limit`` characters."""
    clean = "".join(c if c.isprintable() else "?" for c in " ".join(text.split()))
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def flock_holders(st: os.stat_result) -> list[int]:
    """The pids the kernel names as holding a flock on the file ``st`` describes (empty when
    ``/proc/locks`` cannot be read or shows none here, e.g. a holder in another pid
    namespace)."""
    key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    pids = []
    try:
        with open(PROC_LOCKS, "rb") as fh:
            for line in fh:
                fields = line.decode("utf-8", "replace").split()
                # "1: FLOCK  ADVISORY  WRITE 1234 fe:00:5678 0 EOF"; "->" marks a waiter
                if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == key:
                    pid = int(fields[4]) if fields[4].isdigit() else 0
                    if pid > 0:
                        pids.append(pid)
    except OSError:
        return []
    return pids


def process(pid: int) -> tuple[int | None, str]:
    """(owner uid, command line) of process ``pid``; (None, "") when it cannot be seen."""
    try:
        uid = os.stat(f"/proc/{pid}").st_uid
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read(4096)
    except OSError:
        return None, ""
    args = [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
    if args:
        args[0] = os.path.basename(args[0])
    return uid, printable(" ".join(args), 160)


def holder_line(fd: int) -> str:
    """The first line of the lock file open at ``fd``, printable, or ""."""
    try:
        raw = os.pread(fd, 1024, 0)
    except OSError:
        return ""
    return printable(raw.decode("utf-8", "replace").split("\n", 1)[0])


def describe_holder(fd: int, st: os.stat_result, *, line: bool = True) -> str:
    """Who holds the flock on the file open at ``fd`` (``st`` its fstat): the holder's own
    line when the kernel confirms it, else the kernel's pid, user and command, with the
    file's line labelled as a claim. ``line=False`` for a file no holder writes in (a device
    node)."""
    claim = holder_line(fd) if line and stat.S_ISREG(st.st_mode) else ""
    pids = flock_holders(st)
    if not pids:
        if claim:
            return (f"a process the kernel does not name here; its lock file, written by "
                    f"{user_name(st.st_uid)}, says: {claim}")
        return "another process (the kernel does not name it here)"
    pid = pids[0]
    uid, command = process(pid)
    match = _PID_LINE.match(claim)
    if (match and int(match.group(1)) == pid and uid == st.st_uid
            and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
        return claim
    who = f"pid {pid} ({user_name(uid) if uid is not None else 'user unknown'}"
    who += f", `{command}`)" if command else ")"
    if claim:
        who += f"; its lock file, written by {user_name(st.st_uid)}, claims: {claim}"
    return who
