"""Who may end or replace an agent's work: the session that owns it (issue 24)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from hilbench.orchestrator.client import AgentClient, AgentLost
from hilbench.wire import codec
from hilbench.wire.codec import Message
from hilbench.wire.link import AgentError
from tests.agent.test_runtime import raw_socket


def test_a_session_owns_the_agent_s_work(agent):
    """On any agent, keyed or not: stop, shutdown and device commands of another session are
    refused while the owner is known; the owner's shutdown says who asked."""
    with (
        AgentClient(agent.endpoint, "owner") as owner,
        AgentClient(agent.endpoint, "other") as other,
    ):
        owner.request("configure", {})
        for cmd, body, arrays in (
            ("stop", {}, None),
            ("shutdown", {}, None),
            ("load", {"workload": "sleep"}, [np.ones(3, np.float32)]),
            ("run", {"workload": "sleep", "seconds": 0}, None),
        ):
            with pytest.raises(AgentError) as info:
                other.request(cmd, body, arrays)
            assert info.value.code == "not_owner", cmd
        assert other.request("status").body["state"] == "idle"  # what any peer may ask
        reply = owner.request("shutdown").body
        assert reply["shutdown"] is True and f"session {owner.session}" in reply["by"]


def test_a_client_waiting_on_the_agent_hears_who_shut_it_down(agent):
    with AgentClient(agent.endpoint, "owner") as client:
        other = raw_socket(agent, session=client.session)  # e.g. the same user's second shell

        def shut_down_soon() -> None:
            time.sleep(0.3)
            other.send_multipart(codec.encode(Message(type="request", id="s", cmd="shutdown")))

        threading.Thread(target=shut_down_soon, daemon=True).start()
        reply = client.request("run", {"workload": "sleep", "seconds": 5})
        assert reply.body["stopped"] is True  # the shutdown ended the run early
        with pytest.raises(AgentLost) as info:
            client.request("status")
        assert info.value.shutdown_by is not None
        assert "shut down at the request of peer" in str(info.value)
        assert f"session {client.session}" in str(info.value)
        other.close()
