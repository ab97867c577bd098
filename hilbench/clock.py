"""The one clock every timestamp is taken from, on the orchestrator and on agents alike."""

from __future__ import annotations

import time


def now() -> float:
    """Seconds on the monotonic clock (CLOCK_MONOTONIC on Linux); immune to wall-clock steps."""
    return time.monotonic()


def now_ns() -> int:
    """Nanoseconds on the same monotonic clock, for clock-offset probes."""
    return time.monotonic_ns()
