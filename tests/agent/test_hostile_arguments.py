"""Well-formed but hostile arguments never reach a driver: the agent answers ``bad_arguments``
naming the key (the contract of hilbench/contracts), and the next run works."""

from __future__ import annotations

import math

import pytest

from hilbench.wire.link import AgentError
from hilbench.workloads.qubo import SparseQubo, generate_qubo
from hilbench_drivers.cpu import CpuDriver
from tests.agent_thread import served

LOAD = {"workload": "qubo", "nodes": 12, "density": 0.2, "seed": 0, "solvers": ["sa"]}
RUN = {"workload": "qubo", "mode": "fixed_timeout", "solver": "sa", "timeout_s": 0.01,
       "seed": 0}
TTS = {"workload": "qubo", "mode": "time_to_solution", "solver": "sa", "target": -5,
       "gaps": [0.5], "max_time_s": 0.05, "seed": 0}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    driver = CpuDriver(rapl_root=str(tmp_path_factory.mktemp("no-powercap")))
    with served(driver, "cpu0") as link:
        yield link


CASES = [
    ("configure", {"num_sweeps": 1e300}, "num_sweeps"),
    ("configure", {"num_sweeps": -5}, "num_sweeps"),
    ("configure", {"num_sweeps": 10**9}, "num_sweeps"),
    ("configure", {"num_sweeps": True}, "num_sweeps"),
    ("run", {**TTS, "max_time_s": math.nan}, "max_time_s"),
    ("run", {**TTS, "max_time_s": 1e9}, "max_time_s"),
    ("run", {**TTS, "max_time_s": math.inf}, "max_time_s"),
    ("run", {**TTS, "gaps": [math.nan]}, "gaps[0]"),
    ("run", {**RUN, "timeout_s": math.nan}, "timeout_s"),
    ("run", {**RUN, "timeout_s": 1e9}, "timeout_s"),
    ("run", {**RUN, "timeout_s": -5.0}, "timeout_s"),
    ("run", {**RUN, "seed": -5}, "seed"),
    ("run", {**RUN, "seed": 1e300}, "seed"),
    ("run", {**RUN, "solver": "magic"}, "solver"),
    ("run", {**RUN, "timeout_s": "0.01"}, "timeout_s"),
    ("run", {k: v for k, v in RUN.items() if k != "seed"}, "seed"),
    ("run", {**RUN, "sweeps": 3}, "sweeps"),
    ("load", {**LOAD, "nodes": -5}, "nodes"),
    ("load", {**LOAD, "density": math.nan}, "density"),
    ("load", {**LOAD, "nodes": 13}, "payloads[0]"),
]


@pytest.mark.parametrize(("cmd", "body", "key"), CASES)
def test_hostile_arguments_are_refused_naming_the_key_and_the_next_run_works(
        client, cmd, body, key):
    matrix = generate_qubo(12, 0.2, 0)
    client.request("load", LOAD, [matrix], timeout_s=60)
    with pytest.raises(AgentError) as refused:
        client.request(cmd, body, [matrix] if cmd == "load" else [], timeout_s=30)
    assert refused.value.code == "bad_arguments"
    assert refused.value.detail.get("key") == key and f"'{key}'" in str(refused.value)
    reply = client.request("run", RUN, timeout_s=30)
    (state,) = reply.arrays
    assert reply.body["cost"] == SparseQubo.from_matrix(matrix).cost(state)
    assert client.request("configure", {}).body["detail"]["num_sweeps"] == 1000
