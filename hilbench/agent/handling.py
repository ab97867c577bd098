"""How the agent answers each message: handshake, sessions and ownership, requests, status.

The half of :class:`hilbench.agent.runtime.AgentRuntime` that decides what a message means (a
mixin); the runtime owns the socket, the threads and the sending. Nothing a peer sends can stop
the agent: a malformed message gets a typed error reply, anything unforeseen an ``internal``
error whose incident id finds the traceback in the log.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import dataclass
from typing import Any

import zmq

from hilbench import __version__
from hilbench.agent.connections import ConnectionGuard
from hilbench.agent.dispatch import Dispatcher, capabilities_for_version
from hilbench.agent.driver import Driver, DriverError
from hilbench.agent.guard import BadMessageLog, Connection, LogLimiter, MemoryBudget
from hilbench.agent.turns import Job
from hilbench.clock import now
from hilbench.wire import codec, keys
from hilbench.wire.codec import Message, ProtocolError

log = logging.getLogger("hilbench.agent.runtime")

DEVICE_COMMANDS = frozenset({"configure", "load", "run", "noop"})
INLINE_COMMANDS = frozenset({"status", "stop", "echo", "shutdown"})
# Commands that end or replace another client's work: only the session that owns the device
# may send them while it is known to the agent.
OWNED_COMMANDS = frozenset({"configure", "load", "run", "noop", "stop", "shutdown"})
SESSION_MAX_CHARS = 64


@dataclass
class Peer:
    route: list[bytes]
    last_seen: float
    greeted: bool = False
    session: str = ""  # from its hello (or its routing id): who owns the device's work
    version: int = codec.PROTOCOL_VERSION  # agreed in the handshake: every message to it says so


class MessageHandling:
    """The message half of the agent runtime (a mixin): the runtime provides the sending
    (``_send``, ``_send_error``, ``_send_reply``, ``_incident``) and the state declared here."""

    driver: Driver
    dispatcher: Dispatcher
    agent_id: str
    bind_address: str | None
    heartbeat_s: float
    liveness: int
    max_payload_bytes: int
    key: keys.KeyPair | None
    stats: Any
    budget: MemoryBudget
    bad_messages: BadMessageLog
    log_limiter: LogLimiter
    guard: ConnectionGuard | None
    shutdown_by: str | None
    _peers: dict[bytes, Peer]
    _peer: Peer | None
    _conn: Connection | None
    _owner: str | None
    _current_id: str | None
    _busy_with: str | None
    _admitted: Job | None
    _stop_run: threading.Event
    _shutdown: threading.Event

    def _handle(self, sock: zmq.Socket, route: list[bytes], frames: list[Any]) -> None:
        """Handle one message; whatever goes wrong, answer and go on serving."""
        self._current_id = None
        try:
            self._handle_message(sock, route, frames)
        except Exception:
            cid = self._current_id
            try:
                self.stats.errors += 1
                self._send(sock, route, self._incident(route, cid, "handling a message"))
            except Exception:  # even the error reply failed: the log has it, serve on
                self.log_limiter.log(
                    "unsent internal error",
                    logging.ERROR,
                    "could not send an internal-error reply",
                    exc_info=True,
                )

    def _handle_message(self, sock: zmq.Socket, route: list[bytes], frames: list[Any]) -> None:
        key = route[0] if route else b""
        t_recv = now()
        try:
            msg = codec.decode(frames, self.max_payload_bytes)
        except ProtocolError as exc:
            self.bad_messages.note(key, exc.code, str(exc))
            self._send_error(sock, route, exc.code, str(exc), exc.correlation_id)
            return
        self._current_id = msg.id
        peer = self._peers.get(key)
        if peer is not None:
            peer.last_seen = t_recv
            if not peer.greeted:
                peer = None  # a connecting agent's orchestrator has not said hello yet
        mtype = msg.type
        self._peer = peer
        if mtype == codec.REQUEST and peer is not None:
            self._handle_request(sock, route, msg, frames)
        elif mtype == codec.HEARTBEAT:
            self.stats.heartbeats_received += 1  # from a peer not greeted: no reply, no state
        elif mtype == codec.PING and peer is not None:
            body = {"t1": msg.body.get("t1"), "t2": t_recv, "t3": now()}
            self._send(sock, route, Message(type=codec.PONG, id=msg.id, body=body))
        elif mtype == codec.HELLO:
            self._hello(sock, route, key, msg)
        elif mtype in (codec.REQUEST, codec.PING):
            self.bad_messages.note(key, "hello_first", mtype)
            self._send_error(
                sock,
                route,
                "hello_first",
                f"send hello before any {mtype} (this agent has no handshake with you, "
                "or forgot it after you were silent for its liveness window)",
                msg.id,
            )
        else:
            self.bad_messages.note(key, "unexpected_type", mtype)
            self._send_error(
                sock, route, "unexpected_type", f"an agent does not accept {mtype} messages", msg.id
            )

    def _hello(self, sock: zmq.Socket, route: list[bytes], key: bytes, msg: Message) -> None:
        versions = msg.body.get("versions")
        if type(versions) is not list or not all(type(v) is int for v in versions):
            self._send_error(
                sock, route, "bad_arguments", "hello needs versions: a list of integers", msg.id
            )
            return
        common = [v for v in codec.SUPPORTED_VERSIONS if v in versions]
        if not common:
            self._send_error(
                sock,
                route,
                "unsupported_version",
                f"no common protocol version: you offer {versions[:8]}, this agent speaks "
                f"{list(codec.SUPPORTED_VERSIONS)}",
                msg.id,
                supported=list(codec.SUPPORTED_VERSIONS),
            )
            return
        session = msg.body.get("session")
        if session is not None and (type(session) is not str or len(session) > SESSION_MAX_CHARS):
            self._send_error(
                sock, route, "bad_arguments",
                f"hello's session must be a string of at most {SESSION_MAX_CHARS} characters",
                msg.id,
            )
            return
        version = max(common)
        try:
            body = self._welcome(version)
        except DriverError as exc:  # no device to describe (unplugged, wrong port): one line
            where = {"key": exc.key} if exc.key else {}
            self._send_error(sock, route, exc.code, f"the driver cannot describe its device: "
                             f"{exc}", msg.id, **where)
            return
        self._peers[key] = Peer(
            route=route, last_seen=now(), greeted=True, session=session or key.hex(),
            version=version,
        )
        self._send(sock, route, Message(type=codec.WELCOME, id=msg.id, body=body))

    def _handle_request(
        self, sock: zmq.Socket, route: list[bytes], msg: Message, frames: list[Any]
    ) -> None:
        cmd = msg.cmd
        if cmd in OWNED_COMMANDS and not self._owns(sock, route, msg):
            return
        if cmd in DEVICE_COMMANDS:
            self._take_device_command(sock, route, msg, frames)
        elif cmd in INLINE_COMMANDS:
            self.stats.served += 1
            self._answer_inline(sock, route, msg, frames)
        else:
            known = sorted(DEVICE_COMMANDS | INLINE_COMMANDS)
            self._send_error(
                sock, route, "unknown_command", f"unknown command {cmd!r}", msg.id, known=known
            )

    def _take_device_command(
        self, sock: zmq.Socket, route: list[bytes], msg: Message, frames: list[Any]
    ) -> None:
        """Hand a device command to the driver thread, unless the device is busy or the memory
        budget refuses it."""
        if self._busy_with is not None:
            self._send_error(
                sock, route, "busy", f"agent is busy with {self._busy_with!r}; send stop first",
                msg.id,
            )
            return
        reserved = self._admit(sock, route, msg)
        if reserved < 0:
            return
        self._busy_with = msg.cmd
        if self._stop_run.is_set():  # clearing takes the event's lock: only when needed
            self._stop_run.clear()
        self._admitted = Job(route, msg, frames, reserved, self._conn)

    def _answer_inline(
        self, sock: zmq.Socket, route: list[bytes], msg: Message, frames: list[Any]
    ) -> None:
        """Answer what needs no device work: echo, status, stop, shutdown."""
        cmd = msg.cmd
        if cmd == "echo":
            reserved = self._admit(sock, route, msg)
            if reserved >= 0:
                reply = Message(type=codec.REPLY, id=msg.id, body=msg.body, arrays=msg.arrays)
                self._send_reply(sock, route, reply, msg, frames, reserved, self._conn)
            return
        if cmd == "status":
            reply = Message(type=codec.REPLY, id=msg.id, body=self._status())
        elif cmd == "stop":
            self._stop_run.set()
            reply = Message(type=codec.REPLY, id=msg.id, body={"stopping": self._busy_with})
        else:  # shutdown
            self.shutdown_by = self._who(route)
            log.warning("shutdown asked by %s", self.shutdown_by)
            self._stop_run.set()
            self._shutdown.set()
            reply = Message(
                type=codec.REPLY, id=msg.id, body={"shutdown": True, "by": self.shutdown_by}
            )
        self._send(sock, route, reply)

    def _say_who_shut_down(self, sock: zmq.Socket) -> None:
        """A last heartbeat to every peer, naming who asked for the shutdown (see R11)."""
        if self.shutdown_by is None:
            return
        body = {"busy": None, "shutdown_by": self.shutdown_by}
        for peer in list(self._peers.values()):
            if peer.greeted:
                self._send(sock, peer.route, Message(type=codec.HEARTBEAT, body=body))

    def _who(self, route: list[bytes]) -> str:
        """A peer as the log names it: routing id, address and session."""
        conn, peer = self._conn, self._peer
        where = conn.address if conn is not None and conn.address else "?"
        session = peer.session if peer is not None else "?"
        rid = route[0].hex() if route else "-"
        return f"peer {rid} at {where} (session {session})"

    def _owns(self, sock: zmq.Socket, route: list[bytes], msg: Message) -> bool:
        """May this peer send ``msg.cmd``? The first device command makes its session the owner;
        the ownership lasts while that session has a peer the agent knows (see _beat)."""
        peer = self._peer
        assert peer is not None
        owner = self._owner
        if owner is not None and owner != peer.session:
            if any(p.session == owner and p.greeted for p in self._peers.values()):
                self.bad_messages.note(route[0] if route else b"", "not_owner", msg.cmd or "")
                self._send_error(
                    sock,
                    route,
                    "not_owner",
                    f"{msg.cmd!r} is refused: another session ({owner[:8]}…) owns this agent's "
                    "work; it is freed when that client has been silent for the liveness window",
                    msg.id,
                )
                return False
            owner = None  # its client went away: the work is nobody's
        if owner is None and msg.cmd in DEVICE_COMMANDS:
            self._owner = peer.session
        return True

    def _admit(self, sock: zmq.Socket, route: list[bytes], msg: Message) -> int:
        """Bytes reserved in the memory budget for ``msg``, or -1 after refusing it."""
        nbytes = 0
        for array in msg.arrays:  # a loop, not sum() of a generator: one frame less
            nbytes += array.nbytes
        if self.budget.admit(nbytes, self._conn):
            return nbytes
        self.bad_messages.note(route[0] if route else b"", "over_budget", msg.cmd or "")
        self._send_error(
            sock,
            route,
            "over_budget",
            f"{self.budget.why_refused(nbytes, self._conn)}: retry later",
            msg.id,
        )
        return -1

    def _beat(self, sock: zmq.Socket) -> None:
        horizon = now() - self.heartbeat_s * self.liveness
        for key, peer in list(self._peers.items()):
            if peer.last_seen < horizon and self.bind_address is not None:
                del self._peers[key]  # that orchestrator went away; stop talking to it
                continue
            beat = Message(type=codec.HEARTBEAT, body={"busy": self._busy_with})
            self._send(sock, peer.route, beat)
            self.stats.heartbeats_sent += 1

    def _welcome(self, version: int) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "driver": self.driver.name,
            "protocol_version": version,
            "capabilities": capabilities_for_version(self.dispatcher.capabilities(),
                                                     version),
            "hilbench_version": __version__,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "heartbeat_s": self.heartbeat_s,
            "liveness": self.liveness,
            "key_fingerprint": self.key.fingerprint if self.key is not None else None,
        }

    def _status(self) -> dict[str, Any]:
        self.budget.reap()
        return {
            "agent_id": self.agent_id,
            "driver": self.driver.name,
            "state": "busy" if self._busy_with else "idle",
            "busy_with": self._busy_with,
            "uptime_s": now() - self.stats.started,
            "served": self.stats.served,
            "errors": self.stats.errors,
            "internal_errors": self.stats.internal_errors,
            "bad_messages": self.bad_messages.total,
            "peers": len(self._peers),
            "in_flight_bytes": self.budget.used,
            "connection_bytes": self.budget.connection_bytes,
            "memory_budget_bytes": self.budget.limit,
            # Open and not being dropped (a dropped one stays in the table until ZeroMQ closes it).
            "connections": sum(1 for c in list(self.budget.connections.values()) if not c.dropped),
            "max_connections": self.guard.max_connections if self.guard else None,
            "dropped_connections": self.guard.dropped if self.guard else 0,
            "accepted_connections": self.guard.accepted if self.guard else 0,
            "heartbeats_sent": self.stats.heartbeats_sent,
            "heartbeats_received": self.stats.heartbeats_received,
        }
