"""The agent runtime: hosts one driver and serves the agent protocol over ZeroMQ.

Two threads take turns at the socket. While the device is idle the driver (worker) thread
serves it, answering at once what needs no device work (hello, ping, heartbeat, status, stop,
echo, shutdown) and running device commands (configure, load, run, and the no-op ``noop`` that
measures this path) itself, so a short command costs no thread hand-off; when a command runs
for longer, the calling thread takes the socket over so that heartbeats, clock probes, status
and stop keep being answered while the device is busy. No message can stop the agent: a
malformed one gets a typed error reply, and anything unforeseen while handling one becomes an
``internal`` error whose incident id finds the traceback in the log.
"""

from __future__ import annotations

import itertools
import logging
import os
import socket
import threading
from dataclasses import dataclass, field
from typing import Any

import zmq

from hilbench.agent.connections import ConnectionGuard
from hilbench.agent.dispatch import Dispatcher
from hilbench.agent.driver import Driver
from hilbench.agent.guard import (
    DEFAULT_MEMORY_BUDGET_BYTES,
    UNREAD_REPLY_DROP_S,
    BadMessageLog,
    Connection,
    LogLimiter,
    MemoryBudget,
)
from hilbench.agent.handling import MessageHandling, Peer
from hilbench.agent.turns import Job, SocketTurns
from hilbench.clock import now
from hilbench.wire import codec, keys
from hilbench.wire.codec import Message, ProtocolError
from hilbench.wire.message_socket import NOBLOCK, MessageSocket

log = logging.getLogger(__name__)

# Socket queues per connection, in messages: few, so ZeroMQ holds little that the agent has
# not yet seen or that a peer has not yet read.
RECEIVE_QUEUE = 8
SEND_QUEUE = 64
# A connection that has not finished the ZMTP handshake by then is closed (libzmq: 30 s).
HANDSHAKE_MS = 5000
_SRCFD = int(zmq.SRCFD)
_POLLIN = int(zmq.POLLIN)
_wake_serials = itertools.count(1)


def _source_fd(frame: zmq.Frame) -> int:
    """The descriptor a received frame came in on (-1 when ZeroMQ cannot say)."""
    try:
        return frame.get(_SRCFD)
    except zmq.ZMQError:
        return -1


class InsecureAddress(ValueError):
    """Plaintext on an address other hosts can reach, without ``insecure``."""


@dataclass
class AgentStats:
    served: int = 0
    errors: int = 0
    internal_errors: int = 0
    heartbeats_sent: int = 0
    heartbeats_received: int = 0
    started: float = field(default_factory=now)


class AgentRuntime(MessageHandling, SocketTurns):
    """Serve ``driver`` on a ROUTER bound at ``bind`` or a DEALER connected to ``connect``.

    With ``key`` (this agent's pair) the link is CurveZMQ: a bound agent admits only the
    ``authorized`` public keys; a connecting agent checks the orchestrator's ``server_key``.
    Without a key the address must be loopback unless ``insecure`` is set.
    """

    def __init__(
        self,
        driver: Driver,
        agent_id: str | None = None,
        *,
        bind: str | None = None,
        connect: str | None = None,
        heartbeat_s: float = 0.5,
        liveness: int = 6,
        max_payload_bytes: int = codec.DEFAULT_MAX_PAYLOAD_BYTES,
        memory_budget_bytes: int = DEFAULT_MEMORY_BUDGET_BYTES,
        key: keys.KeyPair | None = None,
        authorized: dict[bytes, str] | None = None,
        server_key: bytes | None = None,
        insecure: bool = False,
        max_connections: int | None = None,
        unread_reply_s: float = UNREAD_REPLY_DROP_S,
        context: zmq.Context | None = None,
    ) -> None:
        if (bind is None) == (connect is None):
            raise ValueError("give exactly one of bind= or connect=")
        address = bind if bind is not None else connect
        assert address is not None
        if key is None and not insecure and not keys.is_loopback(address):
            raise InsecureAddress(
                f"refusing plaintext on {address}, which other hosts can reach: give a key "
                "(--key and --authorized), use a loopback address such as tcp://127.0.0.1:5555, "
                "or accept the risk with --insecure"
            )
        if key is not None and bind is not None and not authorized:
            raise ValueError("a keyed agent that binds needs the authorized public keys")
        if key is not None and connect is not None and server_key is None:
            raise ValueError("a keyed agent that connects needs the orchestrator's public key")
        self.driver = driver
        self.dispatcher = Dispatcher(driver)  # the workload contracts, checked both ways
        self.agent_id = agent_id or f"{driver.name}@{socket.gethostname()}:{os.getpid()}"
        self.bind_address = bind
        self.connect_address = connect
        self.heartbeat_s = heartbeat_s
        self.liveness = liveness
        self.max_payload_bytes = max_payload_bytes
        self.key = key
        self.authorized = dict(authorized or {})
        self.server_key = server_key
        self.insecure = insecure and key is None and not keys.is_loopback(address)
        self.stats = AgentStats()
        self.budget = MemoryBudget(memory_budget_bytes, unread_reply_s)
        self.max_connections = max_connections
        # One limiter for every line a peer can make the agent repeat.
        self.log_limiter = LogLimiter()
        self.bad_messages = BadMessageLog(limiter=self.log_limiter)
        self.guard: ConnectionGuard | None = None
        # A message knows the descriptor it came in on, except over inproc (no descriptor).
        self._by_fd = not address.startswith("inproc://")
        self._conn: Connection | None = None  # the connection of the message being handled
        self._peer: Peer | None = None  # the greeted peer of the message being handled
        self._owner: str | None = None  # the session whose work the device holds
        self.shutdown_by: str | None = None  # who asked for the shutdown, for the log
        # A keyed agent runs its own ZAP authenticator, which needs a context of its own.
        self._own_context = context is None and key is not None
        self._ctx = context or (zmq.Context() if key is not None else zmq.Context.instance())
        self._peers: dict[bytes, Peer] = {}
        # Leader/follower turns at the socket; whoever holds it is the only thread that uses it,
        # and every change of holder goes through this condition's lock (a full memory barrier,
        # which ZeroMQ asks for when a socket moves between threads).
        self._turn_lock = threading.Lock()
        self._turns = threading.Condition(self._turn_lock)
        self._follower_wanted = False  # the driver thread runs a command: someone must serve
        self._follower_leads = False  # the calling thread holds the socket
        self._admitted: Job | None = None  # a device command just read, for the driver thread
        self._done: list[tuple[Job, Message]] = []  # replies for the follower to send
        self._next_beat = 0.0
        self._command_started = float("-inf")
        self._busy_with: str | None = None
        self._stop_run = threading.Event()
        self._shutdown = threading.Event()
        self._incidents = itertools.count(1)
        self._current_id: str | None = None  # correlation id of the message being handled
        self.endpoint: str | None = None  # the address actually bound (port resolved)
        self._ready = threading.Event()

    # ----------------------------------------------------------------- public
    def serve(self) -> None:
        """Serve until a shutdown command or :meth:`request_shutdown`.

        Two threads take turns at the socket (leader/follower), so that a device command costs
        no thread hand-off on its way: the driver thread serves the socket while the device is
        idle and runs a device command itself as soon as it has read it; meanwhile the calling
        thread serves (heartbeats, pings, status, stop) and hands the socket back when the
        command is done. A command that ends before the calling thread has woken up never gives
        the socket away at all. Driver calls always run on the one driver thread.
        """
        gate = None
        if self.key is not None and self.bind_address is not None:
            gate = keys.Gatekeeper(self._ctx, self.authorized, self.log_limiter)
        sock = self._open_socket()
        assert self.guard is not None
        self.guard.start()
        wake_rx = self._ctx.socket(zmq.PAIR)
        # A process-wide serial, not id(self): an id is reused once a runtime is collected, while
        # its inproc endpoint may still be bound on the shared context.
        wake_addr = f"inproc://agent-wake-{os.getpid()}-{next(_wake_serials)}"
        wake_rx.bind(wake_addr)
        wake_tx = self._ctx.socket(zmq.PAIR)
        wake_tx.connect(wake_addr)
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        poller.register(wake_rx, zmq.POLLIN)
        self._next_beat = now()
        log.info("%s", self.banner())
        if self.insecure:
            log.warning(
                "INSECURE: agent %s serves plaintext on %s with no key: any process that reaches "
                "this address can drive the device and shut the agent down",
                self.agent_id,
                self.endpoint,
            )
        driver = threading.Thread(
            target=self._drive, args=(sock, wake_tx), daemon=True, name="driver"
        )
        driver.start()
        self._ready.set()
        try:
            self._follow(sock, poller, wake_rx)
        finally:
            self._shutdown.set()
            self._stop_run.set()
            with self._turns:
                self._turns.notify_all()
            driver.join(timeout=5)
            if not driver.is_alive():
                self._send_finished(sock)
                self._say_who_shut_down(sock)
            try:
                self.driver.close()
            except Exception:  # closing must not hide the reason we stopped
                log.exception("driver %s failed to close", self.driver.name)
            self.guard.stop()  # turns the socket's monitor off too
            sock.close(linger=200)
            wake_rx.close(linger=0)
            wake_tx.close(linger=0)
            if gate is not None:
                gate.stop()
            if self._own_context:
                self._ctx.term()
            log.info(
                "agent %s stopped (%s)",
                self.agent_id,
                f"shutdown asked by {self.shutdown_by}" if self.shutdown_by else "a stop signal",
            )

    def banner(self) -> str:
        """One line saying where the agent serves, which driver, and with which key."""
        where = "listening on" if self.bind_address is not None else "connected to"
        if self.key is not None:
            security = f"key fingerprint {self.key.fingerprint}"
            if self.bind_address is not None:
                security += f", {len(self.authorized)} authorized key(s)"
            else:
                security += f", orchestrator key {keys.fingerprint(self.server_key or b'')}"
        elif self.insecure:
            security = "NO KEY (--insecure: plaintext, reachable from other hosts)"
        else:
            security = "no key (plaintext, loopback only)"
        return (
            f"agent {self.agent_id}: driver {self.driver.name}, {where} {self.endpoint}, {security}"
        )

    def tell_when_ready(self, announce: bool, banner: bool = True) -> None:
        """Once serving, print ``READY <endpoint>`` (when ``announce``) and the banner to stdout,
        from a thread of its own: a parent reading line by line stops at READY
        (:mod:`hilbench.orchestrator.spawn`)."""

        def tell() -> None:
            if self.wait_ready(30):
                lines = ([f"READY {self.endpoint}"] if announce else []) + (
                    [self.banner()] if banner else [])
                if lines:
                    print("\n".join(lines), flush=True)

        threading.Thread(target=tell, daemon=True, name="tell-ready").start()

    def request_shutdown(self) -> None:
        self._shutdown.set()

    def wait_ready(self, timeout: float = 5.0) -> bool:
        return self._ready.wait(timeout)

    # ----------------------------------------------------------------- socket
    def _open_socket(self) -> zmq.Socket:
        limit = codec.MAX_HEADER_BYTES + self.max_payload_bytes
        if self.bind_address is not None:
            sock = self._ctx.socket(zmq.ROUTER, socket_class=MessageSocket)
            sock.setsockopt(zmq.ROUTER_MANDATORY, 0)
        else:
            sock = self._ctx.socket(zmq.DEALER, socket_class=MessageSocket)
            sock.setsockopt_string(zmq.IDENTITY, self.agent_id)
        # No frame larger than the budget can hold (ZeroMQ drops a connection that sends one);
        # the connection guard counts what ZeroMQ holds of the frames it is still receiving.
        sock.setsockopt(zmq.MAXMSGSIZE, min(limit, self.budget.limit))
        sock.setsockopt(zmq.HANDSHAKE_IVL, HANDSHAKE_MS)
        sock.setsockopt(zmq.LINGER, 200)
        keys.use_ipv6(sock, self.bind_address or self.connect_address or "")
        sock.setsockopt(zmq.RCVHWM, RECEIVE_QUEUE)
        sock.setsockopt(zmq.SNDHWM, SEND_QUEUE)
        if self.key is not None:
            if self.bind_address is not None:
                keys.make_server(sock, self.key)
            else:
                keys.make_client(sock, self.key, self.server_key or b"")
        self.guard = ConnectionGuard(
            self._ctx,
            sock,
            self.budget,
            self.log_limiter,
            max_connections=self.max_connections,
            curve=self.key is not None,
        )
        if self.bind_address is not None:
            sock.bind(self.bind_address)
            self.endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        else:
            sock.connect(self.connect_address)
            self.endpoint = self.connect_address
            # A connecting agent speaks first, so the orchestrator's ROUTER learns its identity.
            self._peers[b""] = Peer(route=[], last_seen=now())
        sock.copy_threshold = codec.COPY_THRESHOLD_BYTES
        return sock

    def _drain_socket(self, sock: MessageSocket) -> None:
        # Poll says a message is waiting; read what is there without raising zmq.Again, asking
        # the socket with the raw ``get`` (an int: ``getsockopt`` builds enum objects per call).
        while sock.get(zmq.EVENTS) & _POLLIN:
            self._receive(sock, 0)

    def _receive(self, sock: MessageSocket, flags: int) -> None:
        """Read one message (raising zmq.Again when none comes in time) and handle it."""
        guard = self.guard
        assert guard is not None
        if self.bind_address is None:
            frames = sock.recv_message(flags)
            conn = self._conn = guard.connection(_source_fd(frames[0]) if self._by_fd else -1)
            conn.delivered_message(frames, now())
            self._handle(sock, [], frames)
            return
        frames = sock.recv_message(flags, routed=True)  # the peer's routing id comes first
        fd = _source_fd(frames[1]) if self._by_fd else -1
        conn = self._conn = guard.connection(fd, frames[0])
        conn.delivered_message(frames[1:], now())
        route = [frames[0]]
        if len(frames) > 2 and not len(frames[1]):
            self._refuse_req_socket(sock, route)
            return
        del frames[0]
        self._handle(sock, route, frames)

    def _send(self, sock: zmq.Socket, route: list[bytes], msg: Message) -> Any:
        """Encode and send ``msg`` in the peer's protocol version; returns the send's tracker
        for a large payload, else None."""
        peer = self._peers.get(route[0]) if route else None
        if peer is not None:
            msg.version = peer.version
        try:
            parts = codec.encode(msg)
        except ProtocolError as exc:
            parts = codec.encode(codec.error_message(exc.code, str(exc), msg.id))
        except Exception:  # e.g. a driver put a non-msgpack value in its reply body
            parts = codec.encode(self._incident(route, msg.id, f"encoding a {msg.type}"))
        return self._send_parts(sock, route, parts, msg.type)

    def _send_parts(self, sock: zmq.Socket, route: list[bytes], parts: list[Any], what: str) -> Any:
        # Payload parts are bytes, uint8 arrays or zmq.Frames: len() is their size in bytes.
        track = len(parts) > 1 and sum(map(len, parts[1:])) >= codec.COPY_THRESHOLD_BYTES
        if track:  # a received Frame cannot be re-sent tracked; its buffer can (no copy)
            parts = [p.buffer if isinstance(p, zmq.Frame) else p for p in parts]
        try:
            if track:
                return sock.send_multipart(
                    [*route, *parts], copy=False, flags=zmq.NOBLOCK, track=True
                )
            sock.send_message([*route, *parts], NOBLOCK)
            return None
        except zmq.Again:
            self.log_limiter.log(
                "dropped reply", logging.WARNING, "dropped a %s to a peer that is not reading", what
            )
            return None

    def _send_reply(
        self,
        sock: MessageSocket,
        route: list[bytes],
        reply: Message,
        request: Message,
        frames: list[Any],
        reserved: int,
        conn: Connection | None = None,
    ) -> None:
        """Send a command's reply; the request's ``reserved`` budget bytes are freed once sent.

        Payloads that are the request's own arrays (``echo``, ``noop``) go back in the very
        frames they came in, as a bare ZeroMQ echo would: the header is encoded and validated
        like any reply, the bytes are not copied. Fresh payloads of 1 MiB or more count against
        the memory budget until ZeroMQ has sent them.
        """
        if reply.arrays and reply.arrays is request.arrays:
            reply.version = request.version
            tracker = self._send_parts(sock, route, [codec.encode(reply)[0], *frames[1:]], "reply")
            self.budget.release_when_sent(tracker, reserved, conn)
            return
        extra = sum(a.nbytes for a in reply.arrays)
        self.budget.add(extra, conn)
        tracker = self._send(sock, route, reply)
        self.budget.release_when_sent(tracker, reserved, conn)
        self.budget.release_when_sent(tracker, extra, conn)

    def _send_error(
        self, sock: zmq.Socket, route: list[bytes], code: str, text: str, cid: str | None, **detail
    ) -> None:
        self.stats.errors += 1
        self._send(sock, route, codec.error_message(code, text, cid, **detail))

    def _refuse_req_socket(self, sock: zmq.Socket, route: list[bytes]) -> None:
        """A REQ socket puts an empty delimiter first; answer in its framing so it hears why."""
        text = (
            "this agent speaks to DEALER sockets only (no empty delimiter frame); "
            "a REQ socket cannot interleave heartbeats with replies"
        )
        self.stats.errors += 1
        self.bad_messages.note(route[0] if route else b"", "req_socket", text)
        error = codec.encode(codec.error_message("req_socket", text, None))
        self._send_parts(sock, [*route, b""], error, "error")

    def _incident(self, route: list[bytes], cid: str | None, during: str) -> Message:
        """Log the exception being handled under a new incident id; the reply that names it."""
        incident = f"{os.getpid()}-{next(self._incidents)}"
        self.stats.internal_errors += 1
        self.log_limiter.log(
            "internal error",
            logging.ERROR,
            "internal error, incident %s, while %s for peer %r",
            incident,
            during,
            route[0] if route else b"",
            exc_info=True,
        )
        return codec.error_message(
            "internal",
            f"the agent failed while {during}; its log has the traceback under incident {incident}",
            cid,
            incident=incident,
        )
