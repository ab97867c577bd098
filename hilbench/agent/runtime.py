"""The agent runtime: hosts one driver and serves the agent protocol over ZeroMQ.

One serving thread owns the socket and answers at once what needs no device work (hello, ping,
heartbeat, status, stop, echo, shutdown); device commands (configure, load, run) go to a worker
thread so that heartbeats and clock probes keep flowing while the device is busy. A malformed
message gets a typed error reply (or, past the size limit, ZeroMQ drops the connection) and the
agent goes on serving.
"""

from __future__ import annotations

import logging
import os
import queue
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import zmq

from hilbench import __version__
from hilbench.agent.driver import Driver, DriverError, DriverResult
from hilbench.clock import now, now_ns
from hilbench.wire import codec
from hilbench.wire.codec import Message, ProtocolError

log = logging.getLogger(__name__)

DEVICE_COMMANDS = frozenset({"configure", "load", "run"})
INLINE_COMMANDS = frozenset({"status", "stop", "echo", "shutdown"})


@dataclass
class _Peer:
    route: list[bytes]
    last_seen: float
    greeted: bool = False


@dataclass
class AgentStats:
    served: int = 0
    errors: int = 0
    heartbeats_sent: int = 0
    heartbeats_received: int = 0
    started: float = field(default_factory=now)


class AgentRuntime:
    """Serve ``driver`` on a ROUTER bound at ``bind`` or a DEALER connected to ``connect``."""

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
        context: zmq.Context | None = None,
    ) -> None:
        if (bind is None) == (connect is None):
            raise ValueError("give exactly one of bind= or connect=")
        self.driver = driver
        self.agent_id = agent_id or f"{driver.name}@{socket.gethostname()}:{os.getpid()}"
        self.bind_address = bind
        self.connect_address = connect
        self.heartbeat_s = heartbeat_s
        self.liveness = liveness
        self.max_payload_bytes = max_payload_bytes
        self.stats = AgentStats()
        self._ctx = context or zmq.Context.instance()
        self._peers: dict[bytes, _Peer] = {}
        self._jobs: queue.Queue[tuple[list[bytes], Message] | None] = queue.Queue()
        self._done: queue.Queue[tuple[list[bytes], Message]] = queue.Queue()
        self._busy_with: str | None = None
        self._stop_run = threading.Event()
        self._shutdown = threading.Event()
        self.endpoint: str | None = None  # the address actually bound (port resolved)
        self._ready = threading.Event()

    # ----------------------------------------------------------------- public
    def serve(self) -> None:
        """Serve until a shutdown command or :meth:`request_shutdown`."""
        sock = self._open_socket()
        wake_rx = self._ctx.socket(zmq.PAIR)
        wake_addr = f"inproc://agent-wake-{id(self)}"
        wake_rx.bind(wake_addr)
        wake_tx = self._ctx.socket(zmq.PAIR)
        wake_tx.connect(wake_addr)
        worker = threading.Thread(target=self._work, args=(wake_tx,), daemon=True, name="driver")
        worker.start()
        poller = zmq.Poller()
        poller.register(sock, zmq.POLLIN)
        poller.register(wake_rx, zmq.POLLIN)
        next_beat = now()
        self._ready.set()
        log.info("agent %s serving driver %s on %s", self.agent_id, self.driver.name, self.endpoint)
        try:
            while not self._shutdown.is_set():
                timeout_ms = max(0, int((next_beat - now()) * 1000))
                events = dict(poller.poll(timeout_ms))
                if sock in events:
                    self._drain_socket(sock)
                if wake_rx in events:
                    while wake_rx.poll(0):
                        wake_rx.recv()
                    self._send_finished(sock)
                if now() >= next_beat:
                    self._beat(sock)
                    next_beat = now() + self.heartbeat_s
            self._send_finished(sock)
        finally:
            self._stop_run.set()
            self._jobs.put(None)
            worker.join(timeout=5)
            try:
                self.driver.close()
            except Exception:  # closing must not hide the reason we stopped
                log.exception("driver %s failed to close", self.driver.name)
            sock.close(linger=200)
            wake_rx.close(linger=0)
            wake_tx.close(linger=0)
            log.info("agent %s stopped", self.agent_id)

    def request_shutdown(self) -> None:
        self._shutdown.set()

    def wait_ready(self, timeout: float = 5.0) -> bool:
        return self._ready.wait(timeout)

    # ----------------------------------------------------------------- socket
    def _open_socket(self) -> zmq.Socket:
        limit = codec.MAX_HEADER_BYTES + self.max_payload_bytes
        if self.bind_address is not None:
            sock = self._ctx.socket(zmq.ROUTER)
            sock.setsockopt(zmq.ROUTER_MANDATORY, 0)
            sock.setsockopt(zmq.MAXMSGSIZE, limit)
            sock.setsockopt(zmq.LINGER, 200)
            sock.bind(self.bind_address)
            self.endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT)
        else:
            sock = self._ctx.socket(zmq.DEALER)
            sock.setsockopt(zmq.MAXMSGSIZE, limit)
            sock.setsockopt(zmq.LINGER, 200)
            sock.setsockopt_string(zmq.IDENTITY, self.agent_id)
            sock.connect(self.connect_address)
            self.endpoint = self.connect_address
            # A connecting agent speaks first, so the orchestrator's ROUTER learns its identity.
            self._peers[b""] = _Peer(route=[], last_seen=now())
        sock.copy_threshold = codec.COPY_THRESHOLD_BYTES
        return sock

    def _drain_socket(self, sock: zmq.Socket) -> None:
        # Poll says a message is waiting; read what is there without raising zmq.Again (an
        # exception per message is measurable on the dispatch hot path).
        while sock.getsockopt(zmq.EVENTS) & zmq.POLLIN:
            frames = sock.recv_multipart(copy=False)
            if self.bind_address is not None:
                route, frames = [frames[0].bytes], frames[1:]
            else:
                route = []
            self._handle(sock, route, frames)

    def _send(self, sock: zmq.Socket, route: list[bytes], msg: Message) -> None:
        try:
            parts = codec.encode(msg)
        except ProtocolError as exc:
            parts = codec.encode(codec.error_message(exc.code, str(exc), msg.id))
        self._send_parts(sock, route, parts, msg.type)

    def _send_parts(
        self, sock: zmq.Socket, route: list[bytes], parts: list[Any], what: str
    ) -> None:
        try:
            sock.send_multipart([*route, *parts], copy=False, flags=zmq.NOBLOCK)
        except zmq.Again:
            log.warning("dropped a %s to a peer that is not reading", what)

    # --------------------------------------------------------------- messages
    def _handle(self, sock: zmq.Socket, route: list[bytes], frames: list[Any]) -> None:
        key = route[0] if route else b""
        peer = self._peers.get(key)
        if peer is None:
            peer = self._peers[key] = _Peer(route=route, last_seen=0.0)
        peer.last_seen = now()
        t_recv = now_ns()
        try:
            msg = codec.decode(frames, self.max_payload_bytes)
        except ProtocolError as exc:
            self.stats.errors += 1
            log.warning("bad message from %r: %s", key, exc)
            self._send(sock, route, codec.error_message(exc.code, str(exc), exc.correlation_id))
            return
        if msg.type == codec.HEARTBEAT:
            self.stats.heartbeats_received += 1
            return
        if msg.type == codec.PING:
            body = {"t1": msg.body.get("t1"), "t2": t_recv, "t3": now_ns()}
            self._send(sock, route, Message(type=codec.PONG, id=msg.id, body=body))
            return
        if msg.type == codec.HELLO:
            peer.greeted = True
            self._send(sock, route, Message(type=codec.WELCOME, id=msg.id, body=self._welcome()))
            return
        if msg.type != codec.REQUEST:
            self.stats.errors += 1
            self._send(
                sock,
                route,
                codec.error_message(
                    "unexpected_type", f"an agent does not accept {msg.type} messages", msg.id
                ),
            )
            return
        self._handle_request(sock, route, msg, frames)

    def _handle_request(
        self, sock: zmq.Socket, route: list[bytes], msg: Message, frames: list[Any]
    ) -> None:
        cmd = msg.cmd
        if cmd in DEVICE_COMMANDS:
            if self._busy_with is not None:
                err = codec.error_message(
                    "busy", f"agent is busy with {self._busy_with!r}; send stop first", msg.id
                )
                self._send(sock, route, err)
                return
            self._busy_with = cmd
            self._stop_run.clear()
            self._jobs.put((route, msg))
            return
        if cmd not in INLINE_COMMANDS:
            known = sorted(DEVICE_COMMANDS | INLINE_COMMANDS)
            self.stats.errors += 1
            self._send(
                sock,
                route,
                codec.error_message(
                    "unknown_command", f"unknown command {cmd!r}", msg.id, known=known
                ),
            )
            return
        self.stats.served += 1
        if cmd == "echo":
            # The payload goes back in the very frames it came in (as a bare ZeroMQ echo would):
            # the header is encoded and validated like any reply, the bytes are not copied.
            reply = Message(type=codec.REPLY, id=msg.id, body=msg.body, arrays=msg.arrays)
            self._send_parts(sock, route, [codec.encode(reply)[0], *frames[1:]], "echo")
            return
        if cmd == "status":
            reply = Message(type=codec.REPLY, id=msg.id, body=self._status())
        elif cmd == "stop":
            self._stop_run.set()
            reply = Message(type=codec.REPLY, id=msg.id, body={"stopping": self._busy_with})
        else:  # shutdown
            self._stop_run.set()
            self._shutdown.set()
            reply = Message(type=codec.REPLY, id=msg.id, body={"shutdown": True})
        self._send(sock, route, reply)

    def _beat(self, sock: zmq.Socket) -> None:
        horizon = now() - self.heartbeat_s * self.liveness
        for key, peer in list(self._peers.items()):
            if peer.last_seen < horizon and self.bind_address is not None:
                del self._peers[key]  # that orchestrator went away; stop talking to it
                continue
            beat = Message(type=codec.HEARTBEAT, body={"busy": self._busy_with})
            self._send(sock, peer.route, beat)
            self.stats.heartbeats_sent += 1

    def _welcome(self) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "driver": self.driver.name,
            "protocol_version": codec.PROTOCOL_VERSION,
            "capabilities": self.driver.capabilities(),
            "hilbench_version": __version__,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "heartbeat_s": self.heartbeat_s,
            "liveness": self.liveness,
        }

    def _status(self) -> dict[str, Any]:
        return {
            "agent_id": self.agent_id,
            "driver": self.driver.name,
            "state": "busy" if self._busy_with else "idle",
            "busy_with": self._busy_with,
            "uptime_s": now() - self.stats.started,
            "served": self.stats.served,
            "errors": self.stats.errors,
            "heartbeats_sent": self.stats.heartbeats_sent,
            "heartbeats_received": self.stats.heartbeats_received,
        }

    # ----------------------------------------------------------------- worker
    def _work(self, wake: zmq.Socket) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            route, msg = job
            reply = self._run_device_command(msg)
            self._done.put((route, reply))
            wake.send(b"")

    def _run_device_command(self, msg: Message) -> Message:
        t0 = time.perf_counter()
        try:
            if msg.cmd == "configure":
                result = self.driver.configure(msg.body)
            elif msg.cmd == "load":
                result = self.driver.load(msg.body, msg.arrays)
            else:
                result = self.driver.run(msg.body, self._stop_run)
        except DriverError as exc:
            return codec.error_message(exc.code, str(exc), msg.id, command=msg.cmd)
        except Exception as exc:  # a driver bug must not kill the agent
            log.exception("driver %s failed in %s", self.driver.name, msg.cmd)
            return codec.error_message(
                "driver_error", f"{type(exc).__name__}: {exc}", msg.id, command=msg.cmd
            )
        if not isinstance(result, DriverResult):
            return codec.error_message(
                "driver_error", f"driver returned {type(result).__name__}", msg.id
            )
        body = dict(result.body)
        body.setdefault("agent_elapsed_s", time.perf_counter() - t0)
        return Message(type=codec.REPLY, id=msg.id, body=body, arrays=result.arrays)

    def _send_finished(self, sock: zmq.Socket) -> None:
        while True:
            try:
                route, reply = self._done.get_nowait()
            except queue.Empty:
                return
            self._busy_with = None
            if reply.type == codec.ERROR:
                self.stats.errors += 1
            else:
                self.stats.served += 1
            self._send(sock, route, reply)
