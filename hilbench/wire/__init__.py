"""Wire protocol between orchestrator and agents: codec, message types, limits.

The codec (and numpy with it) loads on first use: commands that only read the store or the
queue (`results`, `status`, `queue list`) never need it (tests/test_startup_imports.py)."""

from __future__ import annotations

from typing import Any

__all__ = [
    "PROTOCOL_VERSION",
    "Message",
    "ProtocolError",
    "decode",
    "encode",
    "error_message",
    "new_correlation_id",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from hilbench.wire import codec

        return getattr(codec, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
