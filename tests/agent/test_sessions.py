"""Who may end or replace an agent's work: the session that owns it (issue 24)."""

from __future__ import annotations

import numpy as np
import pytest

from hilbench.orchestrator.client import AgentClient, AgentError


def test_a_session_owns_the_agent_s_work(agent):
    """On any agent, keyed or not: stop, shutdown and device commands of another session are
    refused while the owner is known; the owner's shutdown says who asked."""
    with (
        AgentClient(agent.endpoint, "owner") as owner,
        AgentClient(agent.endpoint, "other") as other,
    ):
        owner.request("configure", {})
        for cmd, arrays in (("stop", None), ("shutdown", None),
                            ("load", [np.ones(3, np.float32)])):
            with pytest.raises(AgentError) as info:
                other.request(cmd, {}, arrays)
            assert info.value.code == "not_owner", cmd
        assert other.request("status").body["state"] == "idle"  # what any peer may ask
        reply = owner.request("shutdown").body
        assert reply["shutdown"] is True and f"session {owner.session}" in reply["by"]
