"""Notifications: campaign finished / failed / aborted, agent or instrument lost, low disk.

Each event goes to every Apprise URL of the daemon's configuration (e-mail, Matrix, Slack,
ntfy, a JSON web hook, …) and, optionally, to a command that reads the event as JSON on stdin.
Sending happens on a thread of its own, so a slow or dead sink never holds up the daemon; a
failure is logged and counted, never raised.
"""

from __future__ import annotations

import json
import logging
import queue
import shlex
import socket
import subprocess
import threading
import time
from typing import Any

log = logging.getLogger(__name__)

EVENTS = (
    "campaign.finished",
    "campaign.failed",
    "campaign.aborted",
    "agent.lost",
    "instrument.lost",
    "disk.low",
)


class Notifier:
    def __init__(self, urls: list[str], command: str | None, timeout_s: float = 30.0) -> None:
        self.urls = list(urls)
        self.command = shlex.split(command) if command else None
        self.timeout_s = timeout_s
        self.sent = 0
        self.failed = 0
        self.last_error = ""
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._apprise: Any = None
        if self.urls:
            import apprise

            self._apprise = apprise.Apprise()
            for url in self.urls:
                if not self._apprise.add(url):
                    raise ValueError(f"[notify] urls: Apprise does not accept {url!r}")
        self._thread = threading.Thread(target=self._send_all, daemon=True, name="notify")
        self._thread.start()

    def __call__(self, event: str, message: str, **fields: Any) -> None:
        """Queue one event; returns at once."""
        if event not in EVENTS:
            raise ValueError(f"unknown event {event!r}")
        self._queue.put({"event": event, "message": message, "time": time.time(),
                         "host": socket.gethostname(), **fields})

    def close(self, timeout_s: float = 10.0) -> None:
        """Send what is queued (up to ``timeout_s``), then stop."""
        self._queue.put(None)
        self._thread.join(timeout_s)

    def _send_all(self) -> None:
        while (event := self._queue.get()) is not None:
            if self._apprise is not None:
                self._try("apprise", lambda e=event: self._send_apprise(e))
            if self.command is not None:
                self._try("command", lambda e=event: self._run_command(e))

    def _try(self, sink: str, send: Any) -> None:
        try:
            send()
            self.sent += 1
        except Exception as exc:  # a notification never stops the daemon
            self.failed += 1
            self.last_error = f"{sink}: {exc}"
            log.error("notification through %s failed: %s", sink, exc)

    def _send_apprise(self, event: dict[str, Any]) -> None:
        title = f"hilbench on {event['host']}: {event['event']}"
        if not self._apprise.notify(title=title, body=event["message"]):
            raise RuntimeError(f"Apprise could not deliver to every URL ({len(self.urls)})")

    def _run_command(self, event: dict[str, Any]) -> None:
        assert self.command is not None
        proc = subprocess.run(self.command, input=json.dumps(event), text=True,
                              capture_output=True, timeout=self.timeout_s, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"{shlex.join(self.command)} exited {proc.returncode}: "
                               f"{proc.stderr.strip()[-300:]}")
