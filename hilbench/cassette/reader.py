"""Reading a cassette back: its documents and its sample streams, each file checked against the
sha256 the recording wrote for it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hilbench.cassette.arrays import read_stream
from hilbench.cassette.manifest import read_manifest
from hilbench.cassette.recorder import DOCUMENTS, SAMPLES, SAMPLES_DIR
from hilbench.filehash import sha256_file


@dataclass
class Stream:
    """One (phase, source) stream of samples and where it lies."""

    name: str
    run_uid: str
    phase_uid: str | None
    source: str
    unit: str
    meta: dict[str, Any]
    sha256: dict[str, str] | None = None  # None: the recording stopped before it ended
    samples: int | None = None


class Cassette:
    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.manifest = read_manifest(self.folder)

    def documents(self) -> Iterator[dict[str, Any]]:
        yield from _jsonl(self.folder / DOCUMENTS)

    def streams(self) -> list[Stream]:
        found: dict[str, Stream] = {}
        for record in _jsonl(self.folder / SAMPLES):
            if record.get("kind") == "stream":
                found[record["stream"]] = Stream(
                    record["stream"], record["run_uid"], record.get("phase_uid"),
                    record["source"], record["unit"], record.get("meta") or {})
            elif record.get("kind") == "stream_end":
                stream = found[record["stream"]]
                stream.sha256, stream.samples = record["sha256"], record["samples"]
        return list(found.values())

    def check_hashes(self) -> list[str]:
        """One line per stream file whose content does not match its recorded sha256."""
        problems = []
        for stream in self.streams():
            for name, digest in (stream.sha256 or {}).items():
                path = self.folder / name
                if not path.exists():
                    problems.append(f"{path}: missing")
                elif sha256_file(path) != digest:
                    problems.append(f"{path}: sha256 differs from the one recorded")
        return problems

    def read(self, stream: Stream) -> tuple[np.ndarray, np.ndarray]:
        return read_stream(self.folder / SAMPLES_DIR, stream.name)


def read_channel(folder: str | Path, file: str, kind: str) -> list[dict[str, Any]]:
    """The lines of channel ``channels/<file>`` after its header, which must name ``kind``
    (an instrument's own channel: a driver's recorder writes it, its replayer reads it);
    OSError naming the file otherwise."""
    path = Path(folder) / "channels" / file
    try:
        lines = list(_jsonl(path)) if path.is_file() else []
    except ValueError as exc:
        raise OSError(str(exc)) from None
    if not lines or lines[0].get("channel") != kind:
        raise OSError(f"{path}: no {kind} channel header on its first line (missing or not "
                      "a cassette of this instrument)")
    return lines[1:]


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Lines of a JSON-lines file; a last line cut short by a killed recording is skipped."""
    if not path.exists():
        return
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, start=1):
            if not line.endswith("\n"):
                return  # the recording stopped mid-line
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path} line {number}: not JSON ({exc})") from None
