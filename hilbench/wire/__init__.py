"""Wire protocol between orchestrator and agents: codec, message types, limits."""

from hilbench.wire.codec import (
    PROTOCOL_VERSION,
    Message,
    ProtocolError,
    decode,
    encode,
    error_message,
    new_correlation_id,
)

__all__ = [
    "PROTOCOL_VERSION",
    "Message",
    "ProtocolError",
    "decode",
    "encode",
    "error_message",
    "new_correlation_id",
]
