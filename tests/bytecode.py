"""Compiled byte code kept for the session's processes when the environment forbids writing it.

With ``PYTHONDONTWRITEBYTECODE`` set (as on some CI machines) no ``.pyc`` is ever kept for the
package's own modules (an editable install: pip compiled only the third-party ones), so every
``hilbench`` child process a test starts — about 1 500 in a full run — compiled the ~300
modules it imports from source again. The session's processes may write it: Python's default,
``__pycache__`` beside each source (ignored by git), so the installed libraries' own ``.pyc``
files are read as before. A ``PYTHONPYCACHEPREFIX`` folder was tried first: it hides those
files, and every interpreter (the side environments' too) then compiled numpy, Lava or torch
from source inside the first timing-sensitive tests.
"""

from __future__ import annotations

import os
import sys


def allow_writing() -> None:
    """Let this process and its children keep byte code (Python's default)."""
    if not sys.dont_write_bytecode:
        return
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
