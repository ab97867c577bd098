"""One rate limiter for log lines that others can make a process repeat.

An agent or an orchestrator left running overnight on a shared network must not be made to fill
its disk by a peer that sends bad messages, makes a driver fail, or knocks with unknown keys.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from typing import Any

from hilbench.clock import now

log = logging.getLogger("hilbench.agent.runtime")


class LogLimiter:
    """Writes the first ``burst`` lines of each kind per ``interval_s``, then counts the rest.

    One limiter serves every line that a peer can make an agent repeat (bad messages, driver
    failures, internal errors, dropped replies, dropped connections): a flood costs a few lines
    per kind and interval, and at the end of an interval with lines held back one line says
    how many of each kind were not written.
    """

    def __init__(
        self, interval_s: float = 10.0, burst: int = 5, logger: logging.Logger = log
    ) -> None:
        self.interval_s = interval_s
        self.burst = burst
        self.logger = logger
        self.totals: Counter[str] = Counter()
        self._lock = threading.Lock()  # the driver thread and the guard thread log too
        self._window_start = now()
        self._shown: Counter[str] = Counter()
        self._hidden: Counter[str] = Counter()

    def log(self, kind: str, level: int, msg: str, *args: Any, exc_info: bool = False) -> bool:
        """Log ``msg % args`` unless this interval's burst of ``kind`` is used up; True if shown."""
        self.flush()
        with self._lock:
            self.totals[kind] += 1
            show = self._shown[kind] < self.burst
            if show:
                self._shown[kind] += 1
            else:
                self._hidden[kind] += 1
        if show:
            self.logger.log(level, msg, *args, exc_info=exc_info)
        return show

    def flush(self) -> None:
        """Close the interval if it is over, logging how many lines were not written."""
        t = now()
        if t - self._window_start < self.interval_s:
            return
        with self._lock:
            if t - self._window_start < self.interval_s:
                return
            hidden, self._hidden = self._hidden, Counter()
            started, self._window_start = self._window_start, t
            self._shown.clear()
        if hidden:
            counts = ", ".join(f"{kind} {n}" for kind, n in hidden.most_common())
            self.logger.warning(
                "%d more log lines in the last %.0f s were not written (%s)",
                sum(hidden.values()),
                t - started,
                counts,
            )
