"""Real inputs of every kind a user hands hilbench, made small and quickly, for the tests that
take them apart: an audit bundle (a committed cassette as its payload, its BagIt files written
as `hilbench audit export` writes them), a store with one campaign, the example campaign and
system files."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CASSETTE = REPO / "tests" / "cassettes" / "qubo-cpu"
EXAMPLES = REPO / "examples"


def make_bundle(out: Path) -> Path:
    """A bundle at ``out`` whose payload is the qubo-cpu cassette and its campaign row (the
    simulated meter's instrument settings): `hilbench audit verify` recomputes every figure
    of its runs."""
    from hilbench.cassette.bundle import DATA, write_bag_files
    from hilbench.cassette.manifest import read_manifest

    shutil.copytree(CASSETTE, out / DATA)
    instruments = [{"id": key, **value} for key, value in
                   read_manifest(out / DATA)["instruments"].items() if "driver" in value]
    row = {"uid": "c0ffee", "name": "qubo-cpu", "config": {"instruments": instruments}}
    (out / DATA / "campaign.json").write_text(json.dumps(row, indent=1))
    write_bag_files(out, "hilbench campaign qubo-cpu (test)")
    return out


def payload_files(bundle: Path) -> dict[str, int]:
    """Regular files under ``data/`` (symlinks not followed), name -> size."""
    found = {}
    for folder, _, names in os.walk(bundle / "data"):
        for name in names:
            path = Path(folder) / name
            st = path.lstat()
            if stat.S_ISREG(st.st_mode):
                found[path.relative_to(bundle).as_posix()] = st.st_size
    return found


def rewrite_bag(bundle: Path, *, manifest: bool = True) -> None:
    """Make the bag agree with its payload again, as a tamperer who knows the format would:
    bag-info.txt's Payload-Oxum, and (``manifest``) every sha256 in manifest-sha256.txt."""
    from hilbench.filehash import sha256_file

    files = payload_files(bundle)
    if manifest:
        (bundle / "manifest-sha256.txt").write_text("".join(
            f"{sha256_file(bundle / name)}  {name}\n" for name in sorted(files)))
    info = [line for line in (bundle / "bag-info.txt").read_text().splitlines()
            if not line.startswith("Payload-Oxum")]
    info.append(f"Payload-Oxum: {sum(files.values())}.{len(files)}")
    (bundle / "bag-info.txt").write_text("\n".join(info) + "\n")


def oxum_of(bundle: Path) -> tuple[int, int]:
    for line in (bundle / "bag-info.txt").read_text().splitlines():
        if line.startswith("Payload-Oxum:"):
            octets, count = line.split(":", 1)[1].strip().split(".")
            return int(octets), int(count)
    raise AssertionError(f"{bundle} declares no Payload-Oxum")
