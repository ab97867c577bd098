"""The daemon's side of a worker process: starting one, and reading its typed reports.

The worker (:mod:`hilbench.daemon.worker`) writes one message per line
(:mod:`hilbench.daemon.messages`); a thread here decodes each as it comes and applies it to the
item's progress at once, under the daemon's lock. So `hilbench status` is as current as the
worker's last line, whatever the daemon's loop is waiting on (before, the loop took reports
from a queue in its own turn, after its queue-database calls).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

from hilbench.daemon.messages import (
    CampaignStarted,
    Ended,
    Health,
    Pause,
    Report,
    ReportReader,
    RunItem,
    UnitEnded,
    UnitStarted,
    encode,
    health_dict,
)
from hilbench.daemon.progress import CampaignProgress
from hilbench.daemon.queue_db import Item
from hilbench.lifeline import start_child
from hilbench.orchestrator.session import SessionOutcome


def start_worker(db: Path, log_file: IO[str], queue_url: str | None) -> subprocess.Popen:
    """A worker process without its item yet (see :mod:`hilbench.daemon.worker`): started
    ahead while the bench is idle, it is given an item by a ``RunItem`` command on stdin."""
    cmd = [sys.executable, "-m", "hilbench.daemon.worker", "--db", str(db),
           *(["--queue", queue_url] if queue_url else [])]
    return start_child(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                       stderr=log_file, text=True)


class WorkerProcess:
    """A running worker process and what its reports say (``progress``, ``end``), kept under
    ``lock`` (the daemon's status lock); ``ended`` is called when its output closes (it
    exited), so the loop takes its end at once, not at the next poll."""

    def __init__(self, item: Item, proc: subprocess.Popen, ended: Any = None,
                 lock: threading.Lock | None = None) -> None:
        self.item = item
        self.progress = CampaignProgress(item.id, item.name)
        self.pause_sent = False
        self.term_sent = False
        self.end: SessionOutcome | None = None
        self.lock = lock or threading.Lock()
        self.proc = proc
        self.decoder = ReportReader(proc.pid)  # counts the lines that are not reports
        self._ended = ended
        self._reader = threading.Thread(target=self._read, daemon=True, name="worker-reports")
        self._reader.start()
        self.command(RunItem(id=item.id))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            report = self.decoder.decode(line)
            if report is not None:
                with self.lock:
                    self._take(report)
        if self._ended is not None:
            self._ended()

    def _take(self, report: Report) -> None:
        if isinstance(report, CampaignStarted):
            self.progress.on_campaign(report)
        elif isinstance(report, UnitStarted):
            self.progress.on_unit_start(report)
        elif isinstance(report, UnitEnded):
            self.progress.on_unit(report)
        elif isinstance(report, Health):
            self.progress.health = health_dict(report)
        elif isinstance(report, Ended):
            self.end = report.session

    def command(self, message: RunItem | Pause) -> None:
        with contextlib.suppress(BrokenPipeError, OSError, ValueError):
            assert self.proc.stdin is not None
            self.proc.stdin.write(encode(message) + "\n")
            self.proc.stdin.flush()

    def finished(self) -> int | None:
        code = self.proc.poll()
        if code is not None:
            self._reader.join(5)  # every report the worker wrote is read before its exit counts
        return code
