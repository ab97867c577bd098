"""The cassette's manifest: what a reader needs to know before reading the rest (format version,
the software that wrote it, the campaign file, the bench it ran on)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from hilbench import __version__
from hilbench.bounded_parse import MAX_JSON_BYTES, MAX_TOML_BYTES, json_object, read_bounded
from hilbench.cassette import FORMAT_VERSION
from hilbench.confined_read import ConfinedFolder, confined
from hilbench.private_files import open_private

MANIFEST = "manifest.json"
# The packages whose versions change a figure or the wire format.
PACKAGES = ("numpy", "scipy", "pyzmq", "msgspec", "pyvisa", "pyvisa-py", "dwave-samplers",
            "dwave-neal", "rockpool", "lava-nc")


def git_commit() -> str | None:
    """The commit of the hilbench source tree, when it is a git checkout (else None)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def package_versions() -> dict[str, str]:
    found = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def base_manifest(campaign_file: Path | None, campaign: Any = None,
                  content: bytes | None = None) -> dict[str, Any]:
    """The manifest as known before the first run: software, campaign file (``content``: the
    file as it was taken, e.g. a queue item's snapshot; else read now), instrument settings
    (from the campaign, as configured)."""
    manifest: dict[str, Any] = {
        "format": "hilbench-cassette",
        "format_version": FORMAT_VERSION,
        "hilbench_version": __version__,
        "hilbench_commit": git_commit(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": package_versions(),
        "campaign_file": None,
        "agents": {},
        "instruments": {},
        "clock_offsets": {},
    }
    if campaign_file is not None:
        data = campaign_bytes(campaign_file) if content is None else content
        # where it was: a replay resolves the campaign's relative paths there
        manifest["campaign_path"] = str(Path(campaign_file).resolve())
        manifest["campaign_file"] = {"name": Path(campaign_file).name,
                                     "sha256": sha256_bytes(data)}
    for spec in getattr(campaign, "instruments", ()) or ():
        manifest["instruments"][spec.id] = {
            "driver": spec.driver, "measures": spec.measures, "resource": spec.resource,
            "simulate": spec.simulate, "settings": dict(spec.settings),
        }
    return manifest


def campaign_bytes(path: Path) -> bytes:
    """The campaign file read again for the cassette, bounded as when it was checked."""
    return read_bounded(path, MAX_TOML_BYTES, "campaign file")


def write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    """Replace the manifest whole (write beside, then rename): a reader never sees half."""
    tmp = folder / f".{MANIFEST}.tmp"
    with open_private(tmp, "w") as fh:
        json.dump(manifest, fh, indent=1, sort_keys=True, default=str)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, folder / MANIFEST)


def read_manifest(folder: Path | ConfinedFolder) -> dict[str, Any]:
    """The manifest of the cassette in ``folder`` (read inside it, bounded); a ValueError
    naming the file when there is none, it is no JSON object, or another format version."""
    files = confined(folder)
    if not files.exists(MANIFEST):
        raise ValueError(f"{files} is not a cassette: no {MANIFEST}")
    path = files.label(MANIFEST)
    manifest = json_object(files.read(MANIFEST, max_bytes=MAX_JSON_BYTES), path)
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise ValueError(f"{path}: format_version {version!r:.40}; this hilbench reads "
                         f"{FORMAT_VERSION}")
    return manifest
