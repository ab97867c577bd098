"""The Lava environment (Python 3.10, the paper's Lava pair), ``.venv-loihi``, made by
``bash scripts/setup-side-envs.sh loihi`` (CI makes it).

Tests that run real Lava take its interpreter from HILBENCH_LOIHI_PYTHON or ./.venv-loihi. On a
developer machine without it they skip, saying how to make it; in CI (CI=true) they fail.
"""

from __future__ import annotations

import pytest

from tests import side_envs

REPO = side_envs.REPO


@pytest.fixture(scope="session")
def lava_python() -> str:
    return side_envs.lava_python()
