"""One way to name a file by its content: sha256, read in blocks.

A file's content, not its path, identifies a model or a sample array: the same campaign run from
another checkout (or a cassette replayed on another machine) must give the same keys.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path


def sha256_file(path: Path | str) -> str:
    """The file's sha256 (hex), read now (what an audit must use)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_file_cached(path: Path | str) -> str:
    """:func:`sha256_file`, remembered per (path, size, modification time): for identities asked
    for every unit of a campaign (unit keys), not for checks against tampering."""
    st = os.stat(path)
    return _remembered(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _remembered(path: str, size: int, mtime_ns: int) -> str:
    return sha256_file(path)
