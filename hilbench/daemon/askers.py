"""Who may ask the daemon more than "are you there": its owner, root, and the members of one
configured group; over CurveZMQ, the holders of an authorized key.

The daemon's local control socket is a Unix socket (``ipc://``) in its owner's logs folder, so
the file system already keeps other users out (mode 0600, or 0660 for the configured group).
Behind that, each connection is tagged with the peer the kernel names (``SO_PEERCRED``: uid,
gid, pid, which libzmq hands to a ZAP handler) and each request is judged by that: a peer that
may not ask gets "a daemon runs here" and nothing else, whatever the socket's mode. A plaintext
TCP peer cannot be named (any local user can reach 127.0.0.1), so it may ask only ``ping``,
unless the configuration says ``insecure = true``.
"""

from __future__ import annotations

import grp
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import zmq

ZAP_ENDPOINT = "inproc://zeromq.zap.01"
ZAP_DOMAIN = b"hilbench-control"
PLAINTEXT_TCP = "tcp"


class AskersError(ValueError):
    """The configured group does not exist; the message names it."""


def group_id(name: str | None) -> int | None:
    """The gid of group ``name`` (None: no group)."""
    if name is None:
        return None
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        raise AskersError(f"[daemon] group: no group named {name!r} on this host") from None


def _peer_groups(pid: int) -> set[int]:
    """The supplementary groups of process ``pid`` (the kernel's SO_PEERCRED names only the
    primary one)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Groups:"):
                    return {int(g) for g in line.split()[1:]}
    except (OSError, ValueError):
        pass
    return set()


@dataclass(frozen=True)
class Askers:
    """The rule: ``owner`` (the daemon's uid), root, members of ``group`` (a gid, if any); over
    plaintext TCP nobody, unless ``plaintext_tcp`` (the configuration's ``insecure``)."""

    owner: int
    group: int | None = None
    plaintext_tcp: bool = False

    def admits(self, peer: str) -> bool:
        """May the peer tagged ``peer`` (see :class:`PeerGate`) ask for status?"""
        if peer == PLAINTEXT_TCP:
            return self.plaintext_tcp
        try:
            uid, gid, pid = (int(part) for part in peer.split(":"))
        except ValueError:
            return False
        if uid in (self.owner, 0):
            return True
        return self.group is not None and (gid == self.group
                                           or self.group in _peer_groups(pid))


def peer_of(zap_address: bytes) -> str:
    """'uid:gid:pid' from the address libzmq gives a ZAP handler for a Unix-socket peer
    ('localhost:1000:1000:4242'), else PLAINTEXT_TCP."""
    parts = zap_address.decode("utf-8", "replace").rsplit(":", 3)
    if len(parts) == 4 and all(p.isdigit() for p in parts[1:]):
        return ":".join(parts[1:])
    return PLAINTEXT_TCP


def serve_requests(sock: zmq.Socket, stop: threading.Event,
                   answer: Callable[[list[zmq.Frame]], list[Any]]) -> None:
    """Answer each request on ``sock`` (its frames, uncopied) with ``answer``'s frames until
    ``stop`` is set (looked at every 0.2 s)."""
    poller = zmq.Poller()
    poller.register(sock, zmq.POLLIN)
    while not stop.is_set():
        if poller.poll(200):
            sock.send_multipart(answer(sock.recv_multipart(copy=False)))


class PeerGate:
    """A ZAP handler on ``context`` that lets every peer of an unkeyed socket connect and tags
    it with :func:`peer_of` as the messages' User-Id. Give the socket ``ZAP_DOMAIN`` (libzmq
    asks ZAP about NULL-security peers only when a domain is set)."""

    def __init__(self, context: zmq.Context) -> None:
        self._sock = context.socket(zmq.REP)
        self._sock.linger = 0
        self._sock.bind(ZAP_ENDPOINT)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="control-zap")
        self._thread.start()

    def _serve(self) -> None:
        serve_requests(self._sock, self._stop, self._answer)

    @staticmethod
    def _answer(frames: list[zmq.Frame]) -> list[bytes]:
        request_id = frames[1].bytes if len(frames) > 1 else b""
        peer = peer_of(frames[3].bytes) if len(frames) > 3 else PLAINTEXT_TCP
        return [b"1.0", request_id, b"200", b"OK", peer.encode(), b""]

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(2)
        self._sock.close(0)


def restrict_socket(path: str, group: int | None) -> None:
    """The control socket file: the owner's (0600), or also ``group``'s (0660), whatever the
    umask was when libzmq made it."""
    if group is not None:
        os.chown(path, -1, group)
    os.chmod(path, 0o660 if group is not None else 0o600)
