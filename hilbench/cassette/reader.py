"""Reading a cassette back: its documents and its sample streams, each file checked against the
sha256 the recording wrote for it.

A cassette comes from elsewhere (an auditor's bundle, a colleague's recording), so every read
stays inside its folder (:mod:`hilbench.confined_read`: relative names, no symlink, regular
files, never past a file's size) and every line is bounded before it is parsed
(:mod:`hilbench.bounded_parse`). What a reader relies on in a line (a stream's name and
hashes, a document's run) is checked for type here; a bad one is a ValueError naming the file
and line."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hilbench.bounded_parse import (
    MAX_JSON_BYTES,
    InputError,
    as_object,
    json_lines,
    json_object,
)
from hilbench.cassette.arrays import HEX64, SUFFIXES, read_stream
from hilbench.cassette.channels import CHANNELS
from hilbench.cassette.manifest import read_manifest
from hilbench.cassette.recorder import DOCUMENTS, SAMPLES, SAMPLES_DIR
from hilbench.confined_read import ConfinedError, ConfinedFolder, confined

# A stream's files are samples/NAME.values etc.: NAME is one plain file name, as the recorder
# makes it.
_STREAM_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,200}\Z")
_NUMBER = (int, float, type(None))
# What readers take from each kind of document, and its type (None: may be absent).
DOCUMENT_KEYS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "run_start": {"uid": str, "unit_key": str},
    "run": {"uid": str},
    "phase_start": {"uid": str, "run_uid": str, "name": str},
    "phase": {"uid": str, "run_uid": str, "name": str},
    "event": {"run_uid": str, "name": str},
    "metric": {"run_uid": str, "name": str, "value": _NUMBER, "uncertainty": _NUMBER,
               "meta": (dict, type(None))},
    "run_stop": {"run_uid": str, "exit_status": str},
}


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
    def __init__(self, folder: str | Path | ConfinedFolder) -> None:
        self.files = confined(folder)
        self.folder = self.files.path
        self.manifest = read_manifest(self.files)

    def documents(self) -> Iterator[dict[str, Any]]:
        """Every document, each checked for the keys readers route it by."""
        for number, doc in jsonl(self.files, DOCUMENTS):
            kind = doc.get("kind")
            wanted = DOCUMENT_KEYS.get(kind, {}) if isinstance(kind, str) else {}
            for key, kind_type in wanted.items():
                if not isinstance(doc.get(key), kind_type):
                    found = f"whose {key} is {doc[key]!r:.60}" if key in doc else f"without {key}"
                    raise InputError(f"{self.files.label(DOCUMENTS)} line {number}: a {kind} "
                                     f"document {found}")
            yield doc

    def streams(self) -> list[Stream]:
        found: dict[str, Stream] = {}
        for number, record in jsonl(self.files, SAMPLES):
            where = f"{self.files.label(SAMPLES)} line {number}"
            if record.get("kind") == "stream":
                name = _field(record, "stream", str, where)
                if not _STREAM_NAME.match(name):
                    raise InputError(f"{where}: stream name {name!r:.80} is not a plain file "
                                     f"name in {SAMPLES_DIR}/")
                meta = record.get("meta") or {}
                if not isinstance(meta, dict):
                    raise InputError(f"{where}: meta of stream {name} is not an object")
                phase = record.get("phase_uid")
                found[name] = Stream(
                    name, _field(record, "run_uid", str, where),
                    phase if isinstance(phase, str) else None,
                    _field(record, "source", str, where), _field(record, "unit", str, where),
                    meta)
            elif record.get("kind") == "stream_end":
                name = record.get("stream")
                stream = found.get(name) if isinstance(name, str) else None
                if stream is None:
                    raise InputError(f"{where}: the end of stream {record.get('stream')!r:.80}, "
                                     "which no line started")
                hashes = _field(record, "sha256", dict, where)
                own = {f"{SAMPLES_DIR}/{stream.name}.{suffix}" for suffix in SUFFIXES}
                for file, digest in hashes.items():
                    if file not in own or not isinstance(digest, str) \
                            or not HEX64.match(digest):
                        raise InputError(f"{where}: stream {stream.name} lists {file!r:.80}: "
                                         f"{digest!r:.80} (its files are {sorted(own)}, each "
                                         "with a sha256)")
                samples = _field(record, "samples", int, where)
                if samples < 0:
                    raise InputError(f"{where}: stream {stream.name} holds {samples} samples")
                stream.sha256, stream.samples = hashes, samples
        return list(found.values())

    def check_hashes(self) -> list[str]:
        """One line per stream file whose content does not match its recorded sha256."""
        problems = []
        for stream in self.streams():
            for name, digest in (stream.sha256 or {}).items():
                label = self.files.label(name)
                try:
                    if self.files.sha256(name) != digest:
                        problems.append(f"{label}: sha256 differs from the one recorded")
                except ConfinedError as exc:  # missing, a symlink, not a regular file...
                    problems.append(str(exc))
        return problems

    def read(self, stream: Stream) -> tuple[np.ndarray, np.ndarray]:
        return read_stream(self.files.sub(SAMPLES_DIR), stream.name, stream.samples)


def read_channel(folder: str | Path | ConfinedFolder, file: str,
                 kind: str) -> list[dict[str, Any]]:
    """The lines of channel ``channels/<file>`` after its header, which must name ``kind``
    (an instrument's own channel: a driver's recorder writes it, its replayer reads it), read
    inside the cassette like every other file of it; OSError naming the file otherwise."""
    files = confined(folder)
    name = f"{CHANNELS}/{file}"
    try:
        lines = [line for _, line in jsonl(files, name)]
    except ValueError as exc:
        raise OSError(str(exc)) from None
    if not lines or lines[0].get("channel") != kind:
        raise OSError(f"{files.label(name)}: no {kind} channel header on its first line "
                      "(missing or not a cassette of this instrument)")
    return lines[1:]


def _field(record: dict[str, Any], key: str, kind: type, where: str) -> Any:
    value = record.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InputError(f"{where}: {key} is {value!r:.80}, not {kind.__name__}")
    return value


def jsonl(folder: str | Path | ConfinedFolder, name: str
          ) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of a JSON-lines file of ``folder`` (none when it is absent);
    a last line cut short by a killed recording is skipped."""
    files = confined(folder)
    if not files.exists(name):
        return
    where = files.label(name)
    with files.open(name) as f:
        for number, value in json_lines(f.lines(MAX_JSON_BYTES), where):
            yield number, as_object(value, f"{where} line {number}")


def channel_files(folder: str | Path | ConfinedFolder) -> list[str]:
    """The JSON-lines channels of a cassette (``channels/*.jsonl``), sorted (none without
    ``channels/``); anything there
    that is not a regular file is a ConfinedError naming it (never followed)."""
    files = confined(folder)
    if not files.exists(CHANNELS):
        return []
    found = []
    for name, kind, _ in files.walk(CHANNELS):
        if kind not in ("file", "folder"):
            raise ConfinedError(f"{files.label(name)}: {kind}, not a regular file")
        if kind == "file" and name.count("/") == 1 and name.endswith(".jsonl"):
            found.append(name)
    return sorted(found)


def read_json_object(folder: str | Path | ConfinedFolder, name: str) -> dict[str, Any]:
    """A whole JSON file of ``folder`` that holds one object (bounded, confined)."""
    files = confined(folder)
    return json_object(files.read(name, max_bytes=MAX_JSON_BYTES), files.label(name))
