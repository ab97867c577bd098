"""The fast tier is measured, not guessed: ``pytest --record-durations`` stores each test's
time (setup + call + teardown, as the last full run measured it) in ``tests/durations.json``,
and every test recorded at ``SLOW_S`` or more is marked ``slow`` at collection, beside those
marked by hand. ``pytest -m "not slow"`` is then the inner loop (docs/development.md); a new
test counts as fast until a recording sees it.

Re-record after a change that makes tests slower or faster:
``.venv/bin/python -m pytest --record-durations`` (the tests run get their new times; the
others keep theirs).
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

FILE = Path(__file__).with_name("durations.json")
SLOW_S = 0.5  # a test at or past this, as recorded, is in the slow tier


def add_option(parser: pytest.Parser) -> None:
    parser.addoption("--record-durations", action="store_true", default=False,
                     help=f"store each test's time in {FILE.name}: tests at {SLOW_S} s or more "
                          "are in the slow tier (-m 'not slow' leaves them out)")


def recorded() -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(FILE.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def mark_slow(items: list[pytest.Item]) -> None:
    """Mark ``slow`` every collected test recorded at SLOW_S or more."""
    times = recorded()
    for item in items:
        if times.get(item.nodeid, 0.0) >= SLOW_S and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)


class Recorder:
    """Adds up each test's phases as the reports arrive (from xdist's workers too) and writes
    the file when the session ends, on the controller only."""

    def __init__(self) -> None:
        self.times: dict[str, float] = defaultdict(float)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.times[report.nodeid] += report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput"):
            return
        times = {**recorded(), **{k: round(v, 2) for k, v in self.times.items()}}
        FILE.write_text(json.dumps(dict(sorted(times.items())), indent=0) + "\n")


def register(config: pytest.Config) -> None:
    if config.getoption("--record-durations") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(Recorder(), "hilbench-durations")
