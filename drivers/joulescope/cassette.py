"""A JS220 cassette: the driver-API traffic of an acquisition, replayed without the vendor library.

Recorded at the boundary hilbench talks to — ``pyjoulescope_driver.Driver``'s calls and the
values it hands to subscribers — so one format serves a real JS220 and the simulated one, and a
replay needs neither the instrument nor ``pyjoulescope_driver``. The folder follows the
cassette layout of :mod:`hilbench.cassette`: ``channels/joulescope.jsonl`` starts with a header
line, then one line per call ``{"op": "call", "name", "args", "result"}`` (or ``"error"`` and
``"message"`` for a call that raised) and one per value delivered ``{"op": "callback",
"topic", "value"}``, in the order they happened; arrays (samples, packed GPI levels) go to
``arrays/<sha256>``.

:class:`ReplayApi` answers each call with the recorded result, refusing a call that differs
from the recording with the recorded one named, and hands the values recorded after a call to
the subscribers before the call returns (synchronously: a replay does not wait for time).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hilbench.cassette.arrays import get_array, put_array
from hilbench.cassette.channels import instrument_channel
from hilbench.cassette.reader import read_channel

CHANNEL = "joulescope.jsonl"
CALLS = ("device_paths", "open", "close", "publish", "query", "subscribe", "unsubscribe",
         "unsubscribe_all", "publish_and_wait", "finalize")
ERRORS: dict[str, type[Exception]] = {"RuntimeError": RuntimeError,
                                      "TimeoutError": TimeoutError, "KeyError": KeyError,
                                      "ValueError": ValueError}


class ReplayMismatch(RuntimeError):
    """The replayed driver did something the cassette does not hold."""


def encode(folder: Path, value: Any) -> Any:
    """A value as a JSON line holds it: arrays by reference, callables as a placeholder."""
    if isinstance(value, np.ndarray):
        return {"array": put_array(folder, value)}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): encode(folder, v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(folder, v) for v in value]
    if callable(value):
        return {"callback": True}
    return value


def decode(folder: Path, value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"array"}:
            return get_array(folder, value["array"])
        return {k: decode(folder, v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(folder, v) for v in value]
    return value


class RecordingApi:
    """Wraps a driver-API object and writes every call and delivered value to ``folder``."""

    def __init__(self, inner: Any, folder: str | Path) -> None:
        self._inner = inner
        self.folder = Path(folder)
        self._channel = instrument_channel(self.folder, CHANNEL, {
            "channel": "joulescope", "api": "pyjoulescope_driver.Driver",
            "recorded_from": type(inner).__name__})
        self._lock = threading.Lock()
        self._wrappers: dict[tuple[str, int], Callable[[str, Any], None]] = {}

    def _write(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._channel.write(record)

    def _call(self, name: str, *args: Any) -> Any:
        record: dict[str, Any] = {"op": "call", "name": name, "args": encode(self.folder, args)}
        try:
            result = getattr(self._inner, name)(*args)
        except Exception as exc:
            record.update(error=type(exc).__name__, message=str(exc))
            self._write(record)
            raise
        record["result"] = encode(self.folder, result)
        self._write(record)
        return result

    def subscribe(self, topic: str, flags: Any, fn: Callable[[str, Any], None],
                  timeout: float | None = None) -> None:
        def recorded(t: str, value: Any) -> None:
            self._write({"op": "callback", "topic": t, "value": encode(self.folder, value)})
            fn(t, value)

        self._wrappers[(topic, id(fn))] = recorded
        record = {"op": "call", "name": "subscribe", "args": [topic, flags, {"callback": True}],
                  "result": None}
        self._inner.subscribe(topic, flags, recorded)
        self._write(record)

    def unsubscribe(self, topic: str, fn: Callable[[str, Any], None],
                    timeout: float | None = None) -> None:
        wrapper = self._wrappers.pop((topic, id(fn)), fn)
        self._inner.unsubscribe(topic, wrapper)
        self._write({"op": "call", "name": "unsubscribe", "args": [topic, {"callback": True}],
                     "result": None})

    def finalize(self, timeout: float | None = None) -> None:
        try:
            self._call("finalize")
        finally:
            self._channel.close()

    def __getattr__(self, name: str) -> Any:
        if name not in CALLS:
            raise AttributeError(name)
        return lambda *args, **kwargs: self._call(name, *args)


class ReplayApi:
    """The driver API answered from a cassette (no instrument, no vendor library)."""

    delivers_synchronously = True

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        try:
            self._lines = read_channel(self.folder, CHANNEL, "joulescope")
        except OSError as exc:
            raise RuntimeError(f"cannot replay the JS220 cassette: {exc}") from exc
        self._next = 0
        self._subs: list[tuple[str, Callable[[str, Any], None]]] = []

    def _call(self, name: str, *args: Any) -> Any:
        while self._next < len(self._lines) and self._lines[self._next]["op"] != "call":
            self._next += 1  # values recorded after the last call nobody waited for
        if self._next >= len(self._lines):
            raise ReplayMismatch(f"JS220 cassette {self.folder}: {name}{args!r} after the last "
                                 "recorded call")
        line = self._lines[self._next]
        wanted = (line["name"], json.dumps(line["args"], sort_keys=True, default=str))
        got = (name, json.dumps(encode_for_compare(args), sort_keys=True, default=str))
        if wanted != got:
            raise ReplayMismatch(f"JS220 cassette {self.folder}: the driver called {got[0]}"
                                 f"{got[1]}; the recording holds {wanted[0]}{wanted[1]} next")
        self._next += 1
        if name == "subscribe":
            self._subs.append((args[0], args[2]))
        elif name == "unsubscribe":
            self._subs = [(t, f) for t, f in self._subs if not (t == args[0] and f == args[1])]
        self._deliver_recorded()
        if "error" in line:
            raise ERRORS.get(line["error"], RuntimeError)(line.get("message", ""))
        return decode(self.folder, line.get("result"))

    def _deliver_recorded(self) -> None:
        while self._next < len(self._lines) and self._lines[self._next]["op"] == "callback":
            line = self._lines[self._next]
            self._next += 1
            value = decode(self.folder, line["value"])
            for topic, fn in list(self._subs):
                if line["topic"] == topic or line["topic"].startswith(topic.rstrip("/") + "/"):
                    fn(line["topic"], value)

    def unused(self) -> int:
        """Calls recorded but never made in the replay."""
        return sum(1 for line in self._lines[self._next:] if line["op"] == "call")

    def __getattr__(self, name: str) -> Any:
        if name not in CALLS:
            raise AttributeError(name)
        return lambda *args, **kwargs: self._call(name, *args)


def encode_for_compare(args: tuple[Any, ...]) -> Any:
    """Arguments as the recorder wrote them (callbacks as a placeholder, no array store)."""
    return [{"callback": True} if callable(a) else
            (list(a) if isinstance(a, tuple) else a) for a in args]
