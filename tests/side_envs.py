"""The side environments some tests run in, beside the main ``.venv``: ``.venv-xylo`` (Rockpool
2.8, numpy < 2) and ``.venv-loihi`` (Python 3.10, Lava), both made by one documented command,
``bash scripts/setup-side-envs.sh``. Without one, the tests that need it skip with that line; under
CI (CI=true, which makes them) they fail instead.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import pytest

REPO = Path(__file__).resolve().parents[1]
SETUP = "bash scripts/setup-side-envs.sh"


def missing(what: str, env: str) -> NoReturn:
    """Skip (fail under CI) naming what is missing and the command that makes it."""
    message = f"{what}: make it with `{SETUP} {env}`"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def _imports(python: Path, modules: str) -> bool:
    probe = subprocess.run([str(python), "-c", f"import {modules}"], capture_output=True,
                           timeout=120)
    return probe.returncode == 0


def xylo_python_path() -> Path | None:
    """``$HILBENCH_XYLO_PYTHON``, else ``<repo>/.venv-xylo/bin/python``, else this interpreter
    when it has Rockpool."""
    env = os.environ.get("HILBENCH_XYLO_PYTHON")
    candidates = [Path(env)] if env else []
    candidates.append(REPO / ".venv-xylo" / "bin" / "python")
    for path in candidates:
        if path.is_file():
            return path
    return Path(sys.executable) if importlib.util.find_spec("rockpool") else None


def xylo_python() -> Path:
    """The Xylo environment's interpreter, or skip/fail saying how to make it."""
    path = xylo_python_path()
    if path is None:
        missing("no Xylo environment (.venv-xylo, or set HILBENCH_XYLO_PYTHON)", "xylo")
    return path


def xylo_pytest() -> Path:
    """The Xylo environment's interpreter, which must have pytest (it runs xylo_env/)."""
    path = xylo_python()
    if not _has_pytest(path):
        missing(f"{path} has no pytest", "xylo")
    return path


@functools.cache
def _has_pytest(python: Path) -> bool:
    return _imports(python, "pytest")


@functools.cache
def lava_python_path() -> str | None:
    """``$HILBENCH_LOIHI_PYTHON``, else ``<repo>/.venv-loihi/bin/python``, if it imports Lava's
    optimisation library and hilbench."""
    configured = os.environ.get("HILBENCH_LOIHI_PYTHON")
    candidate = Path(configured) if configured else REPO / ".venv-loihi" / "bin" / "python"
    if not candidate.exists() or not _imports(candidate, "lava.lib.optimization, hilbench"):
        return None
    return str(candidate)


def lava_python() -> str:
    """The Lava environment's interpreter, or skip/fail saying how to make it."""
    python = lava_python_path()
    if python is None:
        missing("no Lava environment (.venv-loihi, or set HILBENCH_LOIHI_PYTHON)", "loihi")
    return python
