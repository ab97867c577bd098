"""A campaign reaching a keyed agent process over CurveZMQ, and the key mistakes it refuses."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from hilbench.store import Store
from hilbench.wire import keys
from tests.campaign_toml import agent, campaign, qubo, write_campaign
from tests.ports import worker_port
from tests.subprocesses import (
    announced_agent,
    hilbench,
    hilbench_command,
    run_campaign,
    start_campaign,
    stop,
    unit_runs,
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
    with announced_agent(
        "--driver", "cpu", "--id", "cpu0", "--bind", "tcp://127.0.0.1:0",
        "--key", keydir / "cpu0.key_secret", "--authorized", obeys,
    ) as (_proc, endpoint):
        yield tmp_path, endpoint


def keyed_campaign(
    tmp_path: Path, address: str, agent_key: str | None, head_key: str | None
) -> Path:
    """One QUBO run on the agent at ``address``, with the key files given (None: no key)."""
    text = campaign(
        agent(spawn=False, address=address, key=agent_key),
        qubo(scenario="fixed_timeout"),
        name="keyed",
        connect_timeout_s=2,
        key=head_key,
    )
    return write_campaign(tmp_path, text, "keyed.toml")


@pytest.mark.slow
def test_a_campaign_with_the_agents_key_runs_over_curve(bench):
    tmp_path, address = bench
    path = keyed_campaign(tmp_path, address, "keys/cpu0.key", "keys/orchestrator.key_secret")
    db = tmp_path / "r.sqlite"
    done = run_campaign(path, db)
    assert done.returncode == 0, done.stderr
    with Store(db) as store:
        assert [r["status"] for r in unit_runs(store)] == ["success"]


@pytest.mark.slow
def test_a_campaign_holding_the_wrong_agent_key_is_unreachable(bench):
    tmp_path, address = bench
    path = keyed_campaign(tmp_path, address, "keys/stranger.key", "keys/orchestrator.key_secret")
    done = run_campaign(path, tmp_path / "r.sqlite")
    assert done.returncode == 3
    assert "did not answer the handshake" in done.stderr


@pytest.mark.slow
def test_plaintext_campaign_gets_nothing_from_a_keyed_agent(bench):
    tmp_path, address = bench
    done = run_campaign(keyed_campaign(tmp_path, address, None, None), tmp_path / "r.sqlite")
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
    path = keyed_campaign(tmp_path, "tcp://127.0.0.1:9", agent_key, head_key)
    done = hilbench("campaign", "check", str(path))
    assert done.returncode == 2
    assert f"{path} {message}" in done.stderr


def dial_in_campaign(tmp_path: Path, listen: str, **head: Any) -> Path:
    """One QUBO run on an agent that dials in to ``listen``; ``head`` adds [campaign] keys, and
    head key = "…" gives the dialling agent keys/cpu0.key."""
    dialling = agent(spawn=False, connects=True,
                     key="keys/cpu0.key" if head.get("key") else None)
    text = campaign(dialling, qubo(), name="dial", listen=listen, listen_timeout_s=60, **head)
    return write_campaign(tmp_path, text, "dial.toml")


@pytest.mark.slow
def test_keyless_listener_reachable_from_other_hosts_is_refused_at_load(tmp_path):
    path = dial_in_campaign(tmp_path, "tcp://0.0.0.0:5600")
    db = tmp_path / "r.sqlite"
    for done in (hilbench("campaign", "check", path), run_campaign(path, db)):
        assert done.returncode == 2, done.stderr
        assert (f"{path} [campaign] listen: 'tcp://0.0.0.0:5600' can be reached from other hosts"
                in done.stderr)
        assert "[campaign] insecure = true" in done.stderr
    assert not db.exists()  # refused before anything started


@pytest.mark.parametrize(
    "listen, head",
    [
        ("tcp://127.0.0.1:5600", {}),
        ("tcp://0.0.0.0:5600", {"key": "keys/orchestrator.key_secret"}),
        ("tcp://0.0.0.0:5600", {"insecure": True}),
    ],
    ids=["loopback", "keyed", "marked-insecure"],
)
@pytest.mark.slow
def test_listeners_the_agent_rule_allows_pass_the_check(tmp_path, listen, head):
    for name in ("orchestrator", "cpu0"):
        keys.generate(name, tmp_path / "keys")
    done = hilbench("campaign", "check", dial_in_campaign(tmp_path, listen, **head))
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_an_insecure_listener_runs_and_says_so_loudly(tmp_path):
    port = worker_port()
    path = dial_in_campaign(tmp_path, f"tcp://0.0.0.0:{port}", insecure=True)
    run = start_campaign(path, tmp_path / "r.sqlite")
    dialler = subprocess.Popen(
        hilbench_command("agent", "--driver", "cpu", "--connect", f"tcp://127.0.0.1:{port}",
                         "--id", "cpu0"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        _out, err = run.communicate(timeout=120)
    finally:
        stop(dialler)
        stop(run)
    assert run.returncode == 0, err
    assert f"INSECURE: listening for agents on tcp://0.0.0.0:{port} in plaintext" in err
