"""A raw TCP peer that speaks just enough ZMTP 3.0 to make an agent's ZeroMQ hold bytes.

Hostile patterns that pyzmq cannot produce: a frame announced large and sent in part (ZeroMQ
holds what came until the rest arrives), or a connection that never says anything.
"""

from __future__ import annotations

import socket
import struct


def greeting() -> bytes:
    """ZMTP 3.0 greeting for the NULL mechanism, as a client."""
    return b"\xff" + b"\x00" * 8 + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\x00") + b"\x00" * 32


def ready(socket_type: bytes = b"DEALER") -> bytes:
    body = b"\x05READY" + b"\x0bSocket-Type" + struct.pack(">I", len(socket_type)) + socket_type
    return b"\x04" + bytes([len(body)]) + body


def frame_header(size: int, more: bool = False) -> bytes:
    """A long-frame header (flags, 8-byte size) for a message frame of ``size`` bytes."""
    return bytes([0x02 | (0x01 if more else 0)]) + struct.pack(">Q", size)


def connect(host: str, port: int, handshake: bool = True) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=10)
    if handshake:
        sock.sendall(greeting())
        got = b""
        while len(got) < 64:  # the agent's greeting
            chunk = sock.recv(64 - len(got))
            if not chunk:
                raise ConnectionError("agent closed during the greeting")
            got += chunk
        sock.sendall(ready())
    return sock


def half_send(sock: socket.socket, announced: int, sent: int, chunk: int = 1 << 20) -> int:
    """Announce one frame of ``announced`` bytes and send ``sent`` of them; bytes that went."""
    sock.sendall(frame_header(announced))
    zeros = memoryview(bytes(chunk))  # a slice of a view copies nothing under the GIL
    done = 0
    try:
        while done < sent:
            n = min(chunk, sent - done)
            sock.sendall(zeros[:n])
            done += n
    except OSError:  # the agent dropped the connection: what the budget asks for
        pass
    return done


def address(endpoint: str) -> tuple[str, int]:
    host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
    return host.strip("[]"), int(port)
