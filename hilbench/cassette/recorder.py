"""`hilbench run --record DIR`: the run documents written into a cassette folder as they pass."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from hilbench.cassette.arrays import StreamWriter
from hilbench.cassette.manifest import base_manifest, write_manifest
from hilbench.documents import Document, PhaseStart, RunStart, Samples
from hilbench.orchestrator.recorder import JsonlRecorder
from hilbench.private_files import open_private, private_dir

log = logging.getLogger(__name__)
DOCUMENTS = "documents.jsonl"
SAMPLES = "samples.jsonl"
SAMPLES_DIR = "samples"


class CassetteRecorder:
    """A document consumer writing a cassette folder (layout: :mod:`hilbench.cassette`).

    Power samples go to raw array files, one stream per (phase, source), closed and hashed when
    their phase stops; everything else to ``documents.jsonl``. Each write is flushed."""

    def __init__(self, folder: str | Path, campaign_file: Path | None = None,
                 campaign: Any = None) -> None:
        self.folder = Path(folder)
        if self.folder.exists() and any(self.folder.iterdir()):
            raise FileExistsError(f"{self.folder} exists and is not empty: a cassette is "
                                  "written into a new or empty folder")
        private_dir(self.folder)
        private_dir(self.folder / SAMPLES_DIR)
        self.manifest = base_manifest(campaign_file, campaign)
        write_manifest(self.folder, self.manifest)
        self._documents = JsonlRecorder(self.folder / DOCUMENTS)
        self._samples = open_private(self.folder / SAMPLES, "a")
        self._streams: dict[tuple[str | None, str], StreamWriter] = {}
        self._count = 0

    def __call__(self, doc: Document) -> None:
        if isinstance(doc, Samples):
            self.samples(doc)
            return
        self._documents(doc)
        if isinstance(doc, RunStart):
            self._note_agents(doc)
        elif isinstance(doc, PhaseStart):
            self._note_offsets(doc)
        elif doc.kind == "phase_stop":
            for key in [k for k in self._streams if k[0] == doc.uid]:
                self._seal(key)

    def samples(self, doc: Samples) -> None:
        key = (doc.phase_uid, doc.source)
        stream = self._streams.get(key)
        if stream is None:
            self._count += 1
            name = _safe(f"{self._count:06d}-{doc.source}")
            stream = StreamWriter(self.folder / SAMPLES_DIR, name)
            self._streams[key] = stream
            self._line({"kind": "stream", "stream": stream.name, "run_uid": doc.run_uid,
                        "phase_uid": doc.phase_uid, "source": doc.source, "unit": doc.unit,
                        "meta": doc.meta})
            self._note_instrument(doc)
        stream.append(np.asarray(doc.t, dtype=np.float64),
                      np.asarray(doc.values, dtype=np.float64))

    def _seal(self, key: tuple[str | None, str]) -> None:
        stream = self._streams.pop(key)
        hashes = stream.close()
        self._line({"kind": "stream_end", "stream": stream.name, "samples": stream.samples,
                    "sha256": {f"{SAMPLES_DIR}/{stream.name}.{s}": h for s, h in hashes.items()}})

    def _line(self, record: dict[str, Any]) -> None:
        self._samples.write(json.dumps(record, default=str) + "\n")
        self._samples.flush()

    def _note_agents(self, doc: RunStart) -> None:
        changed = False
        for agent_id, info in (doc.agents or {}).items():
            if self.manifest["agents"].get(agent_id) != info:
                self.manifest["agents"][agent_id] = info
                changed = True
        if doc.simulated and not self.manifest.get("simulated"):
            self.manifest["simulated"] = doc.simulation or True
            changed = True
        if changed:
            write_manifest(self.folder, self.manifest)

    def _note_offsets(self, doc: PhaseStart) -> None:
        """Per agent: how many probes, the offset range and the largest uncertainty (each
        phase's own offset is in its ``phase_start`` document)."""
        for agent_id, offset in (doc.clock_offsets or {}).items():
            value, u = offset.get("offset_s"), offset.get("uncertainty_s")
            if value is None:
                continue
            seen = self.manifest["clock_offsets"].setdefault(
                agent_id, {"phases": 0, "min_offset_s": value, "max_offset_s": value,
                           "max_uncertainty_s": u})
            seen["phases"] += 1
            seen["min_offset_s"] = min(seen["min_offset_s"], value)
            seen["max_offset_s"] = max(seen["max_offset_s"], value)
            if u is not None:
                seen["max_uncertainty_s"] = max(seen["max_uncertainty_s"] or 0.0, u)
        write_manifest(self.folder, self.manifest)

    def _note_instrument(self, doc: Samples) -> None:
        entry = self.manifest["instruments"].setdefault(doc.source, {})
        identity = {"unit": doc.unit, **{k: v for k, v in doc.meta.items()
                                         if k in ("instrument", "supply_voltage_v",
                                                  "time_resolution_s")}}
        if entry.get("identity") != identity:
            entry["identity"] = identity
            write_manifest(self.folder, self.manifest)

    def close(self) -> None:
        """Seal open streams and close; a failing write (disk full) is logged: the campaign
        reported it."""
        try:
            for key in list(self._streams):
                self._seal(key)
            self._samples.close()
        except OSError as exc:
            log.error("cassette %s could not be written: %s", self.folder, exc)
        self._documents.close()


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
