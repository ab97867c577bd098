"""A campaign reaching a keyed agent process over CurveZMQ, and the key mistakes it refuses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hilbench.store import Store
from hilbench.wire import keys

QUBO = """
[[qubo]]
agent = "cpu0"
scenario = "fixed_timeout"
nodes = [10]
densities = [0.1]
seeds = [0]
solvers = ["sa"]
timeouts_s = [0.01]
"""


def hilbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "hilbench", *args], capture_output=True, text=True, timeout=180
    )


@pytest.fixture
def bench(tmp_path):
    """Keys for an orchestrator and an agent, and a keyed agent process obeying the former."""
    keydir = tmp_path / "keys"
    for name in ("orchestrator", "cpu0", "stranger"):
        keys.generate(name, keydir)
    obeys = keydir / "orchestrators"
    obeys.mkdir()
    (obeys / "orchestrator.key").write_bytes((keydir / "orchestrator.key").read_bytes())
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hilbench",
            "agent",
            "--driver",
            "cpu",
            "--id",
            "cpu0",
            "--bind",
            "tcp://127.0.0.1:0",
            "--key",
            str(keydir / "cpu0.key_secret"),
            "--authorized",
            str(obeys),
            "--announce",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("READY "), line
    yield tmp_path, line.split()[1]
    proc.kill()
    proc.wait(10)


def campaign(tmp_path: Path, address: str, agent_key: str | None, head_key: str | None) -> Path:
    head = '[campaign]\nname = "keyed"\nconnect_timeout_s = 2\n'
    if head_key:
        head += f'key = "{head_key}"\n'
    agent = f'[[agents]]\nid = "cpu0"\ndriver = "cpu"\naddress = "{address}"\n'
    if agent_key:
        agent += f'key = "{agent_key}"\n'
    path = tmp_path / "keyed.toml"
    path.write_text(head + agent + QUBO)
    return path


def test_a_campaign_with_the_agents_key_runs_over_curve(bench):
    tmp_path, address = bench
    path = campaign(tmp_path, address, "keys/cpu0.key", "keys/orchestrator.key_secret")
    db = tmp_path / "r.sqlite"
    done = hilbench("run", str(path), "--db", str(db), "-q")
    assert done.returncode == 0, done.stderr
    with Store(db) as store:
        assert [r["status"] for r in store.runs()] == ["success"]


def test_a_campaign_holding_the_wrong_agent_key_is_unreachable(bench):
    tmp_path, address = bench
    path = campaign(tmp_path, address, "keys/stranger.key", "keys/orchestrator.key_secret")
    done = hilbench("run", str(path), "--db", str(tmp_path / "r.sqlite"), "-q")
    assert done.returncode == 3
    assert "did not answer the handshake" in done.stderr


def test_plaintext_campaign_gets_nothing_from_a_keyed_agent(bench):
    tmp_path, address = bench
    done = hilbench(
        "run",
        str(campaign(tmp_path, address, None, None)),
        "--db",
        str(tmp_path / "r.sqlite"),
        "-q",
    )
    assert done.returncode == 3
    assert "keyed agent answers nothing to a client without keys" in done.stderr


@pytest.mark.parametrize(
    "agent_key, head_key, message",
    [
        ("keys/cpu0.key", None, "[[agents]] #1 key: an agent key needs [campaign] key"),
        (
            "keys/none.key",
            "keys/orchestrator.key_secret",
            "[[agents]] #1 key: cannot read key file",
        ),
        ("keys/cpu0.key", "keys/orchestrator.key", "[campaign] key: "),
    ],
    ids=["agent-key-without-own-key", "missing-file", "public-key-as-secret"],
)
def test_key_mistakes_are_refused_before_anything_starts(tmp_path, agent_key, head_key, message):
    for name in ("orchestrator", "cpu0"):
        keys.generate(name, tmp_path / "keys")
    path = campaign(tmp_path, "tcp://127.0.0.1:9", agent_key, head_key)
    done = hilbench("campaign", "check", str(path))
    assert done.returncode == 2
    assert f"{path} {message}" in done.stderr
