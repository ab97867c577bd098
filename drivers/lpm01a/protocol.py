"""The ST PowerShield (X-NUCLEO-LPM01A) serial protocol: commands, replies and the data stream.

One description serves the driver that speaks it and the emulator that imitates it
(:mod:`hilbench_drivers.lpm01a.emulator`). Sources: the PowerShield firmware's command list
as MLPerf Tiny's runner documents and uses it
(``benchmark/runner/power_manager/power_manager_lpm.py``: ``htc``, ``freq``, ``acqtime``,
``trigsrc``, ``trigdelay``, ``eventsrc d7 fal``, ``output``, ``format``,
``volt``, ``start``/``stop``; replies ``PowerShield > ack <command>``, ``error`` with an
``Error detail:`` line; ``TimeStamp: 001s 000ms, buff 00%`` and ``event NN ris`` lines in the
ASCII stream; ``Acquisition completed`` after ``stop``) and ST's UM2269 as public parsers render
it (ASCII samples ``DDDDsEE`` = DDDD × 10^(sEE); binary samples of 2 bytes, a negative power of
16 in the high nibble over a 12-bit value; binary metadata ``0xF0 0xFn … 0xFF 0xFF``).

Not found in a public source, and therefore an assumption of this module (checked against the
emulator only): how a binary stream carries ``eventsrc`` events. Here they are an information
record (``0xF0 0xF2``) holding the same text as the ASCII line. MLPerf Tiny configures
``eventsrc d7 fal`` and matches ``event NN ris`` lines; this module follows it literally: every
event of the configured edge is reported as ``event NN ris``, numbered modulo 100.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

PROMPT = "PowerShield > "
BAUD_RATE = 3_686_400
FREQUENCIES_HZ = (100_000, 50_000, 20_000, 10_000, 5_000, 2_000, 1_000, 500, 200, 100, 50, 20,
                  10, 5, 2, 1)
ASCII_MAX_UNLIMITED_HZ = 5_000  # above it, ascii_dec is limited in duration; bin_hexa is not
ENERGY_MAX_HZ = 10_000  # output energy integrates at most 10 kHz
VOLTAGE_RANGE_V = (1.8, 3.3)
META, META_ERROR, META_INFO, META_TIMESTAMP, META_END, META_OVERCURRENT = (
    0xF0, 0xF1, 0xF2, 0xF3, 0xF4, 0xF5)
META_POWER_DOWN, META_VOLTAGE, META_TAIL = 0xF6, 0xF7, b"\xff\xff"
EVENT_RE = re.compile(r"event (\d+) (ris|fal)")
TIMESTAMP_RE = re.compile(r"TimeStamp:[ ><]?(\d+)s (\d+)ms, buff (\d+)%")


def format_frequency(hz: int) -> str:
    """``freq`` argument: ``100k``, ``1k``, ``500``."""
    return f"{hz // 1000}k" if hz >= 1000 and hz % 1000 == 0 else str(hz)


def parse_number(text: str) -> float:
    """A PowerShield number: ``2m``, ``100u``, ``1k``, ``2-3`` (2e-3), ``3300m``, ``inf``."""
    text = text.strip()
    if text in ("inf", "0"):
        return math.inf if text == "inf" else 0.0
    suffix = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "k": 1e3}
    if text and text[-1] in suffix:
        return float(text[:-1]) * suffix[text[-1]]
    match = re.fullmatch(r"(\d+)([+-])(\d{1,2})", text)
    if match:
        return float(match[1]) * 10.0 ** (int(match[3]) * (-1 if match[2] == "-" else 1))
    return float(text)


def encode_ascii(value: float) -> bytes:
    """One ASCII sample, ``DDDDsEE\\r\\n``: four digits times ten to the signed exponent."""
    if not value > 0:
        return b"0000-00\r\n"
    exponent = 3 - math.floor(math.log10(value))
    mantissa = round(value * 10.0 ** exponent)
    if mantissa >= 10_000:
        mantissa, exponent = mantissa // 10, exponent - 1
    sign = "-" if exponent >= 0 else "+"
    return f"{mantissa:04d}{sign}{abs(exponent):02d}\r\n".encode()


def decode_ascii(line: str) -> float:
    return int(line[0:4]) * 10.0 ** (int(line[5:7]) * (-1 if line[4] == "-" else 1))


def encode_binary(values: np.ndarray) -> bytes:
    """Binary samples: 2 bytes each, ``[p:4][v:12]`` = v / 16**p, p at most 14 (15 marks
    metadata)."""
    v = np.clip(np.asarray(values, dtype=np.float64), 0.0, None)
    with np.errstate(divide="ignore"):
        p = np.floor(np.log(4095.0 / np.maximum(v, 1e-30)) / np.log(16.0))
    p = np.clip(p, 0, 14).astype(np.int64)
    code = np.minimum(np.round(v * 16.0 ** p), 4095).astype(np.int64)
    out = np.empty(2 * len(v), dtype=np.uint8)
    out[0::2] = (p << 4) | (code >> 8)
    out[1::2] = code & 0xFF
    return out.tobytes()


def metadata(kind: int, payload: bytes = b"") -> bytes:
    return bytes((META, kind)) + payload + META_TAIL


def timestamp_ascii(elapsed_ms: int, buffer_percent: int) -> bytes:
    return (f"TimeStamp: {elapsed_ms // 1000:03d}s {elapsed_ms % 1000:03d}ms, "
            f"buff {buffer_percent:02d}%\r\n").encode()


def timestamp_binary(elapsed_ms: int, buffer_percent: int) -> bytes:
    return metadata(META_TIMESTAMP, (elapsed_ms & 0x7FFF_FFFF).to_bytes(4, "big")
                    + bytes((buffer_percent,)))


@dataclass
class Parsed:
    """What one chunk of the stream held."""

    values: list[float] = field(default_factory=list)
    events: list[tuple[int, int, str]] = field(default_factory=list)  # (sample, number, edge)
    lines: list[str] = field(default_factory=list)  # replies and messages, prompt removed
    errors: list[str] = field(default_factory=list)
    timestamps: list[tuple[int, int, int]] = field(default_factory=list)  # (sample, ms, buff%)
    ended: bool = False
    overcurrent: bool = False


class StreamParser:
    """Splits the board's byte stream into samples (counted from the acquisition's first),
    events at their sample position, timestamps and text lines. ``binary`` selects how samples
    are carried while an acquisition runs; text outside it is always lines."""

    def __init__(self) -> None:
        self.binary = False
        self.acquiring = False
        self.samples = 0
        self._starting = False
        self._buf = bytearray()

    def begin(self, binary: bool) -> None:
        """The next ``ack start`` line begins an acquisition (its samples follow it, binary
        ones right after its line end)."""
        self.binary, self.acquiring, self.samples, self._starting = binary, False, 0, True

    def feed(self, data: bytes) -> Parsed:
        out = Parsed()
        self._buf.extend(data)
        while self._buf:
            if self.acquiring and self.binary:
                if not self._binary_step(out):
                    break
            elif not self._line_step(out):
                break
        return out

    def _line_step(self, out: Parsed) -> bool:
        end = self._buf.find(b"\n")
        if end < 0:
            return False
        line = self._buf[:end].decode("ascii", errors="replace").strip("\r\0 ")
        del self._buf[:end + 1]
        self._line(line, out)
        return True

    def _line(self, line: str, out: Parsed) -> None:
        text = line.replace(PROMPT.strip(), "").strip()
        if not text:
            return
        if self.acquiring and text[0].isdigit() and len(text) >= 7:
            out.values.append(decode_ascii(text))
            self.samples += 1
        elif (event := EVENT_RE.fullmatch(text)) is not None:
            out.events.append((self.samples, int(event[1]), event[2]))
        elif (stamp := TIMESTAMP_RE.search(text)) is not None:
            out.timestamps.append((self.samples, int(stamp[1]) * 1000 + int(stamp[2]),
                                   int(stamp[3])))
        else:
            if "Acquisition completed" in text or text == "end":
                self.acquiring = False
                out.ended = True
            elif self._starting and text.startswith("ack start"):
                self._starting, self.acquiring = False, True
            out.lines.append(text)

    def _binary_step(self, out: Parsed) -> bool:
        buf = self._buf
        if len(buf) < 2:
            return False
        if buf[0] == META and buf[1] >> 4 == 0xF:
            tail = buf.find(META_TAIL, 2)
            if tail < 0:
                return False
            kind, payload = buf[1], bytes(buf[2:tail])
            del buf[:tail + 2]
            self._meta(kind, payload, out)
            return True
        if buf[0] >> 4 == 0xF:  # a stray byte: not a sample
            del buf[:1]
            return True
        count = len(buf) // 2
        for i in range(count):
            if buf[2 * i] >> 4 == 0xF:
                count = i
                break
        raw = np.frombuffer(bytes(buf[:2 * count]), dtype=np.uint8)
        power = (raw[0::2] >> 4).astype(np.int64)
        code = ((raw[0::2].astype(np.int64) & 0x0F) << 8) | raw[1::2]
        out.values.extend((code / 16.0 ** power).tolist())
        self.samples += count
        del buf[:2 * count]
        return True

    def _meta(self, kind: int, payload: bytes, out: Parsed) -> None:
        if kind == META_TIMESTAMP and len(payload) == 5:
            out.timestamps.append((self.samples, int.from_bytes(payload[:4], "big"), payload[4]))
        elif kind == META_INFO:
            self._line(payload.decode("ascii", errors="replace"), out)
        elif kind == META_ERROR:
            out.errors.append(payload.decode("ascii", errors="replace").strip())
        elif kind == META_END:
            self.acquiring = False
            out.ended = True
        elif kind == META_OVERCURRENT:
            out.overcurrent = True
