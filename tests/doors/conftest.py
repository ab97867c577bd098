"""Fuzz statistics (tests/doors/fuzz.py): written after each module when HILBENCH_FUZZ_STATS
names a file."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.doors.fuzz import write_stats


@pytest.fixture(autouse=True, scope="module")
def _fuzz_stats() -> Iterator[None]:
    yield
    write_stats()
