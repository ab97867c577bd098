"""Limits that keep an agent on a shared network alive: a memory budget and a quiet log.

An agent may be left running overnight where any process can reach its port. Neither a flood of
bad messages or failing commands (each would be a log line) nor large messages from several
connections at once (each would be held in memory) may take it down.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any

from hilbench.clock import now
from hilbench.loglimit import LogLimiter

log = logging.getLogger("hilbench.agent.runtime")

DEFAULT_MEMORY_BUDGET_BYTES = 512 * 1024 * 1024
# Messages below this size are not counted when the agent holds them: ZeroMQ copies them, and
# the socket's high-water marks bound how many it holds. Above it the agent holds references to
# the received or sent frames. Bytes ZeroMQ is still receiving are counted whatever their size.
COUNTED_FROM_BYTES = 1 << 20
# A reply its peer has not read after this long is dropped with the peer's connection, which
# releases its share of the budget (stated in protocols/agent-protocol.md).
UNREAD_REPLY_DROP_S = 10.0
# Admission and the guard keep the bytes held within the limit less 1/4 of it: ZeroMQ goes on
# receiving between the guard's looks, and freeing a dropped connection takes it a moment.
MARGIN_DIVISOR = 4
# What ZeroMQ keeps for each connection, idle or not (buffers, pipes, engine; ~50 KiB measured
# with libzmq 4.3): counted in the budget, so many idle connections cannot fill memory either.
CONNECTION_OVERHEAD_BYTES = 64 * 1024


class BadMessageLog:
    """Bad messages through a :class:`LogLimiter`: a few lines per interval, then counts."""

    def __init__(
        self, interval_s: float = 10.0, burst: int = 5, limiter: LogLimiter | None = None
    ) -> None:
        self.limiter = limiter or LogLimiter(interval_s, burst)
        self.burst = self.limiter.burst
        self.total = 0

    def note(self, peer: bytes, code: str, text: str) -> None:
        """Record one bad message; log it unless this interval's burst is used up."""
        self.total += 1
        self.limiter.log(
            f"bad message {code}", logging.WARNING, "bad message from %r: %s: %s", peer, code, text
        )

    def flush(self) -> None:
        self.limiter.flush()


@dataclass(eq=False)
class Connection:
    """One peer connection and the bytes the agent holds for it (see :class:`MemoryBudget`)."""

    fd: int
    address: str
    opened: float
    last_active: float
    curve: bool = False
    local: str = ""  # the agent's end: with ``address``, which connection ``fd`` was
    route: bytes | None = None  # the routing id of the messages read from it
    delivered: int = 0  # bytes of the messages the agent has read from it, with their framing
    receiving: int = 0  # bytes ZeroMQ has received and not yet handed over (last scan)
    admitted: int = 0  # bytes of its requests the agent holds
    sending: int = 0  # bytes of replies to it that ZeroMQ has not yet sent
    dropped: str | None = None  # why the agent dropped it

    @property
    def held(self) -> int:
        return self.receiving + self.admitted + self.sending

    def delivered_message(self, frames: list[Any], t: float) -> None:
        """Count a message read from this connection, as it came over the wire."""
        total = 0
        extra = 33 if self.curve else 0  # a CURVE MESSAGE command around each frame
        for frame in frames:
            n = len(frame) + extra
            total += n + (2 if n < 256 else 9)  # ZMTP frame header, short or long
        self.delivered += total
        self.last_active = t


class MemoryBudget:
    """Every byte the agent holds for peers, per connection, within ``limit``.

    Bytes ZeroMQ is still receiving (a half-sent frame, queued messages; measured by the
    connection guard), requests the agent holds and replies ZeroMQ has not yet sent all count.
    A large request is admitted while the total stays within the limit, or when the asking
    connection is within its fair share (the limit over the connections that hold bytes): then
    connections over their share are dropped until it fits, so one peer cannot starve others.
    """

    def __init__(
        self, limit: int = DEFAULT_MEMORY_BUDGET_BYTES, unread_drop_s: float = UNREAD_REPLY_DROP_S
    ) -> None:
        self.limit = limit
        self.ceiling = limit - limit // MARGIN_DIVISOR  # what admission and the guard aim at
        self.unread_drop_s = unread_drop_s
        self.connections: dict[int, Connection] = {}  # by file descriptor
        self.dropper: Any = None  # callable(Connection, reason): drops a connection
        self._lock = threading.Lock()
        self._sending: list[tuple[Any, int, Connection | None, float]] = []
        self._loose = Connection(-1, "", 0.0, 0.0)  # bytes of no known connection

    @property
    def used(self) -> int:
        """Bytes of messages held for peers (what ``status`` calls in flight)."""
        with self._lock:
            return self._used() - self.connection_bytes

    @property
    def connection_bytes(self) -> int:
        """What the open connections cost by themselves."""
        return len(self.connections) * CONNECTION_OVERHEAD_BYTES

    def _used(self) -> int:
        # A dropped connection counts until ZeroMQ has closed it and freed what it held.
        total = self._loose.held + self.connection_bytes
        for conn in list(self.connections.values()):
            total += conn.held
        return total

    def admit(self, nbytes: int, conn: Connection | None = None) -> bool:
        """Reserve ``nbytes`` for a received message; False when it does not fit."""
        if nbytes < COUNTED_FROM_BYTES:
            return True
        self.reap()
        conn = conn or self._loose
        with self._lock:
            # Its bytes now move from "receiving" (in ZeroMQ) to "admitted" (in the agent).
            conn.receiving = max(0, conn.receiving - nbytes)
            used = self._used()
            if used + nbytes > self.ceiling:
                victims = self._over_share(conn, nbytes, used)
                if victims is None:
                    return False
            else:
                victims = []
            conn.admitted += nbytes
        for victim in victims:
            self._drop(victim, "over its fair share of the memory budget")
        return True

    def _fair_share(self, conn: Connection) -> tuple[list[Connection], int]:
        """The live connections holding bytes, ``conn`` among them, and each one's share."""
        holders = [c for c in list(self.connections.values()) if c.dropped is None and c.held]
        if conn not in holders:
            holders.append(conn)
        return holders, self.ceiling // len(holders)

    def _over_share(self, conn: Connection, nbytes: int, used: int) -> list[Connection] | None:
        """Connections to drop so that ``conn`` gets ``nbytes``, or None if not its share."""
        used -= sum(c.held for c in list(self.connections.values()) if c.dropped is not None)
        holders, share = self._fair_share(conn)
        if conn.held + nbytes > share:
            return None
        victims = []
        # The one most over its share first; only what ZeroMQ holds is freed by a drop.
        for other in sorted(holders, key=lambda c: c.held, reverse=True):
            if used + nbytes <= self.ceiling:
                break
            if other is conn or other.held <= share:
                continue
            victims.append(other)
            used -= other.receiving + other.sending
        return victims if used + nbytes <= self.ceiling else None

    def why_refused(self, nbytes: int, conn: Connection | None = None) -> str:
        """The figures behind a refusal, so the one refused can tell a full agent from a greedy
        peer (and a retry from a lost cause)."""
        conn = conn or self._loose
        with self._lock:
            holders, share = self._fair_share(conn)
            used = self._used() - self.connection_bytes
            return (
                f"the agent already holds {used} bytes of messages in flight; {nbytes} more "
                f"would pass its budget of {self.limit} bytes (kept within {self.ceiling}) and "
                f"this connection's fair share of it ({share} bytes among {len(holders)} "
                f"connections holding bytes; this one holds {conn.held})"
            )

    def _drop(self, conn: Connection, reason: str) -> None:
        if conn.dropped is not None or conn is self._loose:
            return
        conn.dropped = reason
        if self.dropper is not None:
            self.dropper(conn, reason)

    def add(self, nbytes: int, conn: Connection | None = None) -> None:
        """Count a large reply the agent made (it is sent whatever the total)."""
        if nbytes >= COUNTED_FROM_BYTES:
            with self._lock:
                (conn or self._loose).admitted += nbytes

    def release_when_sent(
        self, tracker: Any, nbytes: int, conn: Connection | None = None
    ) -> None:
        """Uncount ``nbytes`` once ZeroMQ has let go of the frames ``tracker`` follows."""
        if nbytes < COUNTED_FROM_BYTES:
            return
        conn = conn or self._loose
        with self._lock:
            conn.admitted -= nbytes
            if tracker is None or tracker.done:
                return
            conn.sending += nbytes
            self._sending.append((tracker, nbytes, conn, now()))

    def reap(self) -> list[Connection]:
        """Release the bytes of replies ZeroMQ has sent; the connections of unread ones.

        A reply still unsent after ``unread_drop_s`` names its connection for dropping.
        """
        if not self._sending:
            return []
        stale = now() - self.unread_drop_s
        unread = []
        with self._lock:
            still = []
            for item in self._sending:
                tracker, nbytes, conn, since = item
                if tracker.done:
                    conn.sending -= nbytes
                    continue
                still.append(item)
                if since < stale and conn.dropped is None and conn is not self._loose:
                    unread.append(conn)
            self._sending = still
        return unread

    def drop_unread(self) -> None:
        """Drop the connections whose replies have not been read for ``unread_drop_s``."""
        for conn in self.reap():
            self._drop(conn, f"left a reply unread for {self.unread_drop_s:g} s")

    def enforce(self) -> None:
        """Near the limit (bytes ZeroMQ received meanwhile): drop the largest holders.

        ZeroMQ goes on receiving between two looks of the guard: the margin below the limit
        (``ceiling``) absorbs that.
        """
        with self._lock:
            # Bytes of connections already dropped count until ZeroMQ has freed them, but only
            # connections over their fair share are dropped for them: never a small holder.
            used = self._used()
            target = self.ceiling
            if used <= target:
                return
            live = [c for c in list(self.connections.values()) if c.dropped is None and c.held]
            share = target // max(1, len(live))
            victims = []
            for conn in sorted(live, key=lambda c: c.held, reverse=True):
                if used <= target or conn.held <= share:
                    break
                if conn.receiving + conn.sending:
                    victims.append(conn)
                    used -= conn.receiving + conn.sending
        for victim in victims:
            self._drop(victim, "the memory budget was full and it held the most")
