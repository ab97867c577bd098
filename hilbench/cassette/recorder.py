"""`hilbench run --record DIR`: the run documents written into a cassette folder as they pass."""

from __future__ import annotations

import contextlib
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from hilbench.cassette.arrays import StreamWriter
from hilbench.cassette.channels import CHANNELS, ChannelRecorder
from hilbench.cassette.manifest import (
    MANIFEST,
    base_manifest,
    campaign_bytes,
    read_manifest,
    write_manifest,
)
from hilbench.documents import Document, PhaseStart, RunStart, Samples
from hilbench.orchestrator.interrupt import deferred_interrupts
from hilbench.orchestrator.recorder import JsonlRecorder
from hilbench.private_files import open_private, private_dir
from hilbench.safe_paths import inside, safe_name

log = logging.getLogger(__name__)
DOCUMENTS = "documents.jsonl"
SAMPLES = "samples.jsonl"
SAMPLES_DIR = "samples"
CAMPAIGN = "campaign.toml"


class CassetteRecorder:
    """A document consumer writing a cassette folder (layout: :mod:`hilbench.cassette`).

    Power samples go to raw array files, one stream per (phase, source), closed and hashed when
    their phase stops; everything else to ``documents.jsonl``. Each write is flushed.

    ``content``: the campaign file's bytes as taken (a queue item's snapshot) when the file
    itself may have changed since. ``owner``: who may go on with this cassette after a stop (the
    daemon's queue item, resumed after a restart): a folder holding a cassette with the same
    owner and campaign is continued, lines cut short by a kill dropped; any other non-empty
    folder is refused."""

    def __init__(self, folder: str | Path, campaign_file: Path | None = None,
                 campaign: Any = None, *, content: bytes | None = None,
                 owner: str | None = None, channels: bool = False) -> None:
        self.folder = Path(folder)
        self.manifest = base_manifest(campaign_file, campaign, content)
        self.manifest["owner"] = owner
        self._count = 0
        self._documents_seen = 0
        self._made_folder = not self.folder.exists()
        self.fresh = True  # a new or empty folder, not a cassette continued
        self.discarded = False
        if self.folder.exists() and any(self.folder.iterdir()):
            self.fresh = False
            self._continue(owner)
            if channels:
                # One clock channel cannot span a restart: the first attempt's channels are kept
                # aside, and this cassette replays with --analysis-only.
                self._set_channels_aside()
                channels = False
        else:
            private_dir(self.folder, parents=True)
            private_dir(self.folder / SAMPLES_DIR)
        write_manifest(self.folder, self.manifest)
        self._documents = JsonlRecorder(self.folder / DOCUMENTS)
        self._samples = open_private(self.folder / SAMPLES, "a")
        self._streams: dict[tuple[str | None, str], StreamWriter] = {}
        if campaign_file is not None and not (self.folder / CAMPAIGN).exists():
            # what a replay runs again (a continued cassette keeps the one it has)
            with open_private(self.folder / CAMPAIGN, "x", binary=True) as fh:
                fh.write(campaign_bytes(campaign_file) if content is None else content)
        # channels: agent traffic, VISA I/O, helpers and clock readings, recorded from now
        # until close() (hilbench.cassette.channels)
        self._tapping = contextlib.ExitStack()
        if channels:
            recorder = ChannelRecorder(self.folder)
            self._tapping.callback(recorder.close)
            self._tapping.enter_context(recorder.installed())

    def _continue(self, owner: str | None) -> None:
        """Go on with the cassette in ``self.folder`` if ``owner`` wrote it for this campaign."""
        refused = FileExistsError(f"{self.folder} exists and is not empty: a cassette is written "
                                  "into a new or empty folder")
        if owner is None or not (self.folder / MANIFEST).exists():
            raise refused
        try:
            earlier = read_manifest(self.folder)
        except ValueError as exc:
            raise FileExistsError(f"{refused}; it holds {exc}") from None
        if earlier.get("owner") != owner:
            raise refused
        if earlier.get("campaign_file") != self.manifest["campaign_file"]:
            raise FileExistsError(f"{self.folder} holds a cassette of another campaign file "
                                  f"({earlier.get('campaign_file')}); {owner} records "
                                  f"{self.manifest['campaign_file']}")
        for key in ("agents", "instruments", "clock_offsets"):
            self.manifest[key] = {**self.manifest[key], **earlier.get(key, {})}
        if earlier.get("simulated"):
            self.manifest["simulated"] = earlier["simulated"]
        self.manifest["continued"] = [*earlier.get("continued", []), time.time()]
        for name in (DOCUMENTS, SAMPLES):
            _drop_cut_line(self.folder / name)
        private_dir(self.folder / SAMPLES_DIR)
        # streams are numbered on: a stream left unsealed by the stop stays as it was
        self._count = max((int(p.name.split("-", 1)[0]) for p in
                           (self.folder / SAMPLES_DIR).iterdir()
                           if p.name.split("-", 1)[0].isdigit()), default=0)

    def _set_channels_aside(self) -> None:
        earlier = self.folder / CHANNELS
        if earlier.is_dir():
            aside = f"{CHANNELS}-until-restart-{len(self.manifest['continued'])}"
            earlier.rename(self.folder / aside)
        self.manifest["channels"] = (
            "none after a restart: the item was continued after its daemon stopped, and one "
            "recording of the bench's traffic cannot span that; replay with --analysis-only")

    def __call__(self, doc: Document) -> None:
        """Record one document whole: a stop signal that arrives meanwhile waits for the
        orchestrator's next checkpoint. Raised inside, it cut a phase's end in two (CI-97: the
        daemon's SIGKILL sent its worker a SIGTERM while the stream of the phase just stopped
        was being hashed; the stream was taken off the open ones and never sealed, so the
        cassette held a stream without its hashes)."""
        with deferred_interrupts():
            self._record(doc)

    def _record(self, doc: Document) -> None:
        if isinstance(doc, Samples):
            self.samples(doc)
            return
        self._documents_seen += 1
        self._documents(doc)
        if isinstance(doc, RunStart):
            self._note_agents(doc)
        elif isinstance(doc, PhaseStart):
            self._note_offsets(doc)
        elif doc.kind == "phase_stop":
            for key in [k for k in self._streams if k[0] == doc.uid]:
                self._seal(key)

    def samples(self, doc: Samples) -> None:
        self._documents_seen += 1
        key = (doc.phase_uid, doc.source)
        stream = self._streams.get(key)
        if stream is None:
            self._count += 1
            name = safe_name(f"{self._count:06d}-{doc.source}")
            inside(self.folder / SAMPLES_DIR, name)  # the stream's files are NAME.suffix
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
                                                  "time_resolution_s",
                                                  "readings_tile_time")}}
        if entry.get("identity") != identity:
            entry["identity"] = identity
            write_manifest(self.folder, self.manifest)

    def close(self, discard_empty: bool = False) -> None:
        """Stop recording channels, seal open streams and close; a failing write (disk full)
        is logged: the campaign reported it. ``discard_empty``: a new cassette that got no
        document is removed (see :meth:`_discard`), as `hilbench run --record` wants."""
        try:
            self._tapping.close()
            with deferred_interrupts():  # each stream sealed whole, as in __call__
                for key in list(self._streams):
                    self._seal(key)
            self._samples.close()
        except OSError as exc:
            log.error("cassette %s could not be written: %s", self.folder, exc)
        self._documents.close()
        if discard_empty and self.fresh and not self._documents_seen:
            self._discard()

    def _discard(self) -> None:
        """A new cassette that got no document (the campaign had finished already, or stopped
        before its first run) is removed, so that it does not block the next ``--record`` into
        the same folder: what this recorder wrote into the folder, and the folder if it made
        it."""
        import shutil

        try:
            for entry in list(self.folder.iterdir()):
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
            if self._made_folder:
                self.folder.rmdir()
            self.discarded = True
        except OSError as exc:
            log.warning("the empty cassette %s could not be removed: %s", self.folder, exc)


def _drop_cut_line(path: Path) -> None:
    """Cut a last line a killed recording left unfinished, so appending starts a line."""
    if not path.exists():
        return
    data = path.read_bytes()
    keep = data.rfind(b"\n") + 1
    if keep < len(data):
        with open(path, "r+b") as fh:
            fh.truncate(keep)

