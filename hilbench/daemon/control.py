"""The daemon's control socket, with the agents' rules.

A ZeroMQ ROUTER on its own thread answers JSON requests ``{"command": NAME}`` with one reply
shape, ``{"ok": true, "result": …}`` or ``{"ok": false, "error": "…"}``. Only the commands in
``COMMANDS`` exist (no open-ended dispatch). By default it is a Unix socket (``ipc://``) in the
daemon's logs folder; without keys a TCP address must be loopback (a non-loopback address is
refused unless the configuration says ``insecure``); with keys it is a CurveZMQ server that
admits only the public keys in the authorized folder, as an agent does.

Who may ask: ``ping`` anyone who reaches the socket ("a daemon runs here"); ``status`` and
``wake`` only the askers of :mod:`hilbench.daemon.askers` (owner, root, the configured group;
the holders of an authorized key).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import zmq

from hilbench.daemon.access import MAX_IPC_PATH
from hilbench.daemon.askers import (
    ZAP_DOMAIN,
    Askers,
    PeerGate,
    restrict_socket,
    serve_requests,
)

log = logging.getLogger(__name__)

COMMANDS = ("ping", "status", "wake")
FOR_ANYONE = ("ping",)  # tells nothing beyond "a daemon runs here"
MAX_REQUEST = 64 * 1024


class ControlError(RuntimeError):
    """The control socket cannot be opened or reached; the message says why."""


class NotAllowed(ControlError):
    """A daemon runs there, and it is not ours to ask (see :mod:`hilbench.daemon.askers`)."""


REFUSED = "a daemon runs here; only its owner (and its group, if it names one) may ask more"

class ControlServer:
    def __init__(
        self,
        address: str,
        handlers: dict[str, Callable[[], Any]],
        *,
        key: Path | None = None,
        authorized: Path | None = None,
        insecure: bool = False,
        group: int | None = None,
    ) -> None:
        from hilbench.wire import keys  # the server side only: the asking side stays light

        unknown = set(handlers) - set(COMMANDS)
        if unknown:
            raise ValueError(f"commands {sorted(unknown)} are not on the allow-list {COMMANDS}")
        if key is None and not keys.is_loopback(address) and not insecure:
            raise ControlError(
                f"control address {address} is reachable from other hosts: give the daemon a "
                "key and an authorized folder ([daemon] key, authorized), or bind 127.0.0.1"
            )
        path = address[len("ipc://"):] if address.startswith("ipc://") else None
        if path is not None and len(os.fsencode(path)) > MAX_IPC_PATH:
            raise ControlError(
                f"control socket path {path} is {len(os.fsencode(path))} bytes, longer than "
                f"the {MAX_IPC_PATH} a Unix socket's name may be: give a shorter one with "
                "--control ipc:///PATH (or [daemon] control)")
        self.handlers = handlers
        self.askers = Askers(os.geteuid(), group, plaintext_tcp=insecure)
        self._ctx = zmq.Context()
        self._gate: Any = None
        self._sock = self._ctx.socket(zmq.ROUTER)
        self._sock.linger = 0
        self._sock.maxmsgsize = MAX_REQUEST
        self.public_key: bytes | None = None
        if key is not None:
            pair = keys.load_pair(key)
            assert authorized is not None
            self._gate = keys.Gatekeeper(self._ctx, keys.load_authorized(authorized))
            keys.make_server(self._sock, pair)
            self.public_key = pair.public
        else:
            self._gate = PeerGate(self._ctx)
            self._sock.zap_domain = ZAP_DOMAIN
        try:
            self._sock.bind(address)
            if path is not None:
                restrict_socket(path, group)
        except (zmq.ZMQError, OSError) as exc:
            self.close()
            raise ControlError(f"cannot bind the control socket to {address}: {exc}") from None
        self.endpoint = self._sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="control")

    def start(self) -> None:
        self._thread.start()

    def _serve(self) -> None:
        serve_requests(self._sock, self._stop, self._reply)

    def _reply(self, frames: list[zmq.Frame]) -> list[Any]:
        reply = self._answer(frames[-1].bytes, self._admits(frames[-1]))
        return [*frames[:-1], json.dumps(reply, default=str).encode()]

    def _admits(self, frame: zmq.Frame) -> bool:
        """May the peer that sent ``frame`` ask more than ping? A keyed socket admitted it by
        its key already; an unkeyed one asks the rule about the peer the ZAP gate named."""
        if not isinstance(self._gate, PeerGate):
            return True
        try:
            peer = frame.get("User-Id")
        except zmq.ZMQError:
            return False
        return self.askers.admits(peer)

    def _answer(self, payload: bytes, admitted: bool = True) -> dict[str, Any]:
        try:
            request = json.loads(payload)
            command = request["command"]
        except (ValueError, TypeError, KeyError):
            return {"ok": False, "error": 'a request is JSON {"command": NAME}'}
        handler = self.handlers.get(command) if isinstance(command, str) else None
        if handler is None:
            return {"ok": False, "error": f"unknown command {command!r}; allowed: "
                                          f"{', '.join(sorted(self.handlers))}"}
        if not admitted and command not in FOR_ANYONE:
            return {"ok": False, "error": REFUSED}
        try:
            return {"ok": True, "result": handler()}
        except Exception as exc:  # the daemon goes on; the asker learns why
            log.exception("control command %s failed", command)
            return {"ok": False, "error": f"{command} failed: {type(exc).__name__}: {exc}"}

    def close(self) -> None:
        if hasattr(self, "_stop"):
            self._stop.set()
            if self._thread.is_alive():
                self._thread.join(2)
        self._sock.close(0)
        if self._gate is not None:
            self._gate.stop()
        self._ctx.term()
        bound = getattr(self, "endpoint", "")
        if bound.startswith("ipc://"):  # ours alone (one daemon per store): not left behind
            with contextlib.suppress(OSError):
                os.unlink(bound[len("ipc://"):])


def request(
    address: str,
    command: str,
    *,
    timeout_s: float = 2.0,
    key: Path | None = None,
    daemon_key: bytes | None = None,
) -> Any:
    """Ask the daemon at ``address``; returns the result or raises ControlError."""
    if address.startswith("ipc://") and key is None:
        path = address[len("ipc://"):]
        try:
            os.stat(path)
        except FileNotFoundError:
            raise ControlError(f"no daemon's control socket at {path} (not running)") from None
        except PermissionError:
            pass  # a folder on the way is not ours to pass: said below
        if not os.access(path, os.W_OK):
            raise NotAllowed(f"the daemon's control socket {path} is its owner's: only they "
                               "(and the group it names) may ask it")
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.REQ)
    sock.linger = 0
    sock.rcvtimeo = sock.sndtimeo = int(timeout_s * 1000)
    try:
        if key is not None:
            from hilbench.wire import keys

            if daemon_key is None:
                raise ControlError("with --key, give the daemon's public key (--daemon-key)")
            keys.make_client(sock, keys.load_pair(key), daemon_key)
        sock.connect(address)
        try:
            # A refused CurveZMQ handshake drops the connection's pipe, so the send itself may
            # wait out the timeout: the same "no answer" as a silent receive.
            sock.send(json.dumps({"command": command}).encode())
            reply = json.loads(sock.recv())
        except zmq.Again:
            raise ControlError(
                f"no answer from the daemon at {address} within {timeout_s:g} s (not running, "
                "or it does not hold our key)"
            ) from None
    finally:
        sock.close(0)
    if not reply.get("ok"):
        kind = NotAllowed if reply.get("error") == REFUSED else ControlError
        raise kind(f"the daemon at {address} says: {reply.get('error')}")
    return reply["result"]


def wake(queue: Any, bench: str | None = None) -> None:
    """Wake a running daemon of this host on this queue (best effort: it polls anyway), as
    `hilbench queue add` and the other queue commands do after a change."""
    info = queue.daemon_info(bench)
    address = info.get("control")
    if address and (info.get("host") == socket.gethostname() or not address.startswith(
            ("tcp://127.", "tcp://localhost", "ipc://"))):
        with contextlib.suppress(ControlError):
            request(address, "wake", timeout_s=0.3)
