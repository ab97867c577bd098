"""One typed contract per workload, used on both sides of the wire.

- :mod:`.base`: strict Structs, bounded number types, :class:`~.base.ContractError`;
- :mod:`.qubo`, :mod:`.asc`: request bodies, replies, capabilities and the role Protocols
  (:class:`~.qubo.QuboSolver`, :class:`~.asc.AscDevice`) drivers implement;
- :mod:`.capabilities`: the handshake's capabilities and ``configure`` settings;
- :mod:`.messages`: which contract a request and its reply follow;
- :mod:`.remote`: the orchestrator's handles implementing the roles over an agent link;
- :mod:`.local`: the same roles over a driver in this process (``qubo solve``, tests).

``protocols/agent-protocol.md``'s workload tables and ``protocols/vectors`` are generated from
these Structs (``python protocols/make_agent_vectors.py``).
"""
