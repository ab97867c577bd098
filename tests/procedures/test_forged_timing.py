"""Replies an agent forged, against the orchestrator's own window and the link bound it measured:
never an on-time answer with a gap, at 1 ms, 10 ms and 100 ms timeouts, on this host as it is
and with a busy loop on every core (``-m busy_host``; serial, so it runs alone while it loads
the machine).

The agent is written from the protocol spec alone (tests/spec_agent.py, its own process):
seed 1 replies 10× late claiming exactly the timeout (``actual_s`` forged); seed 2 replies
0.24 s late claiming the timeout; seed 3 replies 10× late declaring the time past the timeout
as ``untimed_s``, past the 1 ms its capabilities declare; seed 0 is honest.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from hilbench.store import Store
from tests.campaign_toml import agent, campaign, qubo, write_campaign
from tests.procedures.test_qubo_timing import spec_agent
from tests.subprocesses import run_campaign

TIMEOUTS_S = [1e-3, 1e-2, 1e-1]
RULES = ("1:forged:10", "2:lag:0.24", "3:untimed:10")
FORGED = {1: "10× late, actual_s forged", 2: "0.24 s late, times forged",
          3: "10× late, untimed_s past the declared maximum"}


@pytest.fixture
def every_core_busy() -> Iterator[int]:
    """A busy loop on every core while the test runs (the test is serial: nothing runs beside)."""
    loops = [subprocess.Popen([sys.executable, "-c", "while 1: pass"])
             for _ in range(os.cpu_count() or 1)]
    try:
        yield len(loops)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def forged_runs(tmp_path: Path) -> dict[tuple[int, float], list[dict]]:
    """Run the spec agent's four seeds at every timeout; the runs of each (seed, timeout)."""
    db = tmp_path / "forged.sqlite"
    with spec_agent(*RULES) as endpoint:
        path = write_campaign(tmp_path, campaign(
            agent("spec", "spec", spawn=False, address=endpoint),
            qubo("spec", nodes=[25], densities=[0.1], seeds=[0, 1, 2, 3], solvers=["sa"],
                 timeouts_s=TIMEOUTS_S),
            name="forged", timing_attempts=3,
            timing_retry_wait_s=0))  # liars: the verdict is the subject, not the pacing
        done = run_campaign(path, db, timeout=600)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    runs: dict[tuple[int, float], list[dict]] = defaultdict(list)
    with Store(db) as store:
        for run in store.runs():
            run["metrics"] = {m["name"]: m for m in store.metrics(run["uid"])}
            run["check"] = next((e["data"] for e in store.events(run["uid"], "timing_check")),
                                {})
            runs[(run["params"]["seed"], run["params"]["timeout_s"])].append(run)
    return runs


def assert_never_an_answer(runs: dict[tuple[int, float], list[dict]],
                           known_weak: frozenset[tuple[int, float]] = frozenset()) -> list[str]:
    """Every forged reply failed or unverified, no gap filed; the honest seed never called a
    liar. Returns one line per forged unit (for the report). ``known_weak``: (seed, timeout)
    cases the issue's must-hold names but main does not yet meet; reported, not asserted."""
    lines = []
    for (seed, timeout), attempts in sorted(runs.items()):
        statuses = [r["status"] for r in attempts]
        if seed == 0:
            assert not any("timing_inconsistent" in r["reason"] for r in attempts), statuses
            continue
        if (seed, timeout) in known_weak and "success" in statuses:
            lines.append(f"KNOWN WEAK (issue 30 open): {FORGED[seed]} at {timeout:g} s: "
                         f"{'/'.join(statuses)}")
            continue
        assert statuses and "success" not in statuses, (seed, timeout, statuses)
        for run in attempts:
            assert run["status"] in ("fail", "unverified"), run["status"]
            code = "timing_inconsistent" if run["status"] == "fail" else "timing_unverified"
            assert code in run["reason"], run["reason"]
            assert run["metrics"].get("bks_gap", {}).get("value") is None
            assert not run["metrics"]  # no figure from a reply that is no answer
        if seed == 3:  # named by the rule it breaks, whatever the host's load
            assert statuses == ["fail"]
            assert "past the maximum the driver declares" in attempts[0]["reason"]
        check = attempts[0]["check"]
        lines.append(f"{FORGED[seed]} at {timeout:g} s: {'/'.join(statuses)}, window "
                     f"{check.get('orchestrator_window_s', 0):.4f} s, allowed "
                     f"{check.get('allowance_s', 0) * 1e3:.3f} ms")
    return lines


@pytest.mark.serial  # "on a quiet host": alone, not beside another worker's campaign
@pytest.mark.slow
def test_forged_replies_are_never_an_answer_at_any_timeout(tmp_path):
    lines = assert_never_an_answer(forged_runs(tmp_path))
    assert len(lines) == 9
    print("\n".join(lines))


@pytest.mark.busy_host
@pytest.mark.serial
@pytest.mark.slow
def test_forged_replies_are_never_an_answer_with_every_core_busy(tmp_path, every_core_busy):
    # The 1 ms 10x-late reply passed as on time in CI (stop 40) while one slow echo held the
    # link's bound at its pool's extreme; the bound now reads the pool's body (link_probe).
    lines = assert_never_an_answer(forged_runs(tmp_path))
    assert len(lines) == 9
    print(f"{every_core_busy} busy loops\n" + "\n".join(lines))
