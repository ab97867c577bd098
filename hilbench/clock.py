"""The one clock every timestamp is taken from, on the orchestrator and on agents alike.

``HILBENCH_CLOCK_OFFSET_S`` (seconds, default 0) shifts this process's clock: an agent started
with it has a clock that is off from the orchestrator's by a known amount, as an agent on
another host is, so tests (and a deployment check) can see that every agent time is mapped with
the measured offset, in the right direction. The simulated bench's device link does not shift:
it stands for the physical signal a meter sees.
"""

from __future__ import annotations

import os
import time

OFFSET_ENV = "HILBENCH_CLOCK_OFFSET_S"


def _offset_from_environment() -> float:
    text = os.environ.get(OFFSET_ENV, "").strip()
    if not text:
        return 0.0
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{OFFSET_ENV}={text!r} is not a number of seconds") from None


_OFFSET_S = _offset_from_environment()


def now() -> float:
    """Seconds on the monotonic clock (CLOCK_MONOTONIC on Linux); immune to wall-clock steps."""
    return time.monotonic() + _OFFSET_S


if not _OFFSET_S:
    # Unshifted, the clock is the C function itself: the agent's hot path reads it several
    # times per message, and a Python frame around it costs more than the read.
    now = time.monotonic


def bench_now() -> float:
    """The unshifted monotonic clock that a simulated meter on this host shares with the
    devices it measures (never offset)."""
    return time.monotonic()
