"""Suite-wide rules. Under CI=true nothing skips silently: CI installs every extra, builds the
firmware and makes the vendor environments, so a skip there means something CI should have
provided is missing, and the skip is reported as a failure. Only tests marked ``outside_ci``
(they need what no CI machine has: the real DCASE data set, a shared reference folder) may
skip there, and they say why.

The suite runs in parallel (pytest-xdist, ``-n`` in pyproject's addopts). Each worker process
has its own bench-lock folder (``HILBENCH_LOCK_DIR``), so campaigns on different workers never
refuse each other; ports come from the OS (port 0). Tests marked ``serial`` measure time or
power against a bound and run alone: they take a session-wide lock exclusively, every other test
takes it shared (:func:`tests.alone.turn`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest

from tests import alone, bytecode, cassette_recording, durations

# the cassette fixture (its --record-mode option is added below)
from tests.cassette_recording import cassette  # noqa: F401

_MADE_HERE: list[str] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    cassette_recording.pytest_addoption(parser)
    durations.add_option(parser)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    durations.mark_slow(items)  # the slow tier as recorded (tests/durations.py)
    # serial tests first, then a lane per worker balanced by recorded time (tests/alone.py)
    alone.order(items, durations.recorded(), int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", 1)))


def pytest_collection_finish(session: pytest.Session) -> None:
    alone.count_serial(session.items)  # after -m / -k deselected what they do


def pytest_configure(config: pytest.Config) -> None:
    durations.register(config)
    # Bench locks (hilbench.orchestrator.locks) of this process only: the campaigns of another
    # worker, or of another suite on the same machine, are not this one's bench.
    lock_dir = tempfile.mkdtemp(prefix="hilbench-test-locks-")
    os.environ["HILBENCH_LOCK_DIR"] = lock_dir
    _MADE_HERE.append(lock_dir)
    if not hasattr(config, "workerinput"):  # the controller, or a run without xdist
        _MADE_HERE.append(alone.start_session())
        bytecode.allow_writing()  # the workers and every child inherit it
    config.addinivalue_line(
        "markers", "outside_ci: needs something CI never has; may skip under CI=true"
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    for folder in _MADE_HERE:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(wrapper=True, tryfirst=True)  # outermost: waiting for a turn is no test's time
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    with alone.turn(alone.is_serial(item), alone.is_quiet(item)):
        return (yield)


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
