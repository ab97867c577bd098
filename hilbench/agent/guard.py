"""Limits that keep an agent on a shared network alive: a memory budget and a quiet bad-message log.

An agent may be left running overnight where any process can reach its port. Neither a flood of
bad messages (each would be a log line) nor large messages from several connections at once
(each would be held in memory) may take it down.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

from hilbench.clock import now

log = logging.getLogger("hilbench.agent.runtime")

DEFAULT_MEMORY_BUDGET_BYTES = 512 * 1024 * 1024
# Messages below this size are not counted: ZeroMQ copies them, and the socket's high-water marks
# bound how many it holds. Above it the agent holds references to the received or sent frames.
COUNTED_FROM_BYTES = 1 << 20


class BadMessageLog:
    """Logs the first ``burst`` bad messages of each ``interval_s``, then counts the rest.

    At the end of an interval with suppressed messages one line gives the count per error code,
    so a flood costs a few log lines per interval instead of one per message.
    """

    def __init__(self, interval_s: float = 10.0, burst: int = 5) -> None:
        self.interval_s = interval_s
        self.burst = burst
        self.total = 0
        self._window_start = now()
        self._shown = 0
        self._hidden: Counter[str] = Counter()

    def note(self, peer: bytes, code: str, text: str) -> None:
        """Record one bad message; log it unless this interval's burst is used up."""
        self.total += 1
        self.flush()
        if self._shown < self.burst:
            self._shown += 1
            log.warning("bad message from %r: %s: %s", peer, code, text)
        else:
            self._hidden[code] += 1

    def flush(self) -> None:
        """Close the interval if it is over, logging how many messages were not shown."""
        t = now()
        if t - self._window_start < self.interval_s:
            return
        if self._hidden:
            counts = ", ".join(f"{code} {n}" for code, n in self._hidden.most_common())
            log.warning(
                "%d more bad messages in the last %.0f s were not logged (%s)",
                sum(self._hidden.values()),
                t - self._window_start,
                counts,
            )
        self._window_start = t
        self._shown = 0
        self._hidden.clear()


class MemoryBudget:
    """Bytes of large messages the agent holds, across all connections, capped at ``limit``.

    A large request is admitted only while the total stays within the limit; its bytes stay
    counted until its reply has left (``release_when_sent`` with the send's tracker), so replies
    queued to a peer that does not read count too, as do large replies (``add``).
    """

    def __init__(self, limit: int = DEFAULT_MEMORY_BUDGET_BYTES) -> None:
        self.limit = limit
        self.used = 0
        self._sending: list[tuple[Any, int]] = []  # (zmq.MessageTracker, bytes)

    def admit(self, nbytes: int) -> bool:
        """Reserve ``nbytes`` for a received message; False when that would pass the limit."""
        if nbytes < COUNTED_FROM_BYTES:
            return True
        self.reap()
        if self.used + nbytes > self.limit:
            return False
        self.used += nbytes
        return True

    def add(self, nbytes: int) -> None:
        """Count a large reply the agent made (it is sent whatever the total)."""
        if nbytes >= COUNTED_FROM_BYTES:
            self.used += nbytes

    def release_when_sent(self, tracker: Any, nbytes: int) -> None:
        """Uncount ``nbytes`` once ZeroMQ has let go of the frames ``tracker`` follows."""
        if nbytes < COUNTED_FROM_BYTES:
            return
        if tracker is None or tracker.done:
            self.used -= nbytes
            return
        self._sending.append((tracker, nbytes))

    def reap(self) -> None:
        """Release the bytes of replies ZeroMQ has finished sending."""
        if not self._sending:
            return
        still = []
        for tracker, nbytes in self._sending:
            if tracker.done:
                self.used -= nbytes
            else:
                still.append((tracker, nbytes))
        self._sending = still
