"""One hilbench firmware board as Python calls: identify, load a sample, run, repeat a stage.

Why these calls and no others: the board holds one sample (LoadGen's sample library with a
capacity of one). Loading is untimed and checked twice (CRC-32 per frame, CRC-32 of the whole
sample at the end); running is timed on the board's µs timer and only the board's times count.
"""

from __future__ import annotations

import threading
import time
import zlib
from dataclasses import dataclass

import numpy as np

from hilbench_drivers.arduino.link import BoardError, BoardRefused, BoardReset, SerialLink
from hilbench_drivers.arduino.protocol import (
    CHUNK_MAX_BYTES,
    PROTOCOL_VERSION,
    ErrorCode,
    Kind,
    MsgType,
    RepeatResult,
    RunResult,
    Stage,
    index_payload,
    load_begin,
    load_chunk,
    parse_identity,
    parse_repeat,
    parse_result,
    repeat,
)
from hilbench_drivers.arduino.protocol import (
    FrameError as _FrameError,
)

REPEAT_REPLY_MARGIN_S = 5.0  # beyond the window: the last iteration and the reply
RUN_TIMEOUT_S = 10.0  # one sample takes ~0.1 s on the board; this only catches a hang


class WrongFirmware(BoardError):
    """The board answers, but not with a protocol version this driver speaks."""

    code = "wrong_firmware"


@dataclass(frozen=True)
class Identity:
    board: str
    firmware: str
    protocol: int
    model: str
    classes: tuple[str, ...]
    sample_rate: int
    sample_count: int
    frames: int
    filters: int
    chunk: int
    capacity: int
    simulated: bool

    @classmethod
    def parse(cls, fields: dict[str, str], port: str) -> Identity:
        try:
            return cls(
                board=fields["board"],
                firmware=fields["fw"],
                protocol=int(fields["proto"]),
                model=fields["model"],
                classes=tuple(fields["classes"].split(",")),
                sample_rate=int(fields["sample_rate"]),
                sample_count=int(fields["sample_count"]),
                frames=int(fields["frames"]),
                filters=int(fields["filters"]),
                chunk=int(fields["chunk"]),
                capacity=int(fields["capacity"]),
                simulated=fields["simulated"] == "1",
            )
        except (KeyError, ValueError) as exc:
            raise WrongFirmware(
                f"{port}: the board's identity lacks or garbles {exc} ({fields}); not the "
                "hilbench firmware?"
            ) from None


def audio_to_pcm16(audio: np.ndarray) -> bytes:
    """Float audio in [-1, 1] as the int16 PCM the board takes (see protocols/serial.md)."""
    x = np.asarray(audio, dtype=np.float32)
    return np.clip(np.rint(x * np.float32(32768.0)), -32768, 32767).astype("<i2").tobytes()


class Board:
    """A board behind a :class:`SerialLink`; :meth:`identify` first."""

    def __init__(self, link: SerialLink) -> None:
        self.link = link
        self.identity: Identity | None = None

    @property
    def port(self) -> str:
        return self.link.name

    def identify(self) -> Identity:
        """Ask who the board is; refuses a protocol version other than ours.

        A boot banner meanwhile is no error here (a board that has just started sends one):
        the question is asked again.
        """
        try:
            frame = self.link.request(MsgType.IDENTIFY, expect={MsgType.IDENT})
        except BoardReset:
            frame = self.link.request(MsgType.IDENTIFY, expect={MsgType.IDENT})
        fields = parse_identity(frame.payload)
        proto = fields.get("proto")
        if proto != str(PROTOCOL_VERSION):
            raise WrongFirmware(
                f"{self.port}: the board runs firmware {fields.get('fw', '?')} speaking protocol "
                f"{proto or '?'}; this driver speaks protocol {PROTOCOL_VERSION}. Flash "
                "firmware/hilbench_asc from this hilbench version (see firmware/README.md)."
            )
        self.identity = Identity.parse(fields, self.port)
        return self.identity

    def load(self, index: int, kind: Kind, data: bytes, attempts: int = 2) -> float:
        """Put one sample into the board's memory; returns the transfer time in seconds.

        A sample whose whole-sample checksum fails is sent again from the start (``attempts``).
        """
        chunk = min(CHUNK_MAX_BYTES, self.identity.chunk if self.identity else CHUNK_MAX_BYTES)
        crc = zlib.crc32(data)
        t0 = time.perf_counter()
        for attempt in range(attempts):
            self.link.request(
                MsgType.LOAD_BEGIN, load_begin(index, kind, len(data), crc), {MsgType.LOAD_READY}
            )
            for offset in range(0, len(data), chunk):
                part = data[offset : offset + chunk]
                reply = self.link.request(
                    MsgType.LOAD_CHUNK,
                    load_chunk(offset, part),
                    {MsgType.CHUNK_OK},
                    resend_on_timeout=False,  # the board may have taken it: start over instead
                )
                received = int.from_bytes(reply.payload[:4], "little")
                if received != offset + len(part):
                    raise BoardError(
                        f"{self.port}: board holds {received} bytes after the chunk at {offset}, "
                        f"expected {offset + len(part)}",
                        "protocol_error",
                    )
            try:
                self.link.request(MsgType.LOAD_END, index_payload(index), {MsgType.LOADED})
            except BoardRefused as exc:
                if exc.board_code == ErrorCode.SAMPLE_CHECKSUM and attempt + 1 < attempts:
                    continue
                raise
            return time.perf_counter() - t0
        raise AssertionError("unreachable")  # pragma: no cover

    def unload(self, index: int) -> None:
        self.link.request(MsgType.UNLOAD, index_payload(index), {MsgType.UNLOADED})

    def run(self, index: int) -> RunResult:
        """Pre-process (audio samples) and infer once; the reply carries the board's times."""
        frame = self.link.request(
            MsgType.RUN,
            index_payload(index),
            {MsgType.RESULT},
            timeout_s=RUN_TIMEOUT_S,
            resend_on_timeout=False,  # a second RUN would run twice: READ_RESULT instead
        )
        return _result(frame.payload, self.port)

    def read_result(self) -> RunResult:
        frame = self.link.request(MsgType.READ_RESULT, expect={MsgType.RESULT})
        return _result(frame.payload, self.port)

    def repeat(
        self, index: int, stage: Stage, duration_s: float, stop: threading.Event | None = None
    ) -> RepeatResult:
        """Repeat ``stage`` on the held sample for ``duration_s``; ``stop`` ends it early."""
        stop_sent = False

        def poll() -> None:
            nonlocal stop_sent
            if stop is not None and stop.is_set() and not stop_sent:
                self.link.send(MsgType.STOP)
                stop_sent = True

        frame = self.link.request(
            MsgType.REPEAT,
            repeat(index, stage, max(1, round(duration_s * 1000))),
            {MsgType.REPEAT_DONE},
            timeout_s=duration_s + REPEAT_REPLY_MARGIN_S,
            resend_on_timeout=False,
            poll=poll,
        )
        try:
            return parse_repeat(frame.payload)
        except _FrameError as exc:
            raise BoardError(f"{self.port}: {exc}", "protocol_error") from exc


def _result(payload: bytes, port: str) -> RunResult:
    try:
        return parse_result(payload)
    except (_FrameError, ValueError) as exc:
        raise BoardError(f"{port}: malformed RESULT ({exc})", "protocol_error") from exc
