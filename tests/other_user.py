"""Code run as another local user: a forked child of the test process (which runs as root, here
and in CI) that drops to that user's ids before it runs anything.

Forked rather than started: the child needs no interpreter or library that user could read
(the test's Python may live in root's home). So a child only calls what the parent has
imported already; pass it objects made in the parent (a loaded campaign), not paths to load.
"""

from __future__ import annotations

import contextlib
import os
import pickle
from collections.abc import Callable, Iterator
from typing import Any

import pytest

NOBODY = 65534  # uid and gid of `nobody` / `nogroup` on Debian and Ubuntu


def _become(uid: int, gid: int, groups: tuple[int, ...], env: dict[str, str | None] | None,
            umask: int | None) -> None:
    for name, value in (env or {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    if umask is not None:
        os.umask(umask)
    os.setgroups(list(groups))
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


def _send(fd: int, value: Any) -> None:
    try:
        data = pickle.dumps(value)
    except Exception as exc:  # an unpicklable result or exception: its text
        data = pickle.dumps(("raised", RuntimeError(f"{value!r} ({exc})")))
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _receive(fd: int) -> Any:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return pickle.loads(b"".join(chunks)) if chunks else ("raised", RuntimeError("no answer"))


def _outcome(value: Any) -> Any:
    kind, payload = value
    if kind == "raised":
        raise payload
    return payload


def _call(fn: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args)
    except BaseException as exc:
        return "raised", exc


def _fork(body: Callable[[], None], uid: int, gid: int, groups: tuple[int, ...],
          env: dict[str, str | None] | None, umask: int | None) -> int:
    """A child that becomes the user, runs ``body`` and exits (never back into pytest)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user")  # tests run as root here and in CI
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            _become(uid, gid, groups, env, umask)
            body()
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    return pid


def as_user(fn: Callable[..., Any], *args: Any, uid: int = NOBODY, gid: int = NOBODY,
            groups: tuple[int, ...] = (), env: dict[str, str | None] | None = None,
            umask: int | None = None) -> Any:
    """``fn(*args)`` as user ``uid`` (group ``gid``, supplementary ``groups``), with ``env``
    changes (None unsets) and ``umask``; returns its result or raises its exception here."""
    read, write = os.pipe()

    def body() -> None:
        os.close(read)
        _send(write, _call(fn, *args))

    pid = _fork(body, uid, gid, groups, env, umask)
    os.close(write)
    try:
        value = _receive(read)
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    return _outcome(value)


@contextlib.contextmanager
def holding_as_user(enter: Callable[..., Any], *args: Any, uid: int = NOBODY,
                    gid: int = NOBODY, env: dict[str, str | None] | None = None,
                    umask: int | None = None) -> Iterator[int]:
    """While the block runs, a child as user ``uid`` is inside ``with enter(*args):``; yields
    the child's pid (the holder's)."""
    ready_r, ready_w = os.pipe()
    done_r, done_w = os.pipe()

    def body() -> None:
        os.close(ready_r)
        os.close(done_w)
        try:
            with enter(*args):
                os.write(ready_w, b"+")
                os.read(done_r, 1)  # until the parent's block ends (or it dies)
        except BaseException as exc:
            _send(ready_w, ("raised", exc))

    pid = _fork(body, uid, gid, (), env, umask)
    os.close(ready_w)
    os.close(done_r)
    try:
        first = os.read(ready_r, 1)
        if first != b"+":
            rest = first + b"".join(iter(lambda: os.read(ready_r, 65536), b""))
            _outcome(pickle.loads(rest) if rest else ("raised", RuntimeError("child died")))
        yield pid
    finally:
        os.close(done_w)
        os.close(ready_r)
        os.waitpid(pid, 0)
