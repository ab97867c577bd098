"""A small JSON cache of computed QUBO targets, so repeated campaigns skip minutes of Tabu.

One file, ``<cache dir>/hilbench/qubo_targets.json``, keyed by workload and by everything that
could change the answer (Tabu parameters and seed, networkx and dwave-samplers versions), so a
stale entry is never returned for a different definition. Writes go to a temporary file that
replaces the old one, so a crash or a concurrent reader never sees half a file; a damaged file is
reported and treated as empty rather than stopping a campaign.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from hilbench.private_files import private_dir

log = logging.getLogger(__name__)

CACHE_FILE_NAME = "qubo_targets.json"
CACHE_FORMAT = 1


def default_cache_path() -> Path:
    """``$XDG_CACHE_HOME/hilbench/qubo_targets.json``, else ``~/.cache/hilbench/...``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hilbench" / CACHE_FILE_NAME


class TargetCache:
    """Read-merge-write JSON store of ``key -> {"cost": int, "detail": {...}}``."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else default_cache_path()

    def _load(self) -> dict[str, Any]:
        try:
            document = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            log.warning("ignoring unreadable QUBO target cache %s: %s", self.path, exc)
            return {}
        if not isinstance(document, dict) or document.get("format") != CACHE_FORMAT:
            log.warning("ignoring QUBO target cache %s: unknown format", self.path)
            return {}
        entries = document.get("entries")
        return entries if isinstance(entries, dict) else {}

    def get(self, key: str) -> dict[str, Any] | None:
        entry = self._load().get(key)
        if isinstance(entry, dict) and isinstance(entry.get("cost"), int):
            return entry
        return None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Store one entry; failure to write is logged, never fatal (the value is still valid)."""
        entries = self._load()
        entries[key] = entry
        document = {"format": CACHE_FORMAT, "entries": entries}
        tmp_name = None
        try:
            private_dir(self.path.parent, parents=True)
            fd, tmp_name = tempfile.mkstemp(
                prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent
            )
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(document, handle, indent=1, sort_keys=True)
                handle.write("\n")
            os.replace(tmp_name, self.path)
        except OSError as exc:
            log.warning("could not write QUBO target cache %s: %s", self.path, exc)
            if tmp_name is not None:
                Path(tmp_name).unlink(missing_ok=True)
