"""The connection guard: which peers are connected and how many bytes ZeroMQ holds for each.

ZeroMQ receives a message whole before the agent sees it, so a peer that announces a large frame
and sends half of it makes ZeroMQ hold half a frame the agent knows nothing about. The guard
watches the ROUTER socket's monitor events (every connection accepted or closed, with its file
descriptor) and, for TCP, the kernel's count of bytes received on each connection: what was
received and not yet read by the agent is what ZeroMQ holds for that peer. It drops connections
(a ``shutdown`` of the socket: ZeroMQ sees the end and frees what it held) when the budget is
full, when a reply stays unread, and when there are more connections than descriptors allow,
the longest idle first.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import logging
import os
import resource
import socket
import struct
import threading
from typing import TYPE_CHECKING

import zmq

from hilbench.agent.guard import CONNECTION_OVERHEAD_BYTES, Connection, LogLimiter, MemoryBudget
from hilbench.clock import now

if TYPE_CHECKING:
    from collections.abc import Callable

# Descriptors kept for the agent itself (its log, the driver's files, ZeroMQ's own).
FD_RESERVE = 64
# Bytes a connection sends before its first message (ZMTP greeting, handshake, metadata).
HANDSHAKE_ALLOWANCE = 1024
# How often the guard looks (ms, TICK_MS near the budget's ceiling, up to IDLE_TICK_MS far from
# it); a full look at every connection at least every FULL_SCAN_S, and at once when the process
# grew by RSS_STEP since the last look.
TICK_MS = 5
IDLE_TICK_MS = 50
FILL_RATE = 4e9  # bytes per second: faster than loopback into one ZeroMQ I/O thread
FULL_SCAN_S = 0.1
RSS_STEP = 1 << 20
_EVENTS = zmq.EVENT_ACCEPTED | zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED | zmq.EVENT_CLOSED
_ACCEPTED = int(zmq.EVENT_ACCEPTED)
_CONNECTED = int(zmq.EVENT_CONNECTED)
_GONE = int(zmq.EVENT_DISCONNECTED) | int(zmq.EVENT_CLOSED)
_serials = itertools.count(1)
_PAGE = os.sysconf("SC_PAGE_SIZE")


def monitor_event(frames: list[bytes]) -> tuple[int, int]:
    """(event, value) of a ZeroMQ socket monitor message: a 16-bit event id and a 32-bit value
    (the descriptor, for the connection events), then the endpoint (zmq_socket_monitor(3)).

    Decoded here rather than with pyzmq's ``zmq.utils.monitor``, which imports ``zmq.asyncio``
    and with it asyncio and ssl: ~25 ms of every agent's start, for six bytes."""
    if len(frames) != 2 or len(frames[0]) != 6:
        raise ValueError(f"not a socket monitor message: {len(frames)} frame(s)")
    event, value = struct.unpack("=Hi", frames[0])
    return event, value


def default_max_connections(budget: int) -> int:
    """Connections that fit in this process's descriptor limit with FD_RESERVE to spare, and
    whose own cost takes at most a quarter of the memory ``budget``."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 65536
    return max(8, min(soft - FD_RESERVE, budget // 4 // CONNECTION_OVERHEAD_BYTES))


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_LIBC = _libc()
_TCP_INFO = getattr(socket, "TCP_INFO", 11)
_TCP_INFO_SIZE = 232
_BYTES_RECEIVED_AT = 128  # struct tcp_info.tcpi_bytes_received (Linux 4.1+)


def tcp_bytes_received(fd: int) -> int | None:
    """The kernel's count of bytes received on TCP socket ``fd``, or None (not TCP, not Linux)."""
    if _LIBC is None:
        return None
    buf = ctypes.create_string_buffer(_TCP_INFO_SIZE)
    size = ctypes.c_uint32(_TCP_INFO_SIZE)
    if _LIBC.getsockopt(fd, socket.IPPROTO_TCP, _TCP_INFO, buf, ctypes.byref(size)):
        return None
    if size.value < _BYTES_RECEIVED_AT + 8:
        return None
    return struct.unpack_from("=Q", buf.raw, _BYTES_RECEIVED_AT)[0]


def rss_bytes() -> int:
    """This process's resident memory."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _ends(fd: int) -> tuple[str, str]:
    """(this end, the peer) of the connection on ``fd``; ("", "") when it is no socket now."""
    if fd < 0:
        return "", ""
    with contextlib.suppress(OSError):
        sock = socket.socket(fileno=fd)
        try:
            return str(sock.getsockname()), str(sock.getpeername())
        finally:
            sock.detach()
    return "", ""


def _same(conn: Connection, local: str, peer: str) -> bool:
    """Is ``conn`` the connection with these ends? Only a named peer (TCP) tells connections
    apart: every Unix-socket peer of one address looks alike."""
    return bool(peer) and (conn.local, conn.address) == (local, peer)


def shutdown_fd(fd: int, address: str) -> bool:
    """End the connection on ``fd`` if it is still the one to ``address``; ZeroMQ then closes it.

    A ``shutdown``, never a ``close``: the descriptor stays ZeroMQ's, which sees the end of the
    stream and frees the connection and whatever it held.
    """
    if fd < 0:  # no descriptor (inproc): nothing to end
        return False
    try:
        sock = socket.socket(fileno=fd)
    except OSError:
        return False
    try:
        if address and str(sock.getpeername()) != address:
            return False  # closed meanwhile and the number reused by another connection
        sock.shutdown(socket.SHUT_RDWR)
        return True
    except OSError:
        return False
    finally:
        sock.detach()


class ConnectionGuard:
    """Keeps ``budget.connections`` up to date for ``sock`` and enforces the limits (a thread)."""

    def __init__(
        self,
        ctx: zmq.Context,
        sock: zmq.Socket,
        budget: MemoryBudget,
        limiter: LogLimiter,
        *,
        max_connections: int | None = None,
        curve: bool = False,
    ) -> None:
        self.budget = budget
        self.limiter = limiter
        self.max_connections = max_connections or default_max_connections(budget.limit)
        self.curve = curve
        self.dropped = 0
        self.accepted = 0
        self._stopping = threading.Event()
        self._monitor_addr = f"inproc://agent-monitor-{os.getpid()}-{next(_serials)}"
        self._sock = sock
        sock.monitor(self._monitor_addr, _EVENTS)
        self._monitor = ctx.socket(zmq.PAIR)
        self._monitor.rcvhwm = 0  # every event, however many connections come at once
        self._monitor.connect(self._monitor_addr)
        self._thread: threading.Thread | None = None
        self._on_drop: Callable[[Connection, str], None] | None = None
        budget.dropper = self.drop

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True, name="connection-guard")
        self._thread.start()

    def stop(self) -> None:
        """Stop watching. The socket's monitor is turned off first, while its events still have
        a reader: ZeroMQ's I/O thread sends an event to a reader that is gone by blocking,
        holding the socket's monitor lock, and turning the monitor off then waits on that lock
        holding the GIL, which hung the whole process (a shutdown in CI, reproduced with a
        peer leaving between the two)."""
        with contextlib.suppress(zmq.ZMQError):
            self._sock.monitor(None, 0)
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._monitor.close(linger=0)

    def connection(self, fd: int, route: bytes = b"") -> Connection:
        """The connection a message from ``route`` (its routing id) came in on.

        The record of ``fd`` serves while it names the same peer; a first message, or one under
        another routing id, is checked against the descriptor's ends (once per connection): the
        record may be an earlier connection's, whose close the guard has not read yet, and a
        message charged to it would be missing from the new connection's record.
        """
        conn = self.budget.connections.get(fd)
        if conn is not None and (conn.route == route or not conn.address):
            return conn  # the same peer, or one no ends tell apart (inproc, Unix sockets)
        return self._claim(fd, route)

    def _claim(self, fd: int, route: bytes) -> Connection:
        """The record of the connection now on ``fd``, made here if no event has named it yet.

        A message ZeroMQ queued before its connection closed can be read after the close: its
        descriptor is then no socket and it gets a record that is not kept (kept, it would count
        whatever the descriptor's next owner receives).
        """
        ends = _ends(fd)
        if fd >= 0 and not ends[1]:
            t = now()
            return Connection(fd, "", t, t, curve=self.curve)
        conn = self._add(fd, ends)
        conn.route = route
        return conn

    def drop(self, conn: Connection, reason: str) -> None:
        """End ``conn`` (its bytes no longer count: ZeroMQ frees them as it closes)."""
        conn.dropped = reason
        if shutdown_fd(conn.fd, conn.address):
            self.dropped += 1
            self.limiter.log(
                "dropped connection",
                logging.WARNING,
                "dropped the connection from %s: %s (%d bytes held)",
                conn.address or f"fd {conn.fd}",
                reason,
                conn.held,
            )

    # ------------------------------------------------------------ the thread
    def _add(self, fd: int, ends: tuple[str, str] | None = None) -> Connection:
        """The record of the connection on ``fd``: the one kept already if it is that same
        connection, else a new one.

        Under load the guard reads a connection's event after the agent has read its first
        messages and made its record. A new record would know none of the bytes delivered: the
        guard would count them as still held by ZeroMQ for as long as the connection stays (a
        loaded CI run kept 2 MB counted for a client that held nothing). ``ends``: the
        descriptor's, when the caller has just read them.
        """
        t = now()
        local, peer = _ends(fd) if ends is None else ends
        fresh = Connection(fd, peer, t, t, curve=self.curve, local=local)
        if fd >= 0 and not local:  # closed before its event was read: nothing to keep
            return fresh
        kept = self.budget.connections.setdefault(fd, fresh)  # one step: the agent may add too
        if kept is not fresh and not _same(kept, local, peer):
            self.budget.connections[fd] = kept = fresh  # an earlier connection's, now closed
        return kept

    def _forget(self, fd: int) -> None:
        """Forget the record of ``fd`` for an event saying its connection is gone, unless the
        number names that record's connection still: the event was then an earlier
        connection's, read late, or ZeroMQ closes this one in a moment (the next scan sees it).
        """
        conn = self.budget.connections.get(fd)
        if conn is not None and not _same(conn, *_ends(fd)):
            self._pop(conn)

    def _pop(self, conn: Connection) -> None:
        if self.budget.connections.get(conn.fd) is conn:  # not a newer record for the number
            self.budget.connections.pop(conn.fd, None)

    def _run(self) -> None:
        last_scan = 0.0
        start_rss = last_rss = rss_bytes()
        tick_ms = TICK_MS
        while not self._stopping.is_set():
            if self._monitor.poll(tick_ms):
                self._events()
            t = now()
            rss = rss_bytes()
            last_rss = min(last_rss, rss)  # growth counts from the lowest point since a look
            if rss - last_rss >= RSS_STEP or t - last_scan >= FULL_SCAN_S:
                self._scan()
                last_scan, last_rss = t, rss_bytes()
            # Far from the ceiling the guard may look less often (an idle agent wakes ~20 times a
            # second): no peer fills the room left faster than FILL_RATE.
            room = self.budget.ceiling - max(0, rss - start_rss)
            tick_ms = max(TICK_MS, min(IDLE_TICK_MS, int(room * 1000 / FILL_RATE)))
            self.budget.enforce()
            self.budget.drop_unread()
            self.limiter.flush()

    def _events(self) -> None:
        while self._monitor.poll(0):
            try:
                kind, fd = monitor_event(self._monitor.recv_multipart())
            except (zmq.ZMQError, ValueError):
                return
            self._on_event(kind, fd)

    def _on_event(self, kind: int, fd: int) -> None:
        """A connection on ``fd`` accepted, made or gone (the event may be read late)."""
        if kind & _GONE:
            self._forget(fd)
        elif kind in (_ACCEPTED, _CONNECTED):
            self._add(fd)
            if kind == _ACCEPTED:
                self.accepted += 1
                self._keep_below_limit(fd)

    def _keep_below_limit(self, newest: int) -> None:
        live = [c for c in list(self.budget.connections.values()) if c.dropped is None]
        excess = len(live) - self.max_connections
        if excess <= 0:
            return
        idle = sorted((c for c in live if c.fd != newest), key=lambda c: c.last_active)
        for conn in idle[:excess]:
            self.drop(
                conn,
                f"{len(live)} connections reached the limit of {self.max_connections} "
                "(descriptors) and it was the longest idle",
            )

    def _scan(self) -> None:
        for conn in list(self.budget.connections.values()):
            if conn.fd >= 0 and _ends(conn.fd) != (conn.local, conn.address):
                # Closed, its event not read yet, or read before a late message re-made the
                # record: the number may be another socket's now, whose bytes are not its.
                self._pop(conn)
                continue
            received = tcp_bytes_received(conn.fd)
            if received is not None:
                conn.receiving = max(0, received - conn.delivered - HANDSHAKE_ALLOWANCE)
