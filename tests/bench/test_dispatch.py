"""`hilbench bench dispatch` runs to the end for every payload size, empty ones included."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from hilbench.bench.dispatch import dispatch, measure


@pytest.mark.slow
def test_every_path_gets_its_round_trips_at_each_size_including_empty_payloads():
    results = measure((0, 1), n=30, warmup=3)
    assert sorted(results) == [0, 1]
    for times in results.values():
        assert {path: len(ns) for path, ns in times.items()} == {
            "bare": 30,
            "framed": 30,
            "worker": 30,
            "inline": 30,
        }
        assert all(t > 0 for ns in times.values() for t in ns)


@pytest.mark.slow
def test_the_command_prints_both_paths_per_size_and_the_headline_ratio():
    args = ["--requests", "2000", "--payload-kib", "0", "--payload-kib", "2", "--warmup", "5"]
    result = CliRunner().invoke(dispatch, args)
    assert result.exit_code == 0, result.output
    for kib in (0, 2):
        for label in (
            "bare pyzmq REQ/REP",
            "bare pyzmq DEALER/ROUTER, same frames",
            "hilbench noop (worker thread)",
            "hilbench echo",
        ):
            assert re.search(rf"^\s+{kib} KiB {re.escape(label)}", result.output, re.M), label
    headline = re.search(r"worker/bare median ratio: 0 KiB ([\d.]+), 2 KiB ([\d.]+)", result.output)
    assert headline and all(float(r) > 0 for r in headline.groups())


def test_too_few_requests_is_refused_with_the_reason():
    result = CliRunner().invoke(dispatch, ["--requests", "10"])
    assert result.exit_code == 2
    assert "at least 2000 requests" in result.output
