"""A reply that breaks the QUBO contract fails that run with ``bad_reply`` naming the field; the
other units complete, the campaign ends with failures (exit 1), and a rerun resumes.

The agent is written from the protocol document alone (tests/spec_agent.py, here in a thread:
plain pyzmq and msgpack), so this is what any third-party agent gets.
"""

from __future__ import annotations

import pytest

from hilbench.orchestrator.campaign import parse_campaign
from hilbench.orchestrator.runner import CampaignRunner
from hilbench.store import Store
from tests.spec_agent import SpecAgent
from tests.subprocesses import unit_runs


def campaign(address: str):
    return parse_campaign({
        "agents": [{"id": "spec0", "driver": "spec", "address": address}],
        "qubo": [{"agent": "spec0", "nodes": [10], "densities": [0.2], "seeds": [0, 1, 2],
                  "solvers": ["anytime"], "timeouts_s": [0.01]}],
    }, "spec.toml")


FAULTS = [
    pytest.param(("omit", "actual_s"), id="missing-actual_s"),
    pytest.param(("type", "cost", "12"), id="cost-as-string"),
    pytest.param(("omit", "t_end"), id="missing-t_end", marks=pytest.mark.slow),
    pytest.param(("omit", "cost"), id="missing-cost", marks=pytest.mark.slow),
    pytest.param(("omit", "requested_s"), id="missing-requested_s", marks=pytest.mark.slow),
    pytest.param(("omit", "t_start"), id="missing-t_start", marks=pytest.mark.slow),
    pytest.param(("type", "actual_s", float("nan")), id="nan-actual_s", marks=pytest.mark.slow),
    pytest.param(("type", "t_start", None), id="null-t_start", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("fault", FAULTS)
def test_a_reply_breaking_the_contract_fails_only_its_run_and_resume_works(tmp_path, fault):
    db = tmp_path / "spec.sqlite"
    with SpecAgent(fault) as agent:
        outcome = CampaignRunner(campaign(agent.address), db).run()
        port = agent.port
    assert (outcome.completed, outcome.failed) == (2, 1)  # `hilbench run` exits 1
    with Store(db) as store:
        runs = {r["params"]["seed"]: r for r in unit_runs(store)}
    assert runs[0]["status"] == runs[2]["status"] == "success"
    assert runs[1]["status"] == "fail"
    assert "bad_reply" in runs[1]["reason"] and f"'{fault[1]}'" in runs[1]["reason"]
    # the agent fixed, at the same address: the same campaign resumes, running only the
    # failed unit
    with SpecAgent(None, port=port) as agent:
        again = CampaignRunner(campaign(agent.address), db).run()
    assert (again.skipped, again.completed, again.failed) == (2, 1, 0)


def test_the_spec_agent_is_written_from_the_spec_alone():
    """tests/spec_agent.py imports nothing of hilbench, so what it shows holds for any agent."""
    import ast
    from pathlib import Path

    source = Path(__file__).resolve().parents[1] / "spec_agent.py"
    imported = set()
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported <= {"__future__", "argparse", "os", "socket", "sys", "threading", "time",
                        "typing", "msgpack", "numpy", "zmq"}, imported
