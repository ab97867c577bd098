"""A recorder: every run document as one JSON object per line, for replay and audit."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import IO, Any

import numpy as np

from hilbench.documents import Document


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
        self._fh: IO[str] = self.path.open("a", encoding="utf-8")

    def __call__(self, doc: Document) -> None:
        record = {"kind": doc.kind, **dataclasses.asdict(doc)}
        self._fh.write(json.dumps(record, default=_plain) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()
