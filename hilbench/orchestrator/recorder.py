"""A recorder: every run document as one JSON object per line, for replay and audit."""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import IO, Any

import numpy as np

from hilbench.documents import Document
from hilbench.private_files import open_private

log = logging.getLogger(__name__)


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"cannot record {type(value).__name__}")


class JsonlRecorder:
    """Appends documents to a JSON-lines file, flushed per document so a crash loses nothing."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fh: IO[str] = open_private(self.path, "a")

    def __call__(self, doc: Document) -> None:
        record = {"kind": doc.kind, **dataclasses.asdict(doc)}
        self._fh.write(json.dumps(record, default=_plain) + "\n")
        self._fh.flush()

    def close(self) -> None:
        """Close; a write that fails now (disk full) is logged: the campaign reported it."""
        try:
            self._fh.close()
        except OSError as exc:
            log.error("record %s could not be written: %s", self.path, exc)
