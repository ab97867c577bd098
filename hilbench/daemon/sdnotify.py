"""sd_notify: tell systemd READY, WATCHDOG and STATUS through ``$NOTIFY_SOCKET``.

The protocol is one datagram of ``KEY=VALUE`` lines on a unix socket (an ``@`` prefix means the
abstract namespace); without ``NOTIFY_SOCKET`` (not started by systemd) every call does nothing.
"""

from __future__ import annotations

import logging
import os
import socket

log = logging.getLogger(__name__)


class SystemdNotifier:
    def __init__(self, address: str | None = None) -> None:
        self.address = address if address is not None else os.environ.get("NOTIFY_SOCKET", "")
        self._sock: socket.socket | None = None
        if self.address:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        usec = os.environ.get("WATCHDOG_USEC")
        pid = os.environ.get("WATCHDOG_PID")
        ours = pid is None or pid == str(os.getpid())
        # Ping at half the interval systemd waits, as sd_watchdog_enabled(3) advises.
        self.watchdog_s = int(usec) / 2e6 if usec and usec.isdigit() and ours else None

    def notify(self, **fields: str) -> None:
        if self._sock is None:
            return
        target = "\0" + self.address[1:] if self.address.startswith("@") else self.address
        message = "\n".join(f"{k}={v}" for k, v in fields.items()).encode()
        try:
            self._sock.sendto(message, target)
        except OSError as exc:  # systemd gone or socket unreadable: the daemon goes on
            log.warning("sd_notify to %s failed: %s", self.address, exc)

    def ready(self, status: str) -> None:
        self.notify(READY="1", STATUS=status, MAINPID=str(os.getpid()))

    def status(self, status: str) -> None:
        self.notify(STATUS=status)

    def watchdog(self) -> None:
        self.notify(WATCHDOG="1")

    def stopping(self, status: str) -> None:
        self.notify(STOPPING="1", STATUS=status)
