"""The daemon's control socket, with the agents' rules.

A ZeroMQ ROUTER on its own thread answers JSON requests ``{"command": NAME}`` with one reply
shape, ``{"ok": true, "result": …}`` or ``{"ok": false, "error": "…"}``. Only the commands in
``COMMANDS`` exist (no open-ended dispatch). Without keys it binds loopback only (a non-loopback
address is refused unless the configuration says ``insecure``); with keys it is a CurveZMQ
server that admits only the public keys in the authorized folder, as an agent does.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import zmq

log = logging.getLogger(__name__)

COMMANDS = ("ping", "status", "wake")
MAX_REQUEST = 64 * 1024


class ControlError(RuntimeError):
    """The control socket cannot be opened or reached; the message says why."""


class ControlServer:
    def __init__(
        self,
        address: str,
        handlers: dict[str, Callable[[], Any]],
        *,
        key: Path | None = None,
        authorized: Path | None = None,
        insecure: bool = False,
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
        self.handlers = handlers
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
        try:
            self._sock.bind(address)
        except zmq.ZMQError as exc:
            self.close()
            raise ControlError(f"cannot bind the control socket to {address}: {exc}") from None
        self.endpoint = self._sock.getsockopt_string(zmq.LAST_ENDPOINT)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True, name="control")

    def start(self) -> None:
        self._thread.start()

    def _serve(self) -> None:
        poller = zmq.Poller()
        poller.register(self._sock, zmq.POLLIN)
        while not self._stop.is_set():
            if not poller.poll(200):
                continue
            frames = self._sock.recv_multipart()
            reply = self._answer(frames[-1])
            self._sock.send_multipart([*frames[:-1], json.dumps(reply, default=str).encode()])

    def _answer(self, payload: bytes) -> dict[str, Any]:
        try:
            request = json.loads(payload)
            command = request["command"]
        except (ValueError, TypeError, KeyError):
            return {"ok": False, "error": 'a request is JSON {"command": NAME}'}
        handler = self.handlers.get(command) if isinstance(command, str) else None
        if handler is None:
            return {"ok": False, "error": f"unknown command {command!r}; allowed: "
                                          f"{', '.join(sorted(self.handlers))}"}
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


def request(
    address: str,
    command: str,
    *,
    timeout_s: float = 2.0,
    key: Path | None = None,
    daemon_key: bytes | None = None,
) -> Any:
    """Ask the daemon at ``address``; returns the result or raises ControlError."""
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
        sock.send(json.dumps({"command": command}).encode())
        try:
            reply = json.loads(sock.recv())
        except zmq.Again:
            raise ControlError(
                f"no answer from the daemon at {address} within {timeout_s:g} s (not running, "
                "or it does not hold our key)"
            ) from None
    finally:
        sock.close(0)
    if not reply.get("ok"):
        raise ControlError(f"the daemon at {address} says: {reply.get('error')}")
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
