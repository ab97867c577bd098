"""A spawned agent obeys only the orchestrator that spawned it: a local process that sends
`shutdown`, `stop` and `load` mid-campaign changes nothing (issue 24)."""

from __future__ import annotations

import subprocess
import time

import numpy as np
import psutil
import pytest
import zmq

from hilbench.orchestrator.client import AgentClient, AgentUnreachable
from hilbench.store import Store
from hilbench.wire import codec
from hilbench.wire.codec import Message
from tests.campaign_toml import agent, campaign, qubo
from tests.subprocesses import hilbench_command, unit_runs

PROTO_V = codec.PROTOCOL_VERSION  # the protocol version these messages speak

pytestmark = pytest.mark.slow


def _spawned_agent_endpoint(proc: subprocess.Popen, deadline: float) -> str:
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        for child in psutil.Process(proc.pid).children(recursive=True):
            try:
                if "--key-fd" not in child.cmdline():
                    continue
                listening = [c for c in child.net_connections("tcp") if c.status == "LISTEN"]
            except psutil.Error:
                continue
            if listening:
                return f"tcp://127.0.0.1:{listening[0].laddr.port}"
        time.sleep(0.05)
    raise AssertionError("the spawned agent never listened")


def _foreign_commands(endpoint: str) -> None:
    """What any local process can try: a client without the campaign's keys, and raw frames."""
    with pytest.raises(AgentUnreachable):
        AgentClient(endpoint, "intruder", connect_timeout_s=1).connect()
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.linger = 0
    sock.connect(endpoint)
    sock.send_multipart(codec.encode(Message(type="hello", id="h", body={"versions": [PROTO_V]})))
    for i, (cmd, arrays) in enumerate(
        (("shutdown", []), ("stop", []), ("load", [np.zeros((10, 10), np.int8)]))
    ):
        body = {"workload": "qubo", "nodes": 10, "density": 0.1, "seed": 9} if arrays else {}
        msg = Message(type=codec.REQUEST, id=f"x{i}", cmd=cmd, body=body, arrays=arrays)
        sock.send_multipart(codec.encode(msg))
    assert not sock.poll(500)  # not a word back: the agent admits only the campaign's key
    sock.close()
    ctx.term()


def test_a_foreign_shutdown_stop_and_load_do_not_touch_a_campaign(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(campaign(agent(), qubo(seeds=list(range(12)), timeouts_s=[0.1]), name="f"))
    db = tmp_path / "r.sqlite"
    proc = subprocess.Popen(hilbench_command("run", path, "--db", db, "-q"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        endpoint = _spawned_agent_endpoint(proc, time.monotonic() + 90)
        _foreign_commands(endpoint)
        _out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    with Store(db) as store:
        runs = unit_runs(store)
    assert len(runs) == 12 and {r["status"] for r in runs} == {"success"}, runs
