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
from zmq.backend import Socket as _BackendSocket

# The compiled send: pyzmq's Python ``Socket.send`` only adds DRAFT routing/group handling
# around it, one more Python call per frame.
_send_frame = _BackendSocket.send
# Plain ints: pyzmq's flags are enum members, and ``Flag | Flag`` builds a new enum object in
# Python code on every call.
NOBLOCK = int(zmq.NOBLOCK)
_SNDMORE = int(zmq.SNDMORE)
# How late a blocking receive may wake compared with the wait asked for: the timeout option is
# reset only when the one in force would oversleep by more than this (setting it goes through
# pyzmq's attribute setter, as costly as decoding a header).
RECEIVE_WAIT_SLACK_MS = 20


class MessageSocket(zmq.Socket):
    """A pyzmq socket with ``send_message`` / ``recv_message`` for one multipart message."""

    # The receive timeout in force (ms, -1: wait for ever). A class attribute, so that pyzmq's
    # attribute setter takes it for a plain attribute and not for a socket option.
    receive_timeout_ms: int = -1

    def limit_receive_wait(self, ms: int) -> None:
        """Let a blocking receive wait about ``ms`` (>= 1), at most RECEIVE_WAIT_SLACK_MS longer.

        The option is set only when the one in force would oversleep by more than the slack or
        wake needlessly often: a caller whose deadline draws nearer with every message would
        otherwise set it per message.
        """
        current = self.receive_timeout_ms
        if current > ms + RECEIVE_WAIT_SLACK_MS or current * 2 < ms or current < 0:
            self.set(zmq.RCVTIMEO, ms)
            self.receive_timeout_ms = ms

    def send_message(self, parts: Sequence[Any], flags: int = 0) -> None:
        """Send ``parts`` (bytes, buffers, numpy arrays or received Frames) as one message.

        Buffers below the socket's ``copy_threshold`` are copied into ZeroMQ (cheaper than
        tracking a zero-copy send), larger ones and received Frames are passed on without a
        copy; a caller that needs to know when ZeroMQ is done with a large buffer uses
        ``send_multipart(..., copy=False, track=True)``.
        """
        last = len(parts) - 1
        more = flags | _SNDMORE
        for i in range(last):
            _send_frame(self, parts[i], more, False)  # copy=False: the threshold decides
        _send_frame(self, parts[last], flags, False)

    def recv_message(self, flags: int = 0, routed: bool = False) -> list[Any]:
        """Receive one message; with ``routed`` (a ROUTER) the routing identity first, as bytes.

        The other parts are Frames: headers and payloads stay in ZeroMQ's buffers (no copy of a
        large frame), and each Frame knows whether more parts follow (asking the socket would
        build an option enum per call). An identity is a few bytes, cheaper copied than wrapped,
        and always has the message after it. Parts after the first come without waiting:
        ZeroMQ delivers a message's parts together.
        """
        recv = self.recv
        if routed:
            parts = [recv(flags)]
            frame = recv(0, copy=False)
        else:
            parts = []
            frame = recv(flags, copy=False)
        parts.append(frame)
        while frame.more:
            frame = recv(0, copy=False)
            parts.append(frame)
        return parts
