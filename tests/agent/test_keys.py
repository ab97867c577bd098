"""CurveZMQ on real sockets: only authorised keys get answers; plaintext stays on loopback."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading

import pytest
import zmq

from hilbench.agent.runtime import AgentRuntime, InsecureAddress
from hilbench.orchestrator.client import AgentClient, AgentUnreachable
from hilbench.orchestrator.listener import AgentListener
from hilbench.wire import codec, keys
from hilbench.wire.codec import Message
from tests.agent.conftest import SleepyDriver
from tests.agent_thread import serving

PROTO_V = codec.PROTOCOL_VERSION  # the protocol version these messages speak


@pytest.fixture(scope="module")
def keydir(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    for name in ("orchestrator", "agent", "stranger", "other_agent"):
        keys.generate(name, d)
    authorized = d / "authorized"
    authorized.mkdir()
    (authorized / "orchestrator.key").write_bytes((d / "orchestrator.key").read_bytes())
    return d


@pytest.fixture
def keyed_agent(keydir):
    runtime = AgentRuntime(
        SleepyDriver(),
        "keyed",
        bind="tcp://127.0.0.1:*",
        heartbeat_s=0.1,
        liveness=5,
        key=keys.load_pair(keydir / "agent.key_secret"),
        authorized=keys.load_authorized(keydir / "authorized"),
    )
    with serving(runtime):
        yield runtime


def client(runtime, keydir, who: str | None) -> AgentClient:
    pair = keys.load_pair(keydir / f"{who}.key_secret") if who else None
    agent_key = keys.load_public(keydir / "agent.key") if who else None
    return AgentClient(
        runtime.endpoint,
        heartbeat_s=0.1,
        liveness=5,
        connect_timeout_s=1.0,
        key=pair,
        agent_key=agent_key,
    )


def test_generate_writes_pyzmq_certificates_with_an_owner_only_secret(keydir):
    public, secret = keydir / "agent.key", keydir / "agent.key_secret"
    assert stat.S_IMODE(os.stat(secret).st_mode) == 0o600
    pub, sec = zmq.auth.load_certificate(str(secret))
    assert sec is not None and zmq.auth.load_certificate(str(public)) == (pub, None)
    with pytest.raises(keys.KeyFileError, match="already exists"):
        keys.generate("agent", keydir)


def test_authorised_key_gets_a_welcome_naming_the_agent_key(keyed_agent, keydir):
    with client(keyed_agent, keydir, "orchestrator") as c:
        assert c.info["key_fingerprint"] == keys.load_pair(keydir / "agent.key_secret").fingerprint
        assert c.request("status").body["state"] == "idle"


def test_unknown_key_gets_nothing(keyed_agent, keydir):
    with pytest.raises(AgentUnreachable, match="did not answer the handshake"):
        client(keyed_agent, keydir, "stranger").connect()
    # the agent goes on serving its orchestrator
    with client(keyed_agent, keydir, "orchestrator") as c:
        assert c.request("echo", {"x": 1}).body == {"x": 1}


def test_plaintext_to_a_keyed_agent_gets_nothing(keyed_agent, keydir):
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(keyed_agent.endpoint)
    sock.send_multipart(codec.encode(Message(type="hello", id="1", body={"versions": [PROTO_V]})))
    assert sock.poll(1000) == 0  # not even a heartbeat or an error
    sock.close()
    with pytest.raises(AgentUnreachable):
        client(keyed_agent, keydir, None).connect()


def test_without_keys_an_agent_refuses_addresses_other_hosts_can_reach():
    for address in ("tcp://0.0.0.0:5555", "tcp://*:5555", "tcp://eth0:5555"):
        with pytest.raises(InsecureAddress, match="--insecure"):
            AgentRuntime(SleepyDriver(), bind=address)
    with pytest.raises(InsecureAddress):
        AgentRuntime(SleepyDriver(), connect="tcp://192.0.2.1:6000")
    for address in ("tcp://127.0.0.1:5555", "tcp://localhost:1", "tcp://[::1]:2", "ipc:///tmp/x"):
        AgentRuntime(SleepyDriver(), bind=address)  # loopback: fine
    assert AgentRuntime(SleepyDriver(), bind="tcp://0.0.0.0:5555", insecure=True).insecure


def _agent_cli(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hilbench", "agent", "--driver", "cpu", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow
def test_cli_refuses_0_0_0_0_without_keys_and_names_the_way_out():
    done = _agent_cli("--bind", "tcp://0.0.0.0:0")
    assert done.returncode == 2
    assert "refusing plaintext on tcp://0.0.0.0:0" in done.stderr
    assert "--insecure" in done.stderr and "Traceback" not in done.stderr


def _start_agent_process(*args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "hilbench", "agent", "--driver", "cpu", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline()


@pytest.mark.slow
def test_cli_prints_endpoint_driver_and_key_fingerprint_at_start(keydir, tmp_path):
    log_file = tmp_path / "agent.log"
    proc, line = _start_agent_process(
        "--bind",
        "tcp://127.0.0.1:0",
        "--id",
        "a1",
        "--key",
        str(keydir / "agent.key_secret"),
        "--authorized",
        str(keydir / "authorized"),
        "--log-file",
        str(log_file),
    )
    try:
        fp = keys.load_pair(keydir / "agent.key_secret").fingerprint
        assert line.startswith("agent a1: driver cpu, listening on tcp://127.0.0.1:")
        assert f"key fingerprint {fp}, 1 authorized key(s)" in line
        assert line.strip() in log_file.read_text()
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.slow
def test_cli_insecure_says_so_loudly():
    proc, line = _start_agent_process("--bind", "tcp://0.0.0.0:0", "--insecure")
    try:
        assert "NO KEY (--insecure" in line
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert "INSECURE" in err


def test_keyed_listener_admits_only_the_agents_own_keys(keydir):
    orchestrator = keys.load_pair(keydir / "orchestrator.key_secret")
    listener = AgentListener(
        heartbeat_s=0.1,
        liveness=5,
        handshake_timeout_s=2.0,
        key=orchestrator,
        agent_keys={
            "a1": keys.load_public(keydir / "agent.key"),
            "a2": keys.load_public(keydir / "other_agent.key"),
        },
    )
    listener.start()
    started = []

    def dial(agent_id: str, key_name: str) -> None:
        runtime = AgentRuntime(
            SleepyDriver(),
            agent_id,
            connect=listener.endpoint,
            heartbeat_s=0.1,
            liveness=5,
            key=keys.load_pair(keydir / f"{key_name}.key_secret"),
            server_key=orchestrator.public,
        )
        thread = threading.Thread(target=runtime.serve, daemon=True)
        thread.start()
        started.append((runtime, thread))

    try:
        dial("a1", "agent")
        dial("intruder", "stranger")  # unknown key: never heard
        dial("a2", "agent")  # a known key, but a1's, claiming to be a2: ignored
        link = listener.wait_for("a1", timeout_s=5)
        assert link.request("echo", {"k": 1}).body == {"k": 1}
        with pytest.raises(AgentUnreachable):
            listener.wait_for("a2", timeout_s=1)
        assert listener.agents() == ["a1"]
    finally:
        for runtime, thread in started:
            runtime.request_shutdown()
            thread.join(5)
        listener.close()
