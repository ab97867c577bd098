"""Suite-wide rules. Under CI=true nothing skips silently: CI installs every extra, builds the
firmware and makes the vendor environments, so a skip there means something CI should have
provided is missing, and the skip is reported as a failure. Only tests marked ``outside_ci``
(they need what no CI machine has: the real DCASE data set, a shared reference folder) may
skip there, and they say why."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

# the cassette fixture and its --record-mode option
from tests.cassette_recording import cassette, pytest_addoption  # noqa: F401


def pytest_configure(config: pytest.Config) -> None:
    # Bench locks (hilbench.orchestrator.locks) of this test session only: the campaigns
    # of another suite running on the same machine are not this one's bench.
    os.environ["HILBENCH_LOCK_DIR"] = tempfile.mkdtemp(prefix="hilbench-test-locks-")
    config.addinivalue_line(
        "markers", "outside_ci: needs something CI never has; may skip under CI=true"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if (
        report.skipped
        and os.environ.get("CI") == "true"
        and item.get_closest_marker("outside_ci") is None
        and not hasattr(report, "wasxfail")
    ):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, where nothing may skip: {reason}"
