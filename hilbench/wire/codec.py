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
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import msgpack
import numpy as np

from hilbench.wire.header_schema import (
    EMPTY_MAP,
    ENCODER,
    HEADER_DECODER,
    MAX_CMD_CHARS,
    MAX_DIMS,
    MAX_DTYPE_CHARS,
    MAX_ID_CHARS,
    MAX_PAYLOAD_FRAMES,
    NIL,
)

PROTOCOL_NAME = "hilbench-agent"
# 2: typed workload contracts (protocols/agent-protocol.md, "What changed in version 2")
# 3: ASC run mode ``samples`` (protocols/agent-protocol.md, "What changed in version 3")
# 4: declared untimed work in the capabilities; noop echoes measure the link before a timed
#    phase (protocols/agent-protocol.md, "What changed in version 4")
PROTOCOL_VERSION = 4
SUPPORTED_VERSIONS = (2, 3, 4)

MAX_HEADER_BYTES = 64 * 1024
DEFAULT_MAX_PAYLOAD_BYTES = 256 * 1024 * 1024
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
_HEADER_KEY_SET = frozenset(_HEADER_KEYS)
# How msgpack reads a header in the checked decoder (and a body in the fast one): string map
# keys only, no binary or extension values anywhere.
_STRICT_MSGPACK = {"raw": False, "strict_map_key": True, "max_bin_len": 0, "max_ext_len": 0}


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


# One packer for the process: ``msgpack.packb`` builds a new Packer on every call. A Packer
# is not thread-safe, so each thread gets its own.
_packers = threading.local()


def _pack(header: dict[str, Any]) -> bytes:
    packer = getattr(_packers, "packer", None)
    if packer is None:
        packer = _packers.packer = msgpack.Packer(use_bin_type=True)
    return packer.pack(header)


def encode_header(header: dict[str, Any]) -> bytes:
    """msgpack for a header map: msgspec's encoder (one C call), msgpack's for what it refuses.

    Both write the same bytes for what both take; msgspec refuses numpy scalars and ``str``
    subclasses, which drivers put in reply bodies and msgpack packs as plain numbers and strings.
    """
    try:
        return ENCODER.encode(header)
    except Exception:  # msgpack raises its own error if it cannot pack the value either
        return _pack(header)


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
    packed = encode_header(header)
    if len(packed) > MAX_HEADER_BYTES:
        raise ProtocolError("too_large", f"header is {len(packed)} bytes, limit {MAX_HEADER_BYTES}")
    return [packed, *(a.reshape(-1).view(np.uint8) if a.size else b"" for a in arrays)]


def _frame_bytes(frame: Any) -> memoryview:
    """A read-only view of a zmq.Frame, bytes or memoryview, without copying."""
    buf = getattr(frame, "buffer", frame)
    return memoryview(buf)


def decode(frames: Sequence[Any], max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES) -> Message:
    """Parse and validate frames; raise :class:`ProtocolError` saying what is wrong.

    A well-formed message is decoded by msgspec against the header schema, its few remaining
    checks in Python (one C call instead of dozens of Python steps on the hot path). Anything
    that path does not accept, for whatever reason, goes to the checked decoder, which applies
    every rule in turn and either returns the same message or says what is wrong.
    """
    try:
        message = _decode_fast(frames, max_payload_bytes)
    except Exception:  # garbage of any shape: the checked decoder names what is wrong with it
        message = None
    if message is None:
        return _decode_checked(frames, max_payload_bytes)
    return message


# complexity: the hot path's one pass over a header: a call per check costs more than the check
# (hilbench bench dispatch)
def _decode_fast(frames: Sequence[Any], max_payload_bytes: int) -> Message | None:  # noqa: C901
    """The message, if every rule holds for it; None (or an exception) if any might not."""
    head = frames[0]
    if len(head) > MAX_HEADER_BYTES:
        return None
    header = HEADER_DECODER.decode(head)
    mtype = header.type
    cid = header.id
    cmd = header.cmd
    if header.proto != PROTOCOL_NAME or header.v not in SUPPORTED_VERSIONS:
        return None
    if mtype not in MESSAGE_TYPES or (cid is None and mtype in CORRELATED):
        return None
    if (cmd is None) if mtype == REQUEST else (cmd is not None):
        return None
    raw_body = header.body
    if raw_body in (EMPTY_MAP, NIL):
        body: Any = {}
    else:
        body = msgpack.unpackb(raw_body, **_STRICT_MSGPACK)
        if type(body) is not dict:
            return None
    descriptors = header.payloads
    count = len(descriptors)
    if count != len(frames) - 1:
        return None
    arrays = []
    total = 0
    for i in range(count):
        desc = descriptors[i]
        dtype = _dtype(desc.dtype)
        shape = desc.shape
        # Empty arrays and negative sizes are the checked decoder's (an empty array's shape
        # needs the bound on its non-zero sizes); two negative sizes make a positive product.
        elements = math.prod(shape)
        if dtype is None or elements <= 0 or min(shape, default=1) < 1:
            return None
        nbytes = elements * dtype.itemsize
        buf = _frame_bytes(frames[i + 1])
        total += nbytes
        if nbytes != len(buf) or total > max_payload_bytes:
            return None
        arrays.append(np.frombuffer(buf, dtype=dtype).reshape(shape))
    return Message(type=mtype, id=cid, cmd=cmd, body=body, arrays=arrays, version=header.v)


# complexity: every header rule in turn, in the order agent-protocol.md lists them, so the error
# names the first rule a message breaks
def _decode_checked(  # noqa: C901
    frames: Sequence[Any], max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES
) -> Message:
    """Every rule in turn; the :class:`ProtocolError` names the first one a message breaks.

    Every field is type-checked before it is used (``type(x) is int`` refuses a bool where an
    int is meant), so no input reaches numpy or a set lookup in a shape that raises anything
    but :class:`ProtocolError`.
    """
    if not frames:
        raise ProtocolError("bad_frame", "empty message")
    head = _frame_bytes(frames[0])
    if len(head) > MAX_HEADER_BYTES:
        raise ProtocolError("too_large", f"header is {len(head)} bytes, limit {MAX_HEADER_BYTES}")
    if not len(head):
        raise ProtocolError("bad_frame", "the header frame is empty")
    try:
        header = msgpack.unpackb(head, **_STRICT_MSGPACK)
    except Exception as exc:  # msgpack raises several unrelated types on garbage
        raise ProtocolError("bad_frame", f"header is not valid msgpack: {exc}") from None
    if type(header) is not dict:
        raise ProtocolError("bad_header", "header must be a map")
    raw_id = header.get("id")
    cid = raw_id if type(raw_id) is str and len(raw_id) <= MAX_ID_CHARS else None
    if header.get("proto") != PROTOCOL_NAME:
        raise ProtocolError("bad_header", f"not a {PROTOCOL_NAME} message", cid)
    version = header.get("v")
    if type(version) is not int:
        raise ProtocolError("bad_header", f"v must be an integer, not {_kind(version)}", cid)
    if version not in SUPPORTED_VERSIONS:
        raise ProtocolError(
            "unsupported_version",
            f"protocol version {version} is not supported (supported: {list(SUPPORTED_VERSIONS)})",
            cid,
        )
    if len(header) != len(_HEADER_KEYS) or not _HEADER_KEY_SET.issuperset(header):
        unknown = sorted(k for k in header if k not in _HEADER_KEY_SET)
        missing = [k for k in _HEADER_KEYS if k not in header]
        raise ProtocolError(
            "bad_header",
            "header fields must be exactly "
            + ", ".join(_HEADER_KEYS)
            + (f"; unknown {unknown}" if unknown else "")
            + (f"; missing {missing}" if missing else ""),
            cid,
        )
    mtype = header["type"]
    if type(mtype) is not str or mtype not in MESSAGE_TYPES:
        raise ProtocolError("bad_header", f"unknown message type {_short(mtype)}", cid)
    if raw_id is not None and cid is None:
        raise ProtocolError(
            "bad_header", f"id must be a string of at most {MAX_ID_CHARS} characters or nil"
        )
    if mtype in CORRELATED and cid is None:
        raise ProtocolError("bad_header", f"a {mtype} message needs a string id", None)
    cmd = header["cmd"]
    if mtype == REQUEST:
        if type(cmd) is not str or len(cmd) > MAX_CMD_CHARS:
            raise ProtocolError(
                "bad_header",
                f"a request needs a string cmd of at most {MAX_CMD_CHARS} characters",
                cid,
            )
    elif cmd is not None:
        raise ProtocolError("bad_header", f"cmd must be nil in a {mtype} message", cid)
    body = header["body"]
    if body is None:
        body = {}
    elif type(body) is not dict:
        raise ProtocolError("bad_header", "body must be a map or nil", cid)
    descriptors = header["payloads"]
    if type(descriptors) is not list:
        raise ProtocolError("bad_payload", "payloads must be an array", cid)
    if len(descriptors) > MAX_PAYLOAD_FRAMES or len(frames) - 1 > MAX_PAYLOAD_FRAMES:
        raise ProtocolError("too_large", f"more than {MAX_PAYLOAD_FRAMES} payload frames", cid)
    if len(descriptors) != len(frames) - 1:
        raise ProtocolError(
            "bad_payload",
            f"header describes {len(descriptors)} payloads but {len(frames) - 1} payload "
            "frames arrived",
            cid,
        )
    if not descriptors:
        return Message(type=mtype, id=cid, cmd=cmd, body=body, version=version)
    # One pass: check each descriptor against its frame, then view the frame (no copy).
    arrays = []
    total = 0
    for i, desc in enumerate(descriptors):
        dtype, shape, nbytes = _check_descriptor(i, desc, max_payload_bytes, cid)
        buf = _frame_bytes(frames[i + 1])
        if nbytes != len(buf):
            raise ProtocolError(
                "bad_payload",
                f"payload {i}: {len(buf)} bytes but dtype {dtype} shape {shape} needs {nbytes}",
                cid,
            )
        total += nbytes
        if total > max_payload_bytes:
            raise ProtocolError("too_large", f"payload exceeds {max_payload_bytes} bytes", cid)
        arrays.append(np.frombuffer(buf, dtype=dtype).reshape(shape))
    return Message(type=mtype, id=cid, cmd=cmd, body=body, arrays=arrays, version=version)


def _kind(value: Any) -> str:
    """The msgpack-level kind of a value, for error messages that do not echo the input."""
    return {
        bool: "a boolean",
        float: "a float",
        str: "a string",
        list: "an array",
        dict: "a map",
        type(None): "nil",
        bytes: "binary",
    }.get(type(value), "an integer")


def _short(value: Any) -> str:
    """``value`` for an error message: strings cut short, containers named by kind."""
    if type(value) is str:
        return repr(value[:40])
    return _kind(value)


@functools.lru_cache(maxsize=256)
def _dtype(name: str) -> np.dtype | None:
    """The numpy dtype for a payload's type string, or None when it is not a plain numeric type."""
    try:
        dtype = np.dtype(name)
    except Exception:  # numpy raises TypeError, ValueError and others on odd strings
        return None
    if dtype.kind not in _ALLOWED_DTYPE_KINDS or dtype.hasobject or dtype.names is not None:
        return None
    if dtype.subdtype is not None or dtype.itemsize == 0:
        return None
    return dtype


def _check_descriptor(
    i: int, desc: Any, max_payload_bytes: int, cid: str | None
) -> tuple[np.dtype, list[int], int]:
    """(dtype, shape, byte count) of one payload descriptor, every part checked."""
    if type(desc) is not dict or len(desc) != 2 or "dtype" not in desc or "shape" not in desc:
        raise ProtocolError("bad_payload", f"payload {i}: descriptor must be {{dtype, shape}}", cid)
    name = desc["dtype"]
    dtype = _dtype(name) if type(name) is str and len(name) <= MAX_DTYPE_CHARS else None
    if dtype is None:
        raise ProtocolError("bad_payload", f"payload {i}: dtype {_short(name)} not allowed", cid)
    shape = desc["shape"]
    if type(shape) is not list or len(shape) > MAX_DIMS:
        raise ProtocolError(
            "bad_payload", f"payload {i}: shape must be an array of at most {MAX_DIMS} sizes", cid
        )
    limit = max_payload_bytes // dtype.itemsize  # elements that fit in the payload limit
    extent = 1  # product of the non-zero sizes: bounded even for an empty array
    count = 1
    for d in shape:
        if type(d) is not int or d < 0:
            raise ProtocolError(
                "bad_payload", f"payload {i}: sizes in a shape are integers >= 0", cid
            )
        extent *= max(d, 1)
        count *= d
        if extent > limit:
            raise ProtocolError(
                "too_large", f"payload {i}: shape exceeds the {max_payload_bytes}-byte limit", cid
            )
    return dtype, shape, count * dtype.itemsize


def error_message(code: str, text: str, correlation_id: str | None, **detail: Any) -> Message:
    """The one shape of every error reply."""
    return Message(
        type=ERROR, id=correlation_id, body={"code": code, "message": text, "detail": detail}
    )
