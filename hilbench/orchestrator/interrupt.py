"""SIGINT and SIGTERM stop a campaign cleanly: the signal becomes an exception in the main
thread, so the run in progress is closed with status "abort" and the reason, spawned processes
are stopped, and the command exits with 128 + the signal number (130 for Ctrl-C, 143 for
SIGTERM, as shells report them)."""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(BaseException):
    """A stop signal arrived; a BaseException so that no ``except Exception`` swallows it."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.signal_name = signal.Signals(signum).name
        super().__init__(f"interrupted by {self.signal_name}")

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


_received: list[int] = []  # the stop signal of the current ``signals_interrupt`` block
_taken = [False]  # its Interrupted was caught and made the block's outcome (interrupt_taken)
_deferring = [0]  # depth of ``deferred_interrupts`` blocks in the main thread
# A stop signal that landed where Python ignores an exception is sent again shortly:
# "armed" while its timer runs, "sent" until a handler takes it.
_resend: list[str | None] = [None]
RESEND_AFTER_S = 0.01


def _ignores_exceptions(frame: object) -> bool:
    """Whether an exception raised in ``frame`` would be printed as "Exception ignored" with a
    traceback and dropped: importlib's own code (its module-lock weakref callback, in the
    frame a CI run's SIGINT landed in during start-up) or a ``__del__``."""
    code = getattr(frame, "f_code", None)
    return code is not None and (code.co_filename.startswith("<frozen importlib")
                                 or code.co_name == "__del__")


def _where_it_surfaces(frame: Any) -> Any:
    """The frame an exception raised in ``frame`` ends up in: ``frame`` itself, or, when a stop
    signal's handler is running further up (the resend of a loaded host's timer can land while
    the handler still waits for its timer thread to start), the frame that outer handler
    interrupted, through which the exception would pass."""
    surfaces = frame
    while frame is not None:
        if frame.f_code.co_name == "_handler" and frame.f_code.co_filename == __file__:
            surfaces = frame.f_back
        frame = frame.f_back
    return surfaces


def _send_again(signum: int) -> None:
    if _resend[0] == "armed":
        _resend[0] = "sent"
        os.kill(os.getpid(), signum)


def _raise_from_handler(signum: int, frame: object) -> None:
    """Raise ``Interrupted`` in the frame the signal landed in, or, where that exception would
    be ignored, have the signal sent again in ``RESEND_AFTER_S`` to land elsewhere (a thread:
    a signal sent from the handler itself would be taken in the same frame)."""
    if not _ignores_exceptions(_where_it_surfaces(frame)):
        _resend[0] = None
        raise Interrupted(signum)
    if _resend[0] is None:
        _resend[0] = "armed"
        timer = threading.Timer(RESEND_AFTER_S, _send_again, (signum,))
        timer.daemon = True
        timer.start()


def _is_resent() -> bool:
    """This signal is one ``_raise_from_handler`` sent again (then it is the first one)."""
    if _resend[0] == "sent":
        _resend[0] = None
        return True
    return False


def raise_if_interrupted() -> None:
    """Raise ``Interrupted`` again if a stop signal arrived. The handler's own exception can be
    lost: pyzmq retries a blocking call that a signal interrupted and drops the exception the
    handler raised, so the orchestrator also checks here, at every phase start, every wait
    and between units. While the first exception unwinds, none of these places is reached."""
    if _received:
        _resend[0] = None  # raised here: a signal still to be sent again is not needed
        raise Interrupted(_received[0])


@contextmanager
def signals_interrupt() -> Iterator[None]:
    """While inside, SIGINT and SIGTERM raise ``Interrupted`` (once from the handler, then from
    ``raise_if_interrupted``); a second signal during the clean-up that follows is logged and
    ignored, so the clean-up itself is not cut short. A signal taken during start-up
    (``interrupt_from_now``) whose exception was lost stays pending and is raised here."""

    def _handler(signum: int, frame: object) -> None:
        resent = _is_resent()
        if _received and not resent:
            log.warning("%s received while stopping; still stopping", signal.Signals(signum).name)
            return
        if not _received:
            _received.append(signum)
        if _deferring[0]:
            return  # the next checkpoint raises it
        _raise_from_handler(_received[0], frame)

    previous = {sig: signal.signal(sig, _handler) for sig in STOP_SIGNALS}
    _taken[0] = False
    try:
        raise_if_interrupted()  # pending from start-up: nothing in the block starts
        yield
        if not _taken[0]:
            raise_if_interrupted()  # a signal whose exception was lost, after the last checkpoint
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _received.clear()
        _taken[0] = False
        _resend[0] = None


def interrupt_taken() -> None:
    """The block's ``Interrupted`` was caught and made its outcome (the run in progress aborted,
    the campaign's end said): the block's end does not raise it a second time. Raised again,
    `hilbench run` said "before the campaign started; nothing was run" after runs, and the
    daemon's worker died without its report (a `queue pause --now` filed as a crash)."""
    _taken[0] = True


def interrupt_from_now() -> None:
    """From this instant on, SIGINT and SIGTERM raise ``Interrupted`` in the main thread (not
    click's "Aborted!" with exit 1, nor a kill half-way through opening the store), so a
    command stopped during its start-up exits 130 or 143 like one stopped later.
    ``signals_interrupt`` takes over inside its block and puts this handler back after it."""
    if threading.current_thread() is not threading.main_thread():
        return

    def _handler(signum: int, frame: object) -> None:
        # Kept for ``raise_if_interrupted``: the handler's exception can be lost (pyzmq drops
        # it in a blocking call); CI saw a SIGINT during start-up end in exit 0 that way.
        _is_resent()
        if not _received:
            _received.append(signum)
        _raise_from_handler(_received[0], frame)

    for sig in STOP_SIGNALS:
        signal.signal(sig, _handler)


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """A stop signal that arrives inside waits for the next ``raise_if_interrupted``.

    For the few steps that must not be cut in two: a run's start or stop document half
    written would leave a run that no clean-up can close (it would read back "incomplete").
    Signal handlers run in the main thread, so only the main thread defers; elsewhere this
    does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _deferring[0] += 1
    try:
        yield
    finally:
        _deferring[0] -= 1
