"""Request/reply over a serial port with the firmware protocol: timeouts, resync, reset detection.

Every request carries a sequence number (1..255) that its reply echoes, so a stale reply (one
that arrived after its request timed out) is recognised and dropped, never taken for the answer
to the next request. Each frame is preceded by a lone ``0x00``: whatever partial frame or garbage
the board holds is ended there, so both sides resynchronise at every request. A boot banner
(``BOOT``, seq 0) while a reply is awaited means the board reset: :class:`BoardReset`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection
from typing import Any, Protocol

from hilbench_drivers.arduino.protocol import (
    DELIMITER,
    ErrorCode,
    Frame,
    FrameDecoder,
    FrameError,
    MsgType,
    encode_frame,
    error_name,
    parse_error,
    parse_identity,
)

log = logging.getLogger(__name__)


class _Untagged(str):
    """An unreadable-frame error not tagged with a request: maybe ours, maybe not."""

READ_SLICE_S = 0.02  # serial read timeout: how often a wait checks its deadline and stop flag
RETRY_GRACE_S = 0.5  # after the board said it could not read a frame, wait this long, then resend


class BoardError(RuntimeError):
    """The board did not do what was asked; ``code`` is the driver's typed error code."""

    code = "device_error"

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class NoAnswer(BoardError):
    """Nothing intelligible came back within the timeout (a silent, hung or unpowered board)."""

    code = "device_timeout"


class Garbled(BoardError):
    """Bytes came back, but never a valid frame (wrong baud rate, wrong firmware, line noise)."""

    code = "device_garbage"


class BoardReset(BoardError):
    """The board sent its boot banner: it restarted and lost what it held."""

    code = "device_reset"

    def __init__(self, message: str, identity: dict[str, str]) -> None:
        super().__init__(message)
        self.identity = identity


class BoardRefused(BoardError):
    """The board answered with a typed error (``code`` is its name, e.g. ``device_full``)."""

    def __init__(self, message: str, board_code: int) -> None:
        super().__init__(message, error_name(board_code))
        self.board_code = board_code


class SerialPort(Protocol):
    """What the link needs of a ``serial.Serial`` (tests may pass a pty-backed one)."""

    port: str | None
    timeout: float | None

    def read(self, size: int = 1) -> bytes: ...
    def write(self, data: bytes) -> int | None: ...
    def reset_input_buffer(self) -> None: ...
    def close(self) -> None: ...
    @property
    def in_waiting(self) -> int: ...


class SerialLink:
    """One board on one serial port: numbered requests, replies matched by number."""

    def __init__(self, port: SerialPort, timeout_s: float = 2.0, retries: int = 2) -> None:
        self.port = port
        self.timeout_s = timeout_s
        self.retries = retries
        self.name = getattr(port, "port", None) or "serial port"
        self._decoder = FrameDecoder()
        self._seq = 0
        self.stale_replies = 0
        self.garbage_frames = 0
        self.port.timeout = READ_SLICE_S

    @classmethod
    def open(cls, path: str, baud: int = 115200, **kw: Any) -> SerialLink:
        """Open ``path`` with pyserial; a missing pyserial or port is a clear BoardError."""
        try:
            import serial
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise BoardError(
                "the arduino driver needs pyserial: pip install 'hilbench[arduino]'", "no_sdk"
            ) from exc
        try:
            port = serial.Serial(path, baud, timeout=READ_SLICE_S, write_timeout=5.0)
        except (serial.SerialException, OSError, ValueError) as exc:
            raise BoardError(
                f"cannot open serial port {path}: {exc}", "device_unreachable"
            ) from exc
        return cls(port, **kw)

    def close(self) -> None:
        self.port.close()

    def discard_input(self) -> None:
        """Drop whatever is waiting (a boot banner from before we opened, stale replies)."""
        self.port.reset_input_buffer()
        self._decoder.clear()

    # -- requests -------------------------------------------------------------------------------

    def send(self, msg_type: MsgType, payload: bytes = b"") -> int:
        """Send one request; returns its sequence number."""
        self._seq = self._seq % 255 + 1
        try:
            self.port.write(DELIMITER + encode_frame(msg_type, self._seq, payload))
        except Exception as exc:  # pyserial raises SerialException/OSError/SerialTimeoutException
            raise BoardError(
                f"cannot write to {self.name} ({exc}): unplugged or reset?", "device_lost"
            ) from exc
        return self._seq

    def request(
        self,
        msg_type: MsgType,
        payload: bytes = b"",
        expect: Collection[MsgType] = (),
        timeout_s: float | None = None,
        resend_on_timeout: bool = True,
        poll: Callable[[], None] | None = None,
    ) -> Frame:
        """Send and wait for the reply of a type in ``expect``.

        A request the board could not read (it answers ``bad_crc``/``bad_frame``) is sent again,
        up to ``retries`` times; so is one that got no answer at all if ``resend_on_timeout``
        (only for requests that are safe to repeat). ``poll`` runs while waiting (e.g. to send
        STOP).
        """
        timeout = self.timeout_s if timeout_s is None else timeout_s
        attempts = self.retries + 1
        last_problem = ""
        for attempt in range(attempts):
            seq = self.send(msg_type, payload)
            outcome = self._wait(seq, set(expect), timeout, poll)
            if isinstance(outcome, Frame):
                return outcome
            last_problem = outcome
            retryable = outcome.startswith("unreadable") or (
                resend_on_timeout and outcome.startswith("silent")
            )
            if not retryable or attempt == attempts - 1:
                break
            log.info("%s: %s; sending %s again", self.name, outcome, msg_type.name)
        if last_problem.startswith("garbage"):
            raise Garbled(
                f"{self.name}: {last_problem} in reply to {msg_type.name}; is this a hilbench "
                "board at the right baud rate?"
            )
        if last_problem.startswith("unreadable"):
            raise Garbled(f"{self.name}: the board could not read {msg_type.name}: {last_problem}")
        raise NoAnswer(
            f"{self.name}: no answer to {msg_type.name} within {timeout:g} s "
            f"({attempts if resend_on_timeout else 1} attempt(s)); is the board powered, "
            "flashed with the hilbench firmware, and is this its port?"
        )

    def _answer(self, item: Frame, seq: int, expect: set[MsgType]) -> Frame | str | None:
        """What a valid frame says about the reply to ``seq``: the reply itself, why it is
        unreadable (an :class:`_Untagged` one may not be ours), or None (not ours: wait on).
        A boot banner, a refusal or a reply of the wrong type raises."""
        if item.type == MsgType.BOOT:
            raise BoardReset(
                f"{self.name}: the board reset (boot banner received); whatever it held is lost",
                parse_identity(item.payload),
            )
        if item.type == MsgType.ERROR and item.seq == 0:
            code, text = parse_error(item.payload)
            if code in (ErrorCode.BAD_CRC, ErrorCode.BAD_FRAME):
                return _Untagged(f"unreadable frame ({error_name(code)}: {text})")
            return None
        if item.seq != seq:
            self.stale_replies += 1
            log.debug("%s: dropped stale reply seq %d (want %d)", self.name, item.seq, seq)
            return None
        if item.type == MsgType.ERROR:
            code, text = parse_error(item.payload)
            if code in (ErrorCode.BAD_CRC, ErrorCode.BAD_FRAME):
                return f"unreadable frame ({error_name(code)}: {text})"
            raise BoardRefused(f"{self.name}: {error_name(code)}: {text}", code)
        if expect and item.type not in expect:
            raise BoardError(
                f"{self.name}: reply of type 0x{item.type:02x} to a request expecting "
                f"{sorted(t.name for t in expect)}",
                "protocol_error",
            )
        return item

    def _wait(
        self,
        seq: int,
        expect: set[MsgType],
        timeout: float,
        poll: Callable[[], None] | None,
    ) -> Frame | str:
        """The reply frame, or a string saying why none came: 'silent…', 'garbage…',
        'unreadable…'."""
        deadline = time.monotonic() + timeout
        garbage = 0
        unreadable = ""
        while time.monotonic() < deadline:
            if poll is not None:
                poll()
            try:
                data = self.port.read(max(1, self.port.in_waiting))
            except Exception as exc:  # SerialException/OSError: the device went away
                raise BoardError(
                    f"{self.name} stopped answering reads ({exc}): unplugged or reset?",
                    "device_lost",
                ) from exc
            for item in self._decoder.feed(data) if data else ():
                if isinstance(item, FrameError):
                    garbage += 1
                    self.garbage_frames += 1
                    log.debug("%s: dropped %s", self.name, item)
                    continue
                answer = self._answer(item, seq, expect)
                if isinstance(answer, _Untagged):
                    # Maybe our frame, maybe garbage before it: give the reply a moment.
                    unreadable = str(answer)
                    deadline = min(deadline, time.monotonic() + RETRY_GRACE_S)
                elif answer is not None:
                    return answer
        if unreadable:
            return unreadable
        if garbage or self._decoder.pending:
            return (
                f"garbage ({garbage} invalid frame(s), {self._decoder.pending} byte(s) without "
                "a delimiter, no valid reply)"
            )
        return "silent"
