"""The agent protocol's wire codec: a msgpack header frame followed by raw binary payload frames.

See ``protocols/agent-protocol.md`` for the contract. Arrays travel as separate frames with
their dtype and shape in the header, so a numpy array is sent and received without copies.
Nothing is ever unpickled: the header is msgpack with plain types only, and payload dtypes are
restricted to plain numeric kinds.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgpack
import numpy as np

PROTOCOL_NAME = "hilbench-agent"
PROTOCOL_VERSION = 1
SUPPORTED_VERSIONS = (1,)

MAX_HEADER_BYTES = 64 * 1024
DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024 * 1024
MAX_PAYLOAD_FRAMES = 64
# Frames below this size are copied when sent: a memcpy is cheaper than pyzmq's zero-copy
# tracking (a background thread that releases the buffer), which dominates up to about 1 MiB.
COPY_THRESHOLD_BYTES = 1 << 20

# Message types (the header's "type" field).
HELLO = "hello"
WELCOME = "welcome"
REQUEST = "request"
REPLY = "reply"
ERROR = "error"
HEARTBEAT = "heartbeat"
PING = "ping"
PONG = "pong"
MESSAGE_TYPES = frozenset({HELLO, WELCOME, REQUEST, REPLY, ERROR, HEARTBEAT, PING, PONG})
# Types that must carry a correlation id (an error may lack one: the request may have been garbage).
CORRELATED = frozenset({HELLO, WELCOME, REQUEST, REPLY, PING, PONG})

# dtype kinds allowed in payload frames: bool, signed/unsigned int, float, complex.
_ALLOWED_DTYPE_KINDS = frozenset("biufc")
_HEADER_KEYS = ("proto", "v", "type", "id", "cmd", "body", "payloads")


class ProtocolError(ValueError):
    """A message that breaks the protocol; ``code`` is the typed error sent back to the peer."""

    def __init__(self, code: str, message: str, correlation_id: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.correlation_id = correlation_id


@dataclass
class Message:
    """One protocol message; ``arrays`` are sent as separate frames after the header."""

    type: str
    id: str | None = None
    cmd: str | None = None
    body: dict[str, Any] = field(default_factory=dict)
    arrays: list[np.ndarray] = field(default_factory=list)
    version: int = PROTOCOL_VERSION


_counter = itertools.count(1)
_prefix = f"{os.getpid():x}-"


def new_correlation_id() -> str:
    """A process-unique correlation id (cheap: no uuid on the hot path)."""
    return _prefix + str(next(_counter))


def _array_descriptor(arr: np.ndarray) -> dict[str, Any]:
    if arr.dtype.kind not in _ALLOWED_DTYPE_KINDS:
        raise ProtocolError("bad_payload", f"dtype {arr.dtype} cannot be sent; use a numeric dtype")
    return {"dtype": arr.dtype.str, "shape": list(arr.shape)}


def encode(msg: Message) -> list[bytes | np.ndarray]:
    """Frames for ``msg``: header first, then one frame per array (no copy for contiguous ones)."""
    if msg.type not in MESSAGE_TYPES:
        raise ProtocolError("bad_header", f"unknown message type {msg.type!r}")
    arrays = [np.ascontiguousarray(a) for a in msg.arrays]
    header = {
        "proto": PROTOCOL_NAME,
        "v": msg.version,
        "type": msg.type,
        "id": msg.id,
        "cmd": msg.cmd,
        "body": msg.body,
        "payloads": [_array_descriptor(a) for a in arrays],
    }
    packed = msgpack.packb(header, use_bin_type=True)
    if len(packed) > MAX_HEADER_BYTES:
        raise ProtocolError("too_large", f"header is {len(packed)} bytes, limit {MAX_HEADER_BYTES}")
    return [packed, *(a.reshape(-1).view(np.uint8) if a.size else b"" for a in arrays)]


def _frame_bytes(frame: Any) -> memoryview:
    """A read-only view of a zmq.Frame, bytes or memoryview, without copying."""
    buf = getattr(frame, "buffer", frame)
    return memoryview(buf)


def decode(frames: Sequence[Any], max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES) -> Message:
    """Parse and validate frames; raise :class:`ProtocolError` saying what is wrong."""
    if not frames:
        raise ProtocolError("bad_frame", "empty message")
    head = _frame_bytes(frames[0])
    if len(head) > MAX_HEADER_BYTES:
        raise ProtocolError("too_large", f"header is {len(head)} bytes, limit {MAX_HEADER_BYTES}")
    try:
        header = msgpack.unpackb(head, raw=False, strict_map_key=True, max_bin_len=0)
    except Exception as exc:  # msgpack raises several unrelated types on garbage
        raise ProtocolError("bad_frame", f"header is not valid msgpack: {exc}") from None
    if not isinstance(header, dict):
        raise ProtocolError("bad_header", "header must be a map")
    cid = header.get("id") if isinstance(header.get("id"), str) else None
    if header.get("proto") != PROTOCOL_NAME:
        raise ProtocolError("bad_header", f"not a {PROTOCOL_NAME} message", cid)
    version = header.get("v")
    if version not in SUPPORTED_VERSIONS:
        raise ProtocolError(
            "unsupported_version",
            f"protocol version {version!r} is not supported "
            f"(supported: {list(SUPPORTED_VERSIONS)})",
            cid,
        )
    unknown = set(header) - set(_HEADER_KEYS)
    if unknown:
        raise ProtocolError("bad_header", f"unknown header fields {sorted(unknown)}", cid)
    mtype = header.get("type")
    if mtype not in MESSAGE_TYPES:
        raise ProtocolError("bad_header", f"unknown message type {mtype!r}", cid)
    if mtype in CORRELATED and cid is None:
        raise ProtocolError("bad_header", f"a {mtype} message needs a string id", None)
    cmd = header.get("cmd")
    if mtype == REQUEST and not isinstance(cmd, str):
        raise ProtocolError("bad_header", "a request needs a string cmd", cid)
    body = header.get("body")
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise ProtocolError("bad_header", "body must be a map", cid)
    descriptors = header.get("payloads") or []
    if not isinstance(descriptors, list) or len(descriptors) != len(frames) - 1:
        raise ProtocolError(
            "bad_payload",
            f"header describes {len(descriptors) if isinstance(descriptors, list) else '?'} "
            f"payloads but {len(frames) - 1} payload frames arrived",
            cid,
        )
    if len(descriptors) > MAX_PAYLOAD_FRAMES:
        raise ProtocolError("too_large", f"more than {MAX_PAYLOAD_FRAMES} payload frames", cid)
    arrays = []
    total = 0
    for i, (desc, frame) in enumerate(zip(descriptors, frames[1:], strict=False)):
        arrays.append(_decode_array(i, desc, _frame_bytes(frame), cid))
        total += arrays[-1].nbytes
        if total > max_payload_bytes:
            raise ProtocolError("too_large", f"payload exceeds {max_payload_bytes} bytes", cid)
    return Message(type=mtype, id=cid, cmd=cmd, body=body, arrays=arrays, version=version)


@functools.lru_cache(maxsize=256)
def _dtype(name: str) -> np.dtype | None:
    """The numpy dtype for a payload's type string, or None when it is not a plain numeric type."""
    try:
        dtype = np.dtype(name)
    except (TypeError, ValueError):
        return None
    if dtype.kind not in _ALLOWED_DTYPE_KINDS or dtype.hasobject or dtype.names is not None:
        return None
    return dtype


def _decode_array(i: int, desc: Any, buf: memoryview, cid: str | None) -> np.ndarray:
    if not isinstance(desc, dict) or set(desc) != {"dtype", "shape"}:
        raise ProtocolError("bad_payload", f"payload {i}: descriptor must be {{dtype, shape}}", cid)
    dtype = _dtype(desc["dtype"]) if isinstance(desc["dtype"], str) else None
    if dtype is None:
        raise ProtocolError("bad_payload", f"payload {i}: dtype {desc['dtype']!r} not allowed", cid)
    shape = desc["shape"]
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        raise ProtocolError("bad_payload", f"payload {i}: bad shape {shape!r}", cid)
    expected = math.prod(shape) * dtype.itemsize
    if expected != len(buf):
        raise ProtocolError(
            "bad_payload",
            f"payload {i}: {len(buf)} bytes but dtype {dtype} shape {shape} needs {expected}",
            cid,
        )
    return np.frombuffer(buf, dtype=dtype).reshape(shape)


def error_message(code: str, text: str, correlation_id: str | None, **detail: Any) -> Message:
    """The one shape of every error reply."""
    return Message(
        type=ERROR, id=correlation_id, body={"code": code, "message": text, "detail": detail}
    )
