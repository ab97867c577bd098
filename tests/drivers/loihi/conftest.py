"""The Lava environment (Python 3.10, the paper's Lava pair) that CI creates as .venv-loihi.

Tests that run real Lava take its interpreter from HILBENCH_LOIHI_PYTHON or ./.venv-loihi. On a
developer machine without it they skip, saying how to make it; in CI (CI=true) they fail.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def _lava_python() -> str | None:
    configured = os.environ.get("HILBENCH_LOIHI_PYTHON")
    candidate = Path(configured) if configured else REPO / ".venv-loihi" / "bin" / "python"
    if not candidate.exists():
        return None
    probe = subprocess.run(
        [str(candidate), "-c", "import lava.lib.optimization, hilbench"],
        capture_output=True,
        timeout=120,
    )
    return str(candidate) if probe.returncode == 0 else None


@pytest.fixture(scope="session")
def lava_python() -> str:
    python = _lava_python()
    if python is None:
        message = (
            "no Lava environment: run .ci/run, or create .venv-loihi as README's "
            "'Loihi host set-up' says (or set HILBENCH_LOIHI_PYTHON)"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return python
