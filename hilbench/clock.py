"""The one clock every timestamp is taken from, on the orchestrator and on agents alike.

``HILBENCH_CLOCK_OFFSET_S`` (seconds, default 0) shifts this process's clock: an agent started
with it has a clock that is off from the orchestrator's by a known amount, as an agent on
another host is, so tests (and a deployment check) can see that every agent time is mapped with
the measured offset, in the right direction. The simulated bench's device link does not shift:
it stands for the physical signal a meter sees.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator

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


def real_now() -> float:
    """Seconds on the monotonic clock (CLOCK_MONOTONIC on Linux, shifted by the offset above);
    immune to wall-clock steps. Never virtual."""
    return time.monotonic() + _OFFSET_S


if not _OFFSET_S:
    real_now = time.monotonic

_read: Callable[[], float] = real_now
_sleep: Callable[[float], None] = time.sleep


def now() -> float:
    """This process's clock: :func:`real_now`, unless a cassette recording or replay reads it
    (:func:`use`). One Python frame more than the C function; every module reads it here."""
    return _read()


def sleep(seconds: float) -> None:
    """Wait ``seconds`` on :func:`now`'s clock: a replay's virtual clock does not wait."""
    _sleep(seconds)


@contextlib.contextmanager
def use(read: Callable[[], float], wait: Callable[[float], None] | None = None
        ) -> Iterator[None]:
    """Take every :func:`now` from ``read`` (and :func:`sleep` from ``wait``) inside: a
    cassette records each reading, a replay returns the recorded ones in order."""
    global _read, _sleep
    saved = _read, _sleep
    _read, _sleep = read, (wait or _sleep)
    try:
        yield
    finally:
        _read, _sleep = saved


def bench_now() -> float:
    """The unshifted monotonic clock that a simulated meter on this host shares with the
    devices it measures (never offset)."""
    return time.monotonic()
