"""The typed wire contract's core, used on both sides of the wire; each workload's own Structs
and role Protocols live in its package (``hilbench/workloads/<name>/contract.py``) and join
through the registry.

- :mod:`.base`: strict Structs, bounded number types, :class:`~.base.ContractError`;
- :mod:`.registry`: the installed workloads (``hilbench.workloads`` entry points);
- :mod:`.capabilities`: the handshake's capabilities and ``configure`` settings;
- :mod:`.messages`: which contract a request and its reply follow;
- :mod:`.remote`: the orchestrator's device handle over an agent link, which each workload's
  role wraps (``hilbench/workloads/<name>/remote.py``).

``protocols/agent-protocol.md``'s workload tables and ``protocols/vectors`` are generated from
these Structs (``python protocols/make_agent_vectors.py``).
"""
