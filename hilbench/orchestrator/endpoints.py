"""ZeroMQ endpoints as written in campaign files: checked before anything starts, so a missing
``tcp://`` is a clear error naming the key rather than a ZeroMQ traceback mid-campaign."""

from __future__ import annotations

import re

_TCP = re.compile(r"^tcp://(?P<host>\[[0-9A-Fa-f:.]+\]|[^:/\s\[\]]+):(?P<port>\*|\d+)$")


def check_endpoint(value: str, *, bind: bool) -> str | None:
    """What is wrong with ``value`` as an endpoint to connect to (``bind=False``) or to bind,
    or None. Accepted: ``tcp://host:port`` (bind also ``tcp://*:port`` and port ``*``) and
    ``ipc://path``."""
    example = '"tcp://0.0.0.0:5600" or "tcp://127.0.0.1:*"' if bind else '"tcp://host:5555"'
    if value.startswith("ipc://") and len(value) > len("ipc://"):
        return None
    if "://" not in value:
        return f"{value!r} is not an endpoint: it needs a transport, e.g. {example}"
    if not value.startswith("tcp://"):
        return f"{value!r}: only tcp:// and ipc:// endpoints are supported, e.g. {example}"
    match = _TCP.match(value)
    if match is None:
        return f"{value!r} is not host:port after tcp://, e.g. {example}"
    host, port = match["host"], match["port"]
    if not bind and (host == "*" or port == "*"):
        return f"{value!r}: '*' only makes sense for binding; give the agent's host and port"
    if port != "*" and not 1 <= int(port) <= 65535:
        return f"{value!r}: port {port} is outside 1…65535"
    return None
