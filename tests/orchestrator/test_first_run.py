"""An honest agent's first run is verified at its first attempt: what the agent does once, at
its first request, stays out of the orchestrator's window (hilbench.contracts.base.prepare)."""

from __future__ import annotations

import pytest

from hilbench.store import Store
from tests.campaign_toml import agent, campaign, qubo, write_campaign
from tests.subprocesses import run_campaign

pytestmark = pytest.mark.slow


@pytest.mark.serial  # holds honest replies to the link's measured bound: alone
def test_an_honest_agents_first_run_is_verified_at_its_first_attempt(tmp_path):
    # Each campaign starts its own agent, whose first run is the campaign's first. msgspec built
    # a contract's conversion at its first use: 1 ms outside a 10 ms claim, and each of these
    # first runs came out unverified (6 of 6 on an idle machine) before a second attempt.
    firsts = []
    for i in range(3):
        path = write_campaign(tmp_path, campaign(agent(), qubo(), name=f"first-{i}"),
                              name=f"first-{i}.toml")
        db = tmp_path / f"first-{i}.sqlite"
        done = run_campaign(path, db)
        assert done.returncode == 0, done.stderr
        with Store(db) as store:
            first = store.runs()[0]  # in the order they ran
        firsts.append(f"{first['status']} {first['reason']}".strip())
    # A loaded moment may still delay one honest reply past its bound, as for any run.
    assert sum(first == "success" for first in firsts) >= 2, firsts
