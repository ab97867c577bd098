"""The header frame's schema as msgspec types: one C call decodes and type-checks a header.

The agent protocol's header is a msgpack map with exactly seven keys (see
``protocols/agent-protocol.md``). Decoding it into these Structs checks, inside msgspec, what
the codec's checked decoder checks key by key in Python: no unknown or missing key, ``v`` an
integer and never a boolean or float, strings where strings are meant and not too long, and
each payload descriptor a ``{dtype, shape}`` map with integer sizes. Checking it in C matters
on the hot path: the code right after a blocking receive runs with cold caches, where every
Python step costs several times its usual time.

What the schema cannot say (the protocol name and version, the message type, which types need
an id or a cmd, payload sizes against their frames) the codec checks after decoding; a header
that fails any check is handed to the checked decoder, which says precisely what is wrong.
The body is kept as raw msgpack and decoded with the checked decoder's own msgpack settings,
so both decoders refuse the same bodies (binary, extension types, non-string map keys).

msgspec's Encoder and Decoder hold no state between calls and run entirely under the GIL
(no hooks into Python code), so one of each serves every thread.
"""

from __future__ import annotations

from typing import Annotated

import msgspec

# Limits shared with the checked decoder in ``codec``.
MAX_ID_CHARS = 128
MAX_CMD_CHARS = 64
MAX_DTYPE_CHARS = 16
MAX_PAYLOAD_FRAMES = 64
# numpy 1.x arrays have at most 32 dimensions (numpy 2: 64); the protocol allows what both take.
MAX_DIMS = 32


class PayloadDescriptor(msgspec.Struct, forbid_unknown_fields=True):
    """One payload frame's dtype (numpy's type string, e.g. ``<f4``) and shape."""

    dtype: Annotated[str, msgspec.Meta(max_length=MAX_DTYPE_CHARS)]
    shape: Annotated[list[int], msgspec.Meta(max_length=MAX_DIMS)]


class Header(msgspec.Struct, forbid_unknown_fields=True):
    """The seven keys of every header, typed; ``body`` stays raw msgpack until checked."""

    proto: str
    v: int
    type: str
    id: Annotated[str, msgspec.Meta(max_length=MAX_ID_CHARS)] | None
    cmd: Annotated[str, msgspec.Meta(max_length=MAX_CMD_CHARS)] | None
    body: msgspec.Raw
    payloads: Annotated[list[PayloadDescriptor], msgspec.Meta(max_length=MAX_PAYLOAD_FRAMES)]


HEADER_DECODER = msgspec.msgpack.Decoder(Header)
ENCODER = msgspec.msgpack.Encoder()
# msgpack for an empty map and for nil: the bodies most messages carry.
EMPTY_MAP = msgspec.Raw(b"\x80")
NIL = msgspec.Raw(b"\xc0")
