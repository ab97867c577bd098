"""An LPM01A cassette: the serial line of an acquisition, replayed without a board or pyserial.

Recorded at the serial line — the bytes hilbench wrote and the bytes the board sent, in the
order they happened — so a real PowerShield and the emulator record the same way. The folder
follows the cassette layout of :mod:`hilbench.cassette`: ``channels/serial.jsonl`` starts with a
header line, then ``{"op": "write"|"read", "data": {"bytes": HEX}}`` per call (chunks over 4 KiB
as ``{"bytes_sha256"}`` in ``arrays/``) and ``{"op": "close"}``.

:class:`ReplaySerial` is a port with pyserial's ``read``/``write``/``flush``/``close``: each write
must be the next one recorded (else :class:`ReplayMismatch` names both), and each read returns
the next chunk the board sent, once every write recorded before it has been made.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from hilbench.cassette.channels import encode_value, instrument_channel
from hilbench.cassette.reader import read_channel
from hilbench.cassette.standins import decode_value

CHANNEL = "serial.jsonl"
READ_WAIT_S = 0.05  # as the driver's port timeout


class ReplayMismatch(RuntimeError):
    """The replayed driver wrote something the cassette does not hold."""


class RecordingSerial:
    """Wraps a serial port and writes every write and every non-empty read to ``folder``."""

    def __init__(self, inner: Any, folder: str | Path, port: str = "") -> None:
        self._inner = inner
        self.folder = Path(folder)
        self._channel = instrument_channel(self.folder, CHANNEL, {
            "channel": "serial", "port": port, "device": "ST LPM01A"})
        self._lock = threading.Lock()

    def _line(self, op: str, data: bytes | None = None) -> None:
        record: dict[str, Any] = {"op": op}
        if data is not None:
            record["data"] = encode_value(self.folder, data)
        with self._lock:
            self._channel.write(record)

    def write(self, data: bytes) -> int | None:
        result = self._inner.write(data)
        self._line("write", bytes(data))
        return result

    def read(self, size: int = 1) -> bytes:
        data = self._inner.read(size)
        if data:
            self._line("read", bytes(data))
        return data

    def flush(self) -> None:
        self._inner.flush()

    def close(self) -> None:
        self._line("close")
        self._inner.close()
        self._channel.close()


class ReplaySerial:
    """A serial port answering from a cassette."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        lines = read_channel(self.folder, CHANNEL, "serial")
        self._ops = [(line["op"], decode_value(self.folder, line["data"]) if "data" in line
                      else b"") for line in lines if line["op"] in ("read", "write")]
        self._done = [False] * len(self._ops)
        self._lock = threading.Condition()
        self.closed = False

    def write(self, data: bytes) -> int:
        with self._lock:
            i = next((k for k, (op, _) in enumerate(self._ops)
                      if op == "write" and not self._done[k]), None)
            if i is None or self._ops[i][1] != bytes(data):
                held = self._ops[i][1] if i is not None else "nothing more"
                raise ReplayMismatch(f"LPM01A cassette {self.folder}: the driver wrote "
                                     f"{bytes(data)!r}; the recording holds {held!r} next")
            self._done[i] = True
            self._lock.notify_all()
        return len(data)

    def read(self, size: int = 1) -> bytes:
        """The next chunk the board sent, once the writes before it are made."""
        deadline = time.monotonic() + READ_WAIT_S
        with self._lock:
            while not self.closed:
                i = next((k for k, (op, _) in enumerate(self._ops)
                          if op == "read" and not self._done[k]), None)
                if i is None:
                    break
                if all(self._done[k] for k in range(i) if self._ops[k][0] == "write"):
                    self._done[i] = True
                    return bytes(self._ops[i][1])
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._lock.wait(left)
        time.sleep(READ_WAIT_S if not self.closed else 0)
        return b""

    def unused(self) -> int:
        return sum(1 for done in self._done if not done)

    def flush(self) -> None:
        return None

    def close(self) -> None:
        with self._lock:
            self.closed = True
            self._lock.notify_all()
