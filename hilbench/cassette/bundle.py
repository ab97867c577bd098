"""`hilbench audit export`: a campaign from the store as a BagIt-style bundle — ``data/`` holds
a cassette made from the stored rows (runs, phases, events, metrics as JSON lines; the raw
samples as arrays), the campaign row and the system description; ``manifest-sha256.txt`` the
sha256 of every file under ``data/``; ``bagit.txt`` and ``bag-info.txt`` as BagIt 1.0 has them."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np

from hilbench.bounded_parse import MAX_JSON_BYTES
from hilbench.cassette.arrays import HEX64
from hilbench.cassette.manifest import write_manifest
from hilbench.cassette.recorder import DOCUMENTS, CassetteRecorder
from hilbench.confined_read import ConfinedError, ConfinedFolder, entry_parts
from hilbench.documents import Samples
from hilbench.filehash import sha256_file
from hilbench.private_files import open_private, private_dir
from hilbench.safe_paths import open_inside, safe_name
from hilbench.store import Store

DATA = "data"
MANIFEST = "manifest-sha256.txt"
BAGIT = "bagit.txt"
BAG_INFO = "bag-info.txt"
MAX_TAG_BYTES = 1 << 20
# ~130 bytes a line: 250 000 payload files (a campaign of 10 000 three-phase runs with one
# meter has ~90 000)
MAX_MANIFEST_BYTES = 32 << 20


def export_bundle(db: Path, campaign_ref: str, out: Path, system: Path | None = None) -> int:
    """Write the bundle of campaign ``campaign_ref`` (uid, prefix or name) into ``out`` (new or
    empty); returns the number of runs."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise FileExistsError(f"{out} exists and is not an empty folder")
    with Store(db) as store:
        uid, _name = store.resolve_campaign(campaign_ref)
        campaign = store.campaign(uid)
        runs = store.runs(uid)
        private_dir(out)
        recorder = CassetteRecorder(out / DATA)
        recorder.manifest["store_campaign"] = {"uid": uid, "name": campaign["name"]}
        write_manifest(out / DATA, recorder.manifest)
        documents = open_private(out / DATA / "store-documents.jsonl", "x")
        try:
            for run in runs:
                _export_run(store, run, recorder, documents)
        finally:
            documents.close()
            recorder.close()
    (out / DATA / DOCUMENTS).unlink()  # the recorder's own (empty): the store's rows are in
    (out / DATA / "store-documents.jsonl").rename(out / DATA / DOCUMENTS)
    with open_private(out / DATA / "campaign.json", "x") as fh:
        json.dump(campaign, fh, indent=1, default=str)
    if system is not None:
        with open(system, "rb") as src, open_inside(out / DATA, safe_name(
                f"system{system.suffix}"), "xb", file_mode=0o600) as dst:
            shutil.copyfileobj(src, dst)
    write_bag_files(out, f"hilbench campaign {campaign['name']} ({uid})")
    return len(runs)


def _export_run(store: Store, run: dict[str, Any], recorder: CassetteRecorder,
                documents: Any) -> None:
    def line(kind: str, record: dict[str, Any]) -> None:
        documents.write(json.dumps({"kind": kind, **record}, default=str) + "\n")

    uid = run["uid"]
    line("run", run)
    for phase in store.phases(uid):
        line("phase", phase)
    for event in store.events(uid):
        line("event", event)
    for metric in store.metrics(uid):
        line("metric", metric)
    for source in store.sample_sources(uid):
        for batch in store.sample_batches(uid, source["source"]):
            recorder.samples(Samples(uid, batch["phase_uid"], batch["source"], batch["unit"],
                                     np.asarray(batch["t"]), np.asarray(batch["values"]),
                                     batch["meta"] or {}))
    documents.flush()


def write_bag_files(out: Path, description: str) -> None:
    files = sorted(p for p in (out / DATA).rglob("*") if p.is_file())
    with open_private(out / MANIFEST, "x") as fh:
        for path in files:
            fh.write(f"{sha256_file(path)}  {path.relative_to(out).as_posix()}\n")
    with open_private(out / BAGIT, "x") as fh:
        fh.write("BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n")
    size = sum(p.stat().st_size for p in files)
    # one line: a campaign name with a line break must not add tags of its own
    description = "".join(c if c.isprintable() else " " for c in description)
    with open_private(out / BAG_INFO, "x") as fh:
        fh.write(f"Bagging-Date: {time.strftime('%Y-%m-%d', time.gmtime())}\n"
                 f"Bag-Software-Agent: hilbench\nExternal-Description: {description}\n"
                 f"Payload-Oxum: {size}.{len(files)}\n")


class NotABundle(ValueError):
    """A folder with neither of a bag's declaration files: given by mistake, not tampered."""


def check_bag(out: Path) -> list[str]:
    """One line per payload file that is missing, not listed, not a regular file inside the
    bundle, or whose sha256 differs from the manifest; and per manifest line that does not
    name such a file (``..``, an absolute path, a symlink on the way: never read).

    Nothing is read beyond what the bag declares: every read stays in the bundle
    (:mod:`hilbench.confined_read`); the payload's size is checked against bag-info.txt's
    Payload-Oxum before a byte is hashed (more bytes than declared: nothing is hashed); a
    JSON-lines file fails at its first line longer than a JSON line may be."""
    files = ConfinedFolder(out)
    if not files.exists(MANIFEST) and not files.exists(BAGIT):
        raise NotABundle(f"{out} is not an audit bundle: it has no {MANIFEST} and no {BAGIT} "
                         "(`hilbench audit export` writes them)")
    problems: list[str] = []
    present: dict[str, int] = {}  # payload file -> size
    refused: set[str] = set()  # payload entries that are no regular file: said, never read
    try:
        _walk_payload(files, present, refused, problems)
    except ConfinedError as exc:
        return [*problems, str(exc)]
    listed = _listed(files, problems)
    declared = _oxum(files, problems)
    size = sum(present.values())
    if declared is not None and size > declared[0]:
        problems.append(f"{files.label(BAG_INFO)}: Payload-Oxum declares {declared[0]} bytes, "
                        f"{DATA}/ holds {size}: nothing hashed")
        return problems
    if declared is not None and (size, len(present)) != declared:
        problems.append(f"{files.label(BAG_INFO)}: Payload-Oxum declares {declared[0]} bytes "
                        f"in {declared[1]} files, {DATA}/ holds {size} bytes in "
                        f"{len(present)}")
    problems += _hash_listed(files, listed, present, refused)
    problems += [f"{files.label(name)}: not listed in {MANIFEST}"
                 for name in present if name not in listed]
    return problems


def _walk_payload(files: ConfinedFolder, present: dict[str, int], refused: set[str],
                  problems: list[str]) -> None:
    """Sizes of the payload's regular files into ``present``; anything else refused, said."""
    for name, kind, size in files.walk(DATA):
        if kind == "file":
            present[name] = size
        elif kind != "folder":
            refused.add(name)
            problems.append(f"{files.label(name)}: {kind} in the payload (a bundle holds "
                            "regular files only; not followed)")


def _hash_listed(files: ConfinedFolder, listed: dict[str, str], present: dict[str, int],
                 refused: set[str]) -> list[str]:
    """One line per manifest entry that is missing or whose sha256 differs (JSON files
    hashed with their line length bounded)."""
    problems: list[str] = []
    for name, digest in listed.items():
        label = files.label(name)
        if name in refused:
            continue
        if name not in present:
            problems.append(f"{label}: listed in {MANIFEST} but missing")
            continue
        bound = MAX_JSON_BYTES if name.endswith((".jsonl", ".json")) else None
        try:
            if files.sha256(name, max_line_bytes=bound) != digest:
                problems.append(f"{label}: sha256 differs from {MANIFEST} (file changed)")
        except ConfinedError as exc:
            problems.append(str(exc))
    return problems


def _listed(files: ConfinedFolder, problems: list[str]) -> dict[str, str]:
    """The manifest's entries, name -> sha256; a line that does not name a payload file
    inside the bundle is a problem, never read."""
    listed: dict[str, str] = {}
    where = files.label(MANIFEST)
    try:
        with files.open(MANIFEST, max_bytes=MAX_MANIFEST_BYTES) as f:
            for number, raw in enumerate(f.lines(MAX_JSON_BYTES), start=1):
                text = raw.decode("utf-8", "replace").rstrip("\r\n")
                digest, _, name = text.partition("  ")
                if not name or not HEX64.match(digest.lower()):
                    problems.append(f"{where} line {number}: not 'SHA256  PATH' "
                                    f"({text!r:.80})")
                    continue
                try:
                    parts = entry_parts(name)
                except ConfinedError as exc:
                    problems.append(f"{where} line {number}: {exc}: not read")
                    continue
                if parts[0] != DATA or len(parts) < 2:
                    problems.append(f"{where} line {number}: {name!r:.80} is not in {DATA}/: "
                                    "not read")
                elif name in listed:
                    problems.append(f"{where} line {number}: {name} listed twice")
                else:
                    listed[name] = digest.lower()
    except ConfinedError as exc:
        problems.append(str(exc))
    return listed


def _oxum(files: ConfinedFolder, problems: list[str]) -> tuple[int, int] | None:
    """bag-info.txt's Payload-Oxum (octets, files), if it declares one."""
    if not files.exists(BAG_INFO):
        return None
    try:
        text = files.read(BAG_INFO, max_bytes=MAX_TAG_BYTES).decode("utf-8", "replace")
    except ConfinedError as exc:
        problems.append(str(exc))
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() != "Payload-Oxum":
            continue
        octets, dot, count = value.strip().partition(".")
        if dot and octets.isdigit() and count.isdigit():
            return int(octets), int(count)
        problems.append(f"{files.label(BAG_INFO)}: Payload-Oxum {value.strip()!r:.60} is not "
                        "OCTETS.FILES")
    return None
