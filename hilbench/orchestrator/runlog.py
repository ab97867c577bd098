"""One line per finished run (unit, status, key figures), for a person reading a log: written to
a file beside the store, and to stdout when stdout is not a terminal (an overnight ``nohup``
log, a CI job), where the live progress bar shows nothing."""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from pathlib import Path
from typing import TextIO

from hilbench.documents import DocumentRouter, Metric, RunStart, RunStop
from hilbench.private_files import open_private, private_dir
from hilbench.safe_paths import inside, safe_name

log = logging.getLogger(__name__)


def _figure(metric: Metric) -> str:
    if metric.value is None:
        return f"{metric.name}=n/m"
    text = f"{metric.name}={metric.value:.4g}"
    if metric.uncertainty is not None:
        text += f"±{metric.uncertainty:.2g}"
    return text + (f" {metric.unit}" if metric.unit else "")


class RunLog(DocumentRouter):
    """A document consumer that writes a line when each run stops."""

    def __init__(self, path: Path, echo: TextIO | None = None) -> None:
        private_dir(path.parent)
        self.path = path
        self._file: TextIO | None = open_private(path, "a")
        self._echo = echo
        self._runs: dict[str, tuple[str, list[Metric]]] = {}

    @staticmethod
    def for_campaign(logs: Path, campaign_name: str, echo: TextIO | None) -> RunLog:
        return RunLog(inside(logs, safe_name(campaign_name, empty="campaign") + ".log"), echo)

    def note(self, text: str) -> None:
        """A line of its own: the campaign starting, resuming, stopping."""
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        line = f"{stamp} {text}\n"
        if self._file is not None:
            try:
                self._file.write(line)
                self._file.flush()
            except OSError as exc:
                # A full disk stops the campaign through the store; the log must not hide that.
                log.error("run log %s could not be written (%s); its lines go on only to "
                          "stdout", self.path, exc)
                self._drop_file()
        if self._echo is not None:
            self._echo.write(line)
            self._echo.flush()

    def run_start(self, doc: RunStart) -> None:
        self._runs[doc.uid] = (doc.unit_key, [])

    def metric(self, doc: Metric) -> None:
        if doc.run_uid in self._runs:
            self._runs[doc.run_uid][1].append(doc)

    def run_stop(self, doc: RunStop) -> None:
        unit, metrics = self._runs.pop(doc.run_uid, ("?", []))
        parts = [f"run {doc.run_uid[:8]} {unit} {doc.exit_status}"]
        if metrics:
            parts.append(" ".join(_figure(m) for m in metrics))
        if doc.reason:
            parts.append(f"reason: {doc.reason}")
        self.note("; ".join(parts))

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:
                log.error("run log %s could not be written (%s)", self.path, exc)
            self._file = None

    def _drop_file(self) -> None:
        assert self._file is not None
        with contextlib.suppress(OSError):  # its buffer cannot be written either (logged)
            self._file.close()
        self._file = None
