"""The serial protocol between host and firmware (``protocols/serial.md``), Python side.

Frames are ``type | seq | payload | CRC-32 (little-endian, zlib's)``, COBS-encoded and ended by
one ``0x00``. This module only packs and unpacks bytes; :mod:`.link` does the I/O. The numbers
here mirror ``firmware/hilbench_asc/src/hb_protocol.h``; ``protocols/vectors/serial_frames.json``
pins the encoding for both sides.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

PROTOCOL_VERSION = 1
MAX_PAYLOAD = 1100
CHUNK_MAX_BYTES = 1024
DELIMITER = b"\x00"


class MsgType(IntEnum):
    IDENTIFY = 0x01
    LOAD_BEGIN = 0x02
    LOAD_CHUNK = 0x03
    LOAD_END = 0x04
    UNLOAD = 0x05
    RUN = 0x06
    REPEAT = 0x07
    STOP = 0x08
    READ_RESULT = 0x09
    IDENT = 0x81
    LOAD_READY = 0x82
    CHUNK_OK = 0x83
    LOADED = 0x84
    UNLOADED = 0x85
    RESULT = 0x86
    REPEAT_DONE = 0x87
    BOOT = 0xB0
    ERROR = 0xEE


class ErrorCode(IntEnum):
    BAD_FRAME = 1
    BAD_CRC = 2
    UNKNOWN_COMMAND = 3
    BAD_ARGUMENTS = 4
    NOT_LOADED = 5
    DEVICE_FULL = 6
    SAMPLE_CHECKSUM = 7
    SAMPLE_INCOMPLETE = 8
    BUSY = 9


class Kind(IntEnum):
    AUDIO_PCM16 = 0
    FEATURES_INT8 = 1


class Stage(IntEnum):
    IDLE = 0
    PREPROCESSING = 1
    INFERENCE = 2


def _cobs() -> Any:
    """cobs, imported on first use: the core's --help must work without the arduino extra."""
    try:
        from cobs import cobs
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the arduino driver needs the cobs package: pip install 'hilbench[arduino]'"
        ) from exc
    return cobs


class FrameError(ValueError):
    """Bytes between two delimiters that are not a valid frame (garbage, truncation, bit errors)."""


@dataclass(frozen=True)
class Frame:
    type: int
    seq: int
    payload: bytes


def encode_frame(msg_type: int, seq: int, payload: bytes = b"") -> bytes:
    """One frame as sent on the wire, delimiter included."""
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}")
    raw = bytes((msg_type, seq)) + payload
    raw += struct.pack("<I", zlib.crc32(raw))
    return _cobs().encode(raw) + DELIMITER


def decode_frame(encoded: bytes) -> Frame:
    """The frame in ``encoded`` (without its delimiter); FrameError says what is wrong."""
    cobs = _cobs()
    try:
        raw = cobs.decode(encoded)
    except cobs.DecodeError as exc:
        raise FrameError(f"not COBS ({exc}): {encoded[:16].hex()}…") from None
    if len(raw) < 6:
        raise FrameError(f"frame of {len(raw)} bytes is shorter than the 6-byte minimum")
    (crc,) = struct.unpack_from("<I", raw, len(raw) - 4)
    if zlib.crc32(raw[:-4]) != crc:
        raise FrameError(f"CRC-32 mismatch in a frame of type 0x{raw[0]:02x}")
    return Frame(raw[0], raw[1], raw[2:-4])


class FrameDecoder:
    """Splits a byte stream at delimiters; keeps a partial frame until its delimiter arrives."""

    def __init__(self, max_encoded: int = MAX_PAYLOAD + 16) -> None:
        self._buffer = bytearray()
        self._max = max_encoded

    def feed(self, data: bytes) -> list[Frame | FrameError]:
        out: list[Frame | FrameError] = []
        for part in _split_keep(data):
            if part == DELIMITER:
                if self._buffer:
                    encoded, self._buffer = bytes(self._buffer), bytearray()
                    try:
                        out.append(decode_frame(encoded))
                    except FrameError as exc:
                        out.append(exc)
                continue
            self._buffer += part
            if len(self._buffer) > self._max:
                out.append(FrameError(f"{len(self._buffer)} bytes without a frame delimiter"))
                self._buffer.clear()
        return out

    def clear(self) -> None:
        self._buffer.clear()

    @property
    def pending(self) -> int:
        return len(self._buffer)


def _split_keep(data: bytes) -> list[bytes]:
    parts: list[bytes] = []
    start = 0
    for i, byte in enumerate(data):
        if byte == 0:
            if i > start:
                parts.append(data[start:i])
            parts.append(DELIMITER)
            start = i + 1
    if start < len(data):
        parts.append(data[start:])
    return parts


# --- payloads ------------------------------------------------------------------------------------


def load_begin(index: int, kind: Kind, total: int, crc: int) -> bytes:
    return struct.pack("<HBII", index, kind, total, crc)


def load_chunk(offset: int, data: bytes) -> bytes:
    return struct.pack("<I", offset) + data


def index_payload(index: int) -> bytes:
    return struct.pack("<H", index)


def repeat(index: int, stage: Stage, duration_ms: int) -> bytes:
    return struct.pack("<HBI", index, stage, duration_ms)


def parse_identity(payload: bytes) -> dict[str, str]:
    """``key=value`` pairs of an IDENT or BOOT payload."""
    text = payload.decode("utf-8", errors="replace")
    pairs = [item.split("=", 1) for item in text.split() if "=" in item]
    return {key: value for key, value in pairs}


@dataclass(frozen=True)
class RunResult:
    index: int
    predicted: int
    kind: Kind
    preprocess_us: int | None  # None when the sample was features (nothing pre-processed)
    inference_us: int
    logits: list[int]


def parse_result(payload: bytes) -> RunResult:
    index, predicted, classes, kind, pre_us, inf_us = struct.unpack_from("<HBBBII", payload)
    if len(payload) != 13 + 4 * classes:
        raise FrameError(f"RESULT of {len(payload)} bytes for {classes} classes")
    logits = list(struct.unpack_from(f"<{classes}i", payload, 13))
    pre = pre_us if kind == Kind.AUDIO_PCM16 else None
    return RunResult(index, predicted, Kind(kind), pre, inf_us, logits)


@dataclass(frozen=True)
class RepeatResult:
    stage: Stage
    stopped_early: bool
    iterations: int
    elapsed_us: int
    sum_us: int
    sumsq_us2: int
    min_us: int
    max_us: int

    @property
    def mean_s(self) -> float | None:
        return self.sum_us / self.iterations * 1e-6 if self.iterations else None

    @property
    def std_error_s(self) -> float | None:
        """Standard error of the mean iteration time, from the board's sums (µs, µs²)."""
        n = self.iterations
        if n < 2:
            return None
        variance = max(0.0, (self.sumsq_us2 - self.sum_us**2 / n) / (n - 1))
        return (variance / n) ** 0.5 * 1e-6


def parse_repeat(payload: bytes) -> RepeatResult:
    if len(payload) != 34:
        raise FrameError(f"REPEAT_DONE of {len(payload)} bytes, expected 34")
    stage, stopped, iterations, elapsed, total, sumsq, lo, hi = struct.unpack("<BBIIQQII", payload)
    return RepeatResult(Stage(stage), bool(stopped), iterations, elapsed, total, sumsq, lo, hi)


def parse_error(payload: bytes) -> tuple[int, str]:
    code = payload[0] if payload else 0
    return code, payload[1:].decode("utf-8", errors="replace")


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name.lower()
    except ValueError:
        return f"error_{code}"
