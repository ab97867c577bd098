"""Waiting for agents: the handshake wait is the configured one (not cut short by the liveness
rule), and the message states the time actually waited."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from hilbench.orchestrator.client import AgentClient, AgentUnreachable
from tests.campaign_toml import agent, campaign, qubo, write_campaign
from tests.ports import worker_port
from tests.subprocesses import run_campaign


def free_port() -> int:
    """A port for the orchestrator to listen on, no other worker's (tests/ports.py)."""
    return worker_port()


@contextmanager
def silent_port() -> Iterator[int]:
    """A port nobody answers on while the block runs: bound here and not listening, so no
    other test's agent (they run in parallel) can take it, and a connection is refused. A port
    only probed free was taken by another worker's agent in CI, which then answered."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def test_handshake_waits_the_whole_timeout_and_says_how_long():
    # Liveness alone would give up after 0.1 s × 3; the handshake timeout is 1 s.
    with silent_port() as port:
        client = AgentClient(f"tcp://127.0.0.1:{port}", "silent", heartbeat_s=0.1,
                             liveness=3, connect_timeout_s=1.0)
        started = time.monotonic()
        with pytest.raises(AgentUnreachable) as exc:
            client.connect()
        waited = time.monotonic() - started
    assert waited >= 1.0
    stated = float(re.search(r"within (\d+\.\d) s", str(exc.value)).group(1))
    assert abs(stated - waited) <= 0.15


@pytest.mark.slow
def test_campaign_connect_timeout_is_used_and_stated(tmp_path):
    with silent_port() as port:
        far = agent("far", spawn=False, address=f"tcp://127.0.0.1:{port}")
        path = write_campaign(tmp_path, campaign(far, qubo(agent=None), connect_timeout_s=1.5))
        proc = run_campaign(path, tmp_path / "t.sqlite", timeout=60)
    assert proc.returncode == 3
    assert re.search(r"agent far at tcp://127\.0\.0\.1:\d+ did not answer the handshake within "
                     r"1\.[5-9] s", proc.stderr), proc.stderr


@pytest.mark.slow
def test_campaign_listen_timeout_is_used_and_stated(tmp_path):
    late = agent("late", spawn=False, connects=True)
    path = write_campaign(
        tmp_path,
        campaign(late, qubo(agent=None), listen=f"tcp://127.0.0.1:{free_port()}",
                 listen_timeout_s=1.0),
    )
    started = time.monotonic()
    proc = run_campaign(path, tmp_path / "t.sqlite", timeout=60)
    assert proc.returncode == 3
    assert "agent 'late' did not connect to tcp://127.0.0.1:" in proc.stderr
    assert "within 1.0 s" in proc.stderr
    assert time.monotonic() - started < 30  # not the 120 s default
