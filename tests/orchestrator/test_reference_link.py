"""An agent's echoes are held to the orchestrator's own reference responder's: an agent cannot
widen the bound its timed requests are held to by slowing its echoes (R13a). The liar that does
so end to end is tests/procedures/test_asc_forged_stages.py's "slow echoes"."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hilbench.orchestrator.campaign import CampaignError, parse_campaign
from hilbench.orchestrator.client import AgentClient
from hilbench.orchestrator.reference_link import ReferenceLink
from hilbench.wire.link import AgentError
from hilbench.wire.link_probe import REFERENCE_FACTOR, Echo, LinkBound
from tests import orphans
from tests.campaign_toml import TEST_TIMING_ATTEMPTS

REFERENCE = LinkBound.of([1e-4] * 20 + [3e-4] * 3 + [2e-3], 1024, 24)


def _pool(median_s: float, slowest_s: float) -> LinkBound:
    return LinkBound.of([median_s] * 23 + [slowest_s], 1024, 24)


def test_an_agent_within_the_factor_keeps_its_own_echoes_and_records_the_reference():
    own = _pool(REFERENCE_FACTOR * REFERENCE.median_s * 0.9, 3e-3)
    held = own.against(REFERENCE)
    assert held.own is None and held.bound_s == own.bound_s
    assert held.reference == REFERENCE
    assert LinkBound.from_dict(held.to_dict()) == held


def test_slow_echoes_give_the_reference_bound_and_name_both_medians():
    slowed = _pool(25e-3, 26e-3)  # every echo delayed 25 ms
    held = slowed.against(REFERENCE)
    assert held.own == slowed
    slack = (REFERENCE_FACTOR - 1) * REFERENCE.median_s
    assert held.bound_s == pytest.approx(REFERENCE.bound_s + 2 * slack)  # quantile and fastest
    assert held.tail_q99_s < 2e-3 < slowed.tail_q99_s
    assert "25.000 ms" in held.describe() and "0.100 ms" in held.describe()
    again = LinkBound.from_dict(held.to_dict())
    assert again == held and again.held_reason() == held.held_reason()


def test_a_declared_budget_is_the_network_share_a_remote_agent_may_add():
    remote = _pool(2e-3, 2.5e-3)  # a LAN's round trip on top of the agent's path
    assert remote.against(REFERENCE).own is not None
    budgeted = remote.against(REFERENCE, budget_s=2e-3)
    assert budgeted.own is None and budgeted.budget_s == 2e-3


def test_a_phase_recorded_before_the_reference_is_checked_as_it_was():
    own = _pool(25e-3, 26e-3)
    assert own.against(None) is own
    data = own.to_dict()
    assert "reference" not in data and LinkBound.from_dict(data) == own


def test_the_reference_responder_answers_real_echoes():
    link = ReferenceLink()
    try:
        bound = link.bound(Echo(4096, work_s=2e-3))
        assert bound.source == "reference" and bound.echoes >= 24
        assert bound.payload_bytes == 4096 and bound.idle_s == 2e-3
        assert 0 < bound.min_s <= bound.median_s <= bound.q99_s
    finally:
        link.close()


def test_a_quarter_or_more_of_the_echoes_slowed_holds_it_by_their_75th_percentile():
    """The typical checks read the pool's body: a third of the echoes slowed leaves the median
    and lifts the 75th percentile, so that is compared too, and named."""
    some = LinkBound.of([1e-4] * 16 + [25e-3] * 8, 1024, 24)
    assert some.median_s <= REFERENCE_FACTOR * REFERENCE.median_s  # the median says nothing
    held = some.against(REFERENCE)
    assert held.own == some and held.tail_q99_s < some.tail_q99_s
    assert "(75th percentile)" in held.held_reason() and "25.000 ms" in held.held_reason()
    assert LinkBound.from_dict(held.to_dict()).held_reason() == held.held_reason()
    few = LinkBound.of([1e-4] * 22 + [25e-3] * 2, 1024, 24)  # its body and median untouched
    assert few.against(REFERENCE).own is None and few.tail_q99_s < 1e-3


def test_the_reference_is_a_process_of_its_own_that_only_its_orchestrator_reaches():
    link = ReferenceLink()
    try:
        link.bound(Echo(1024))
        process = link._process
        assert process is not None and process.process.pid != os.getpid()
        stranger = AgentClient(process.address, "stranger", connect_timeout_s=1.0)
        with pytest.raises((AgentError, TimeoutError, ConnectionError)):  # no key: no answer
            stranger.connect()
        stranger.close()
    finally:
        link.close()
    assert orphans.alive_after([process.process.pid], 5.0) == []


def test_the_reference_ends_with_its_orchestrator_even_a_killed_one():
    script = ("from hilbench.orchestrator.reference_link import reference\n"
              "from hilbench.wire.link_probe import Echo\n"
              "import time\n"
              "reference().bound(Echo(1024))\n"
              "print(reference()._process.process.pid, reference()._process.log_path, "
              "flush=True)\n"
              "time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        pid, log = parent.stdout.readline().split()
        child = int(pid)
        assert orphans.alive([child]) == [child] and Path(log).exists()
    finally:
        parent.kill()
        parent.wait(10)
    assert orphans.alive_after([child], 5.0) == []
    assert not Path(log).exists()  # it held nothing: gone, as after a clean stop


def test_a_stop_signal_during_a_reference_call_never_holds_the_exit():
    """The reference's calls run on a daemon thread: Ctrl-C while one is under way (here a call
    stuck for a minute) ends the process at once; a thread pool's worker held it to the end of
    the call (CI saw `hilbench run` outlive a SIGINT by 60 s)."""
    script = ("import os, signal, threading, time\n"
              "from hilbench.orchestrator.reference_link import ReferenceLink\n"
              "from hilbench.wire.link_probe import Echo\n"
              "ReferenceLink._measure = lambda self, echo: time.sleep(60)\n"
              # an xdist worker ignores SIGINT, and its children inherit that
              "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
              "threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
              "try:\n"
              "    ReferenceLink().bound(Echo(1024))\n"
              "except KeyboardInterrupt:\n"
              "    print('interrupted', flush=True)\n")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=50)
    assert done.stdout == "interrupted\n", done.stderr
    assert time.monotonic() - started < 10


def test_the_budget_is_read_from_the_campaign_and_checked():
    base = {"qubo": [{"scenario": "fixed_timeout", "nodes": [10], "densities": [0.1],
                      "seeds": [0], "solvers": ["tabu"], "timeouts_s": [0.001]}]}
    agent = {"id": "far", "driver": "cpu", "address": "tcp://127.0.0.1:5999"}
    spec = parse_campaign({**base, "agents": [{**agent, "link_budget_ms": 3}]}).agents[0]
    assert spec.link_budget_ms == 3
    with pytest.raises(CampaignError, match="link_budget_ms"):
        parse_campaign({**base, "agents": [{**agent, "link_budget_ms": -1}]}, "bad.toml")


@pytest.mark.serial  # holds an honest agent's echoes within the reference's factor: alone
def test_a_campaign_run_stores_the_reference_and_the_declared_budget_with_each_timed_phase(
        tmp_path):
    from hilbench.orchestrator.runner import CampaignRunner
    from hilbench.store import Store
    from tests.orchestrator.test_campaign_run import unit_runs

    campaign = parse_campaign({
        "campaign": {"timing_attempts": TEST_TIMING_ATTEMPTS},
        "agents": [{"id": "cpu0", "driver": "cpu", "spawn": True, "link_budget_ms": 2}],
        "qubo": [{"scenario": "fixed_timeout", "nodes": [10], "densities": [0.1],
                  "seeds": [0], "solvers": ["tabu"], "timeouts_s": [0.001]}],
    }, "budget.toml")
    db = tmp_path / "budget.sqlite"
    assert CampaignRunner(campaign, db).run().completed == 1
    with Store(db) as store:
        links = [p["clock_offsets"]["cpu0"]["link"] for r in unit_runs(store)
                 for p in store.phases(r["uid"]) if p["clock_offsets"]["cpu0"].get("link")]
    assert links
    for link in links:
        assert link["budget_s"] == 0.002 and link["reference"]["source"] == "reference"
        assert "own" not in link  # an honest agent on this host: its own echoes, well within
