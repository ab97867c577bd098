"""Compiled bytecode shared by the session's processes when the environment forbids writing it.

With ``PYTHONDONTWRITEBYTECODE`` set (as on some CI machines) no ``.pyc`` is ever kept for the
package's own modules (an editable install), so every ``hilbench`` child process a test starts
— about 1 500 in a full run — compiled the ~300 modules it imports from source again. The
session's processes instead write and share bytecode under the session's own folder
(``PYTHONPYCACHEPREFIX``), which is removed with it: nothing is written into the source tree,
as the variable asked.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def share_in(session_folder: str) -> None:
    """Let this process and its children keep bytecode under ``session_folder``."""
    if not sys.dont_write_bytecode:
        return  # Python's default: __pycache__ beside the sources (or the user's own prefix)
    prefix = str(Path(session_folder) / "pycache")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    sys.dont_write_bytecode = False
    sys.pycache_prefix = prefix
