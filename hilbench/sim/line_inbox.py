"""One connection's incoming SCPI lines, and whether any of them is still unread.

A simulated meter computes a live device's readings from what the device has told it. The
device's lines arrive on one connection and a driver's ``R?`` on another, each served by its
own thread, so on a loaded host the ``R?`` could be served while the device's ``SIM:HOLD``
already sat on its socket: readings were then computed past the moment the device was held at,
from a timeline that did not know its sample yet (a block of a single-stream window read idle
where the device ran, and the window was refused "off the line through the others").

:class:`LineInbox` reads the socket itself instead of through a buffered file, so it can say
whether anything sent on the connection is still unread (:meth:`LineInbox.pending`): bytes on
the socket, a line buffered, or a line being acted on. A device writes its line before it
stamps what follows it (:meth:`hilbench.sim.device_link.SimulatedDeviceLink.begin`), and on
loopback TCP a line is on the receiving socket once its write returns, so a meter that finds
nothing pending knows every line written before that moment.
"""

from __future__ import annotations

import select
import socket
import threading
from collections.abc import Callable

POLL_S = 0.5  # how often a reader waiting for a line checks whether the server is stopping


class LineInbox:
    """Newline-terminated lines from ``sock``, read by one thread, watched by others."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._lock = threading.Lock()
        self._buffer = bytearray()
        self._acting = False  # a line has been taken and is not yet acted on

    def next_line(self, stopping: Callable[[], bool]) -> bytes | None:
        """The next line (with its newline), marked as being acted on until :meth:`done`;
        None once the peer has closed, the socket fails or ``stopping()`` says so."""
        while True:
            with self._lock:
                end = self._buffer.find(b"\n")
                if end >= 0:
                    line = bytes(self._buffer[:end + 1])
                    del self._buffer[:end + 1]
                    self._acting = True
                    return line
            if stopping():
                return None
            try:
                readable, _, _ = select.select([self.sock], [], [], POLL_S)
            except (OSError, ValueError):
                return None
            if not readable:
                continue
            with self._lock:  # received and buffered in one step: never unread and unseen
                try:
                    chunk = self.sock.recv(65536)
                except OSError:
                    return None
                if not chunk:
                    return None
                self._buffer += chunk

    def done(self) -> None:
        """The line :meth:`next_line` returned has been acted on."""
        with self._lock:
            self._acting = False

    def pending(self) -> bool:
        """Whether anything sent on the connection so far is not yet acted on."""
        with self._lock:
            if self._acting or self._buffer:
                return True
            try:
                readable, _, _ = select.select([self.sock], [], [], 0)
            except (OSError, ValueError):
                return False  # closed: nothing more will come
            return bool(readable)
