"""The simulated Xylo through real processes: pytest on xylo_env/ in the Xylo environment, and
an agent started with that environment's interpreter serving the ASC messages over ZeroMQ."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hilbench.orchestrator.client import AgentClient
from hilbench.orchestrator.spawn import spawn_announcing
from hilbench.wire.link import AgentError
from tests import side_envs
from tests.drivers.xylo.conftest import REPO, tiny_network_parts

HERE = Path(__file__).parent
pytestmark = pytest.mark.slow


@pytest.mark.timeout(1000)  # the Xylo environment's own run, given 900 s
def test_simulated_back_end_in_its_own_environment(xylo_python):
    if Path(xylo_python) == Path(sys.executable):
        pytest.skip("this interpreter has Rockpool: xylo_env/ is collected directly")
    python = side_envs.xylo_pytest()
    # addopts replaced: the main suite's (pytest-xdist's -n) need not exist in that environment
    run = subprocess.run(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "ignore",
         "-o", "addopts=-ra --strict-markers", str(HERE / "xylo_env")],
        cwd=REPO, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    assert " passed" in run.stdout.splitlines()[-1]


@pytest.fixture(scope="module")
def test_audio(tmp_path_factory):
    from hilbench.workloads.asc import load_split, make_fixture

    root = make_fixture(tmp_path_factory.mktemp("asc-fixture"), clips_per_class_train=1,
                        clips_per_class_test=1, extra_unlisted_per_class=0)
    split = load_split(root, "test", sample_rate=16000, limit=1)
    return split.slices[:3]


def test_single_stream_through_a_xylo_agent_process(xylo_python, tmp_path, test_audio):
    agent = spawn_announcing(
        "xylo agent", ["agent", "--driver", "xylo", "--bind", "tcp://127.0.0.1:*", "--id", "x0",
                       "-o", f"afe_cache={tmp_path / 'afe'}"], python=str(xylo_python))
    try:
        with AgentClient(agent.address, "x0", connect_timeout_s=30) as client:
            caps = client.info["capabilities"]
            assert caps["simulated"] is True and "XyloSim" in caps["simulation"]
            assert caps["asc"]["sample_capacity"] == 1
            net = tiny_network_parts()
            meta, arrays = net.metadata(), net.arrays()
            names = sorted(arrays)
            reply = client.request("load", {"workload": "asc", "part": "model", "meta": meta,
                                            "arrays": names}, [arrays[n] for n in names],
                                   timeout_s=120).body
            assert reply["detail"]["network_sha256"] == net.sha256  # a device extra (contracts)
            for index, audio in enumerate(test_audio):
                loaded = client.request("load", {"workload": "asc", "part": "sample",
                                                 "index": index}, [audio], timeout_s=120).body
                assert loaded["held"] == [index]
                if index == 0:
                    with pytest.raises(AgentError) as full:
                        client.request("load", {"workload": "asc", "part": "sample",
                                                "index": 7}, [audio], timeout_s=120)
                    assert full.value.code == "device_full"
                body = client.request("run", {"workload": "asc", "mode": "single_stream",
                                              "index": index}, timeout_s=60).body
                assert body["index"] == index and len(body["scores"]) == 4
                assert body["predicted"] == int(np.argmax(body["scores"]))
                assert body["preprocess_s"] is None and body["preprocess_reason"]
                assert 0 < body["inference_s"] <= body["t_end"] - body["t_start"] + 1e-6
                client.request("load", {"workload": "asc", "part": "unload", "index": index},
                               timeout_s=30)
            with pytest.raises(AgentError) as gone:
                client.request("run", {"workload": "asc", "mode": "single_stream",
                                       "index": 0}, timeout_s=30)
            assert gone.value.code == "not_loaded"
    finally:
        agent.stop()
    assert agent.process.poll() is not None
