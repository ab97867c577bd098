"""Shared ASC fixtures: one synthetic data set per test session, in a private cache directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from hilbench.workloads.asc.procedures.run import ensure_fixture


@pytest.fixture(scope="session")
def asc_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An XDG cache directory holding the fixture where an ``[[asc]]`` table without ``data``
    looks for it (``<cache>/hilbench/asc-fixture-0``)."""
    pytest.importorskip("soundfile")
    pytest.importorskip("scipy")
    cache = tmp_path_factory.mktemp("xdg-cache")
    ensure_fixture(cache / "hilbench" / "asc-fixture-0", seed=0)
    return cache
