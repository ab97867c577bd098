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

from hilbench.cassette.manifest import write_manifest
from hilbench.cassette.recorder import DOCUMENTS, CassetteRecorder
from hilbench.documents import Samples
from hilbench.filehash import sha256_file
from hilbench.private_files import open_private, private_dir
from hilbench.safe_paths import open_inside, safe_name
from hilbench.store import Store

DATA = "data"
MANIFEST = "manifest-sha256.txt"


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
    with open_private(out / "bagit.txt", "x") as fh:
        fh.write("BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n")
    size = sum(p.stat().st_size for p in files)
    # one line: a campaign name with a line break must not add tags of its own
    description = "".join(c if c.isprintable() else " " for c in description)
    with open_private(out / "bag-info.txt", "x") as fh:
        fh.write(f"Bagging-Date: {time.strftime('%Y-%m-%d', time.gmtime())}\n"
                 f"Bag-Software-Agent: hilbench\nExternal-Description: {description}\n"
                 f"Payload-Oxum: {size}.{len(files)}\n")


def check_bag(out: Path) -> list[str]:
    """One line per payload file whose sha256 differs from the manifest, is missing, or is not
    listed."""
    manifest = out / MANIFEST
    if not manifest.exists():
        return [f"{manifest}: missing (not a bundle)"]
    problems, listed = [], set()
    for number, text in enumerate(manifest.read_text().splitlines(), start=1):
        digest, _, name = text.partition("  ")
        if not name:
            problems.append(f"{manifest} line {number}: not 'SHA256  PATH'")
            continue
        listed.add(name)
        path = out / name
        if not path.is_file():
            problems.append(f"{name}: listed in {MANIFEST} but missing")
        elif sha256_file(path) != digest:
            problems.append(f"{name}: sha256 differs from {MANIFEST} (file changed)")
    for path in sorted((out / DATA).rglob("*")):
        name = path.relative_to(out).as_posix()
        if path.is_file() and name not in listed:
            problems.append(f"{name}: not listed in {MANIFEST}")
    return problems
