"""A ZeroMQ socket that sends and receives whole protocol messages with little Python per frame.

Every message of the agent protocol is a few frames (routing identity, header, payloads). pyzmq's
``send_multipart`` checks each frame's buffer in Python before sending it and
``recv_multipart(copy=False)`` builds a Frame object per part and asks for more through the
socket-option wrapper; on a round trip that is about 30 µs of the protocol's cost, more than
ZeroMQ's own work for the extra frames. The code that runs right after a blocking receive runs
with cold caches, so each Python step costs several times its hot-loop time: fewer steps is
what makes the hot path lean. Use ``context.socket(kind, socket_class=MessageSocket)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import zmq

_SNDMORE = int(zmq.SNDMORE)
_RCVMORE = int(zmq.RCVMORE)


class MessageSocket(zmq.Socket):
    """A pyzmq socket with ``send_message`` / ``recv_message`` for one multipart message."""

    # The receive timeout in force (ms, -1: wait for ever). A class attribute, so that pyzmq's
    # attribute setter takes it for a plain attribute and not for a socket option.
    receive_timeout_ms: int = -1

    def limit_receive_wait(self, ms: int) -> None:
        """Let a blocking receive wait at most ``ms`` (>= 1).

        The option is set only when the one in force would oversleep or wake needlessly often:
        setting it costs as much as decoding a header, and a hot path would set it per message.
        """
        if self.receive_timeout_ms > ms or self.receive_timeout_ms * 2 < ms:
            self.rcvtimeo = ms
            self.receive_timeout_ms = ms

    def send_message(self, parts: Sequence[Any], flags: int = 0) -> None:
        """Send ``parts`` (bytes, buffers, numpy arrays or received Frames) as one message.

        Buffers below the socket's ``copy_threshold`` are copied into ZeroMQ (cheaper than
        tracking a zero-copy send); a caller that needs zero-copy tracking of a large payload
        uses ``send_multipart(..., copy=False, track=True)``.
        """
        last = len(parts) - 1
        more = flags | _SNDMORE
        send = self.send
        for i in range(last):
            send(parts[i], more, copy=False)
        send(parts[last], flags, copy=False)

    def recv_message(self, flags: int = 0, leading_bytes: int = 1) -> list[Any]:
        """Receive one message: the first ``leading_bytes`` frames as bytes, the rest as Frames.

        Routing identities are a few bytes, so copying them is cheaper than a Frame object;
        headers and payloads stay in ZeroMQ's buffers (no copy of a large frame). Frames past
        the first are received without waiting: ZeroMQ delivers a message's parts together.
        """
        recv = self.recv
        first = recv(flags, copy=leading_bytes > 0)
        parts = [first]
        get = self.get
        i = 1
        while get(_RCVMORE):
            parts.append(recv(0, copy=i < leading_bytes))
            i += 1
        return parts
