"""Recording a campaign's outside world into ``channels/`` (format: :mod:`hilbench.cassette`).

:class:`ChannelRecorder` is a :class:`hilbench.orchestrator.tap.Tap`: installed for the campaign,
it writes every agent message after CurveZMQ (never a key), every VISA call of every
instrument, the helper processes started and every clock reading of the orchestrator's thread.
Each JSON line is flushed as written; clock readings are flushed with the next line, or within
a quarter second, so a killed recording keeps everything up to its last second.
"""

from __future__ import annotations

import array
import contextlib
import json
import logging
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from hilbench import clock
from hilbench.cassette.arrays import BLOBS, put_array, put_blob
from hilbench.orchestrator import tap
from hilbench.private_files import open_private, private_dir
from hilbench.safe_paths import inside, safe_name

log = logging.getLogger(__name__)

CHANNELS = "channels"
CLOCK = "clock.f8"
SPAWNED = "spawned.jsonl"
INLINE_TEXT = 4096  # longer instrument replies (reading blocks) go to the array store
CLOCK_FLUSH_S = 0.25
# The calls of a pyvisa message-based resource that carry data; the rest pass through.
VISA_CALLS = ("write", "write_raw", "write_ascii_values", "write_binary_values", "read",
              "read_raw", "read_bytes", "query", "query_ascii_values", "query_binary_values",
              "read_ascii_values", "read_binary_values", "assert_trigger", "clear")


class Channel:
    """One JSON-lines file, written and flushed line by line."""

    def __init__(self, path: Path, header: dict[str, Any], before: Any = None) -> None:
        self.path = path
        self._fh: IO[str] = open_private(path, "x")
        self._before = before  # called before each line (the clock's buffer goes first)
        self.write(header)

    def write(self, record: dict[str, Any]) -> None:
        if self._before is not None:
            self._before()
        self._fh.write(json.dumps(record, default=_json_default) + "\n")
        self._fh.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._fh.close()


def instrument_channel(folder: Path, file: str, header: dict[str, Any]) -> Channel:
    """A new channel ``channels/<file>`` in cassette ``folder`` (created owner-only, with its
    array store), for an instrument driver that records its own traffic."""
    private_dir(folder, parents=True)
    private_dir(folder / CHANNELS)
    private_dir(folder / BLOBS)
    return Channel(inside(folder / CHANNELS, file), {"kind": "channel", **header})


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"hex": bytes(value).hex()}
    return str(value)


def encode_value(folder: Path, value: Any) -> Any:
    """A value as a JSON line holds it: arrays and long text or bytes by sha256 reference."""
    if isinstance(value, np.ndarray):
        return {"array": put_array(folder, value)}
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        if len(data) > INLINE_TEXT:
            return {"bytes_sha256": put_blob(folder, data)}
        return {"bytes": data.hex()}
    if isinstance(value, str) and len(value) > INLINE_TEXT:
        return {"text_sha256": put_blob(folder, value.encode("utf-8"))}
    if isinstance(value, (list, tuple)) and len(value) > 64 and all(
            isinstance(v, (int, float)) for v in value):
        return {"list": put_array(folder, np.asarray(value))}
    return value


class ClockChannel:
    """Every reading of :func:`hilbench.clock.now` on one thread, as raw float64 appended."""

    def __init__(self, path: Path) -> None:
        self._fh = open_private(path, "x", binary=True)
        self._buffer = array.array("d")
        self._owner = threading.get_ident()
        self._flushed = clock.real_now()

    def read(self) -> float:
        value = clock.real_now()
        if threading.get_ident() == self._owner:
            self._buffer.append(value)
            if value - self._flushed > CLOCK_FLUSH_S:
                self.flush()
        return value

    def flush(self) -> None:
        if self._buffer:
            self._fh.write(self._buffer.tobytes())
            self._fh.flush()
            del self._buffer[:]
        self._flushed = clock.real_now()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.flush()
            self._fh.close()


class ChannelRecorder:
    """The recording tap: one channel per agent link and per opened VISA resource."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        private_dir(self.folder / CHANNELS)
        private_dir(self.folder / BLOBS)
        self.clock = ClockChannel(self.folder / CHANNELS / CLOCK)
        self._spawned = Channel(self.folder / CHANNELS / SPAWNED, {"kind": "channel",
                                "channel": "spawned"}, self.clock.flush)
        self._channels: list[Channel] = [self._spawned]
        self._names: set[str] = set()

    def _channel(self, stem: str, header: dict[str, Any]) -> Channel:
        name, n = stem, 1
        while name in self._names:
            n += 1
            name = f"{stem}.{n}"
        self._names.add(name)
        channel = Channel(inside(self.folder / CHANNELS, f"{name}.jsonl"),
                          {"kind": "channel", "name": name, **header}, self.clock.flush)
        self._channels.append(channel)
        return channel

    # --- the tap -------------------------------------------------------------------------
    def agent_socket(self, link: str, address: str, sock: Any) -> Any:
        channel = self._channel(safe_name(f"agent-{link}"),
                                {"channel": "agent", "agent": link, "address": address})
        return RecordingSocket(sock, channel, self.folder)

    def spawn(self, name: str, args: list[str], handover: Any) -> None:
        return None

    def spawned(self, name: str, address: str) -> None:
        self._spawned.write({"kind": "spawned", "name": name, "address": address})

    def reference_bound(self, measure: Callable[[], Any]) -> Any:
        """The orchestrator's reference echoes are measured live and stored, in order, beside
        the helpers started (hilbench.orchestrator.reference_link)."""
        bound = measure()
        self._spawned.write({"kind": "reference", "link": bound.to_dict()})
        return bound

    def reference_burst(self, measure: Callable[[], float]) -> float:
        """A burst of the reference's echoes, measured live and stored in order too."""
        slowest = measure()
        self._spawned.write({"kind": "reference_burst", "slowest_s": slowest})
        return slowest

    def open_resource(self, resource: str, kwargs: dict[str, Any], opened: Any) -> Any:
        inst = opened()
        channel = self._channel(safe_name(f"visa-{resource}"),
                                {"channel": "visa", "resource": resource,
                                 "options": {k: v for k, v in kwargs.items()
                                             if isinstance(v, (str, int, float, bool))}})
        return RecordingResource(inst, channel, self.folder)

    @contextlib.contextmanager
    def installed(self) -> Iterator[ChannelRecorder]:
        """Record inside: the clock, agent links, helpers and VISA resources."""
        with tap.installed(self), clock.use(self.clock.read), visa_hook(self.open_resource):
            try:
                yield self
            finally:
                self.clock.flush()

    def close(self) -> None:
        self.clock.close()
        for channel in self._channels:
            channel.close()


@contextlib.contextmanager
def visa_hook(open_hook: Any) -> Iterator[None]:
    """Inside, every ``ResourceManager.open_resource`` of pyvisa goes through
    ``open_hook(resource, kwargs, opened)`` (without pyvisa installed, nothing to hook).
    ``opened`` is a callable that opens the real resource."""
    try:
        from pyvisa import highlevel
    except ImportError:
        yield
        return
    original = highlevel.ResourceManager.open_resource

    def open_resource(self: Any, resource_name: str, *args: Any, **kwargs: Any) -> Any:
        return open_hook(resource_name, kwargs,
                         lambda: original(self, resource_name, *args, **kwargs))

    highlevel.ResourceManager.open_resource = open_resource  # type: ignore[method-assign]
    try:
        yield
    finally:
        highlevel.ResourceManager.open_resource = original  # type: ignore[method-assign]


def decoded(frames: Any) -> dict[str, Any]:
    """A message's frames as a channel line holds it (arrays left as arrays)."""
    from hilbench.wire import codec

    try:
        msg = codec.decode(frames)
    except Exception as exc:  # a bad message is recorded as such; the client says why
        return {"type": "bad", "error": str(exc)}
    return {"type": msg.type, "id": msg.id, "cmd": msg.cmd, "body": msg.body,
            "arrays": list(msg.arrays)}


class RecordingSocket:
    """An agent link's socket that writes each message sent and received, and each receive
    that timed out (``again``: a replay needs to know when the orchestrator waited)."""

    def __init__(self, sock: Any, channel: Channel, folder: Path) -> None:
        self._sock = sock
        self._channel = channel
        self._folder = folder

    def _line(self, direction: str, frames: Any = None, **extra: Any) -> None:
        record: dict[str, Any] = {"t": clock.real_now(), "dir": direction, **extra}
        if frames is not None:
            message = decoded(frames)
            # What the orchestrator sends (QUBO matrices, ASC samples) it makes again on replay
            # from the campaign: its hash is enough. What it receives is kept whole.
            message["arrays"] = [put_array(self._folder, a, store=direction == "in")
                                 for a in message.get("arrays", [])]
            record.update(message)
        self._channel.write(record)

    def send_message(self, frames: Any, flags: int = 0) -> None:
        import zmq

        try:
            self._sock.send_message(frames, flags)
        except zmq.Again:
            self._line("out", frames, again=True)
            raise
        self._line("out", frames)

    def recv_message(self) -> Any:
        import zmq

        try:
            frames = self._sock.recv_message()
        except zmq.Again:
            self._line("in", again=True)
            raise
        self._line("in", frames)
        return frames

    def close(self, *args: Any, **kwargs: Any) -> None:
        self._sock.close(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class RecordingResource:
    """A pyvisa resource whose data calls (:data:`VISA_CALLS`) are written with their
    arguments, result or error, and start and end on the orchestrator's clock."""

    def __init__(self, inst: Any, channel: Channel, folder: Path) -> None:
        object.__setattr__(self, "_inst", inst)
        object.__setattr__(self, "_channel", channel)
        object.__setattr__(self, "_folder", folder)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inst, name)
        if name not in VISA_CALLS:
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            t0 = clock.real_now()
            record: dict[str, Any] = {"op": name,
                                      "args": [encode_value(self._folder, a) for a in args]}
            if kwargs:
                record["kwargs"] = {k: encode_value(self._folder, v) for k, v in kwargs.items()}
            try:
                result = value(*args, **kwargs)
            except Exception as exc:
                record.update(t0=t0, t1=clock.real_now(), error=type(exc).__name__,
                              message=str(exc), error_code=getattr(exc, "error_code", None))
                self._channel.write(record)
                raise
            record.update(t0=t0, t1=clock.real_now(), result=encode_value(self._folder, result))
            self._channel.write(record)
            return result

        return call

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._inst, name, value)

    def close(self) -> None:
        self._channel.write({"op": "close", "t0": clock.real_now()})
        self._inst.close()
