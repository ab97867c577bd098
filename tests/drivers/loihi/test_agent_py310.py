"""The loihi agent on the Loihi host's Python (3.10, the Lava environment), driven over real
ZeroMQ from this orchestrator: a hang is killed, the run fails with the reason, and the same
agent serves the next request."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from hilbench.orchestrator.client import AgentClient
from hilbench.wire.link import AgentError
from hilbench.workloads.qubo import SparseQubo, generate_qubo
from tests.subprocesses import announced_agent

pytestmark = pytest.mark.slow


@pytest.fixture
def agent(lava_python):
    with announced_agent(
        "--driver", "loihi", "--bind", "tcp://127.0.0.1:*", "--id", "loihi0",
        "-o", "allow_inject=1",
        "-o", "margin_s=1",  # the hang is killed 1 s past its budget
        python=lava_python,
    ) as started:
        yield started


def test_agent_runs_on_python_3_10_and_survives_a_hung_lava_run(agent, lava_python):
    version = subprocess.run(
        [lava_python, "-c", "import sys; print(sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert version == "(3, 10)"
    matrix = generate_qubo(25, 0.05, 0)
    process, address = agent
    with AgentClient(address) as client:
        caps = client.info["capabilities"]
        assert caps["simulated"] is True and "Lava CPU back end" in caps["simulation"]
        client.request("load", {"workload": "qubo", "nodes": 25, "density": 0.05, "seed": 0},
                       [matrix], timeout_s=120)
        client.request("configure", {"inject": "hang"})  # a test fault for the next run
        with pytest.raises(AgentError) as caught:
            client.request(
                "run",
                {"workload": "qubo", "mode": "fixed_timeout", "solver": "lava", "timeout_s": 0.2,
                 "seed": 0},
                timeout_s=120,
            )
        assert caught.value.code == "timeout" and "killed" in str(caught.value)
        assert client.request("status").body["state"] == "idle"
        # a loaded machine slows Lava after calibration: no kill for the run that must succeed
        client.request("configure", {"margin_s": 30})
        reply = client.request(
            "run", {"workload": "qubo", "mode": "fixed_timeout", "solver": "lava",
                    "timeout_s": 0.5, "seed": 0}, timeout_s=120
        )
        (state,) = reply.arrays
        assert reply.body["cost"] == SparseQubo.from_matrix(matrix).cost(state)
        assert state.dtype == np.int8
        client.request("shutdown")
    assert process.wait(timeout=10) == 0
