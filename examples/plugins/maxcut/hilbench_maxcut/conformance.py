"""The maxcut driver conformance cases (``hilbench.testing.driver_conformance.check_driver``
runs them for a driver that declares maxcut): load a graph, cut it with every declared
solver, the partition re-scored against the claimed cut, the timed region sane, and the
refusals the contract asks for."""

from __future__ import annotations

from typing import Any

from hilbench.testing.driver_conformance import Suite, refused_key
from hilbench_maxcut.contract import (
    MaxCutCapabilities,
    MaxCutLoad,
    MaxCutLoadReply,
    MaxCutRun,
    MaxCutRunReply,
)
from hilbench_maxcut.solver import cut_size, graph_edges


def check_maxcut(suite: Suite, device: Any, caps: MaxCutCapabilities, *,
                 maxcut_nodes: int = 16, **_: Any) -> None:
    edges = graph_edges(maxcut_nodes, 0.3, 0)
    load = MaxCutLoad(workload="maxcut", nodes=maxcut_nodes, edges=len(edges))
    loaded = suite.check("maxcut: load", lambda: device.call("load", load, [edges], 60.0)[0])
    if loaded is None:
        return
    suite.check("maxcut: the load reply names the graph", lambda: _loaded(loaded, load))
    for name in caps.solvers:
        got = suite.check(f"maxcut {name}: cut", lambda name=name: device.call(
            "run", MaxCutRun(workload="maxcut", solver=name, restarts=4, seed=1), None, 60.0))
        if got is not None:
            suite.check(f"maxcut {name}: the partition cuts what the reply claims",
                        lambda got=got: _rescored(got, edges, maxcut_nodes))
    suite.check("maxcut: an unknown solver is refused naming solver", lambda: refused_key(
        device, "run", {"workload": "maxcut", "solver": "no-such-solver"}, "solver"))


def _loaded(reply: Any, load: MaxCutLoad) -> None:
    assert isinstance(reply, MaxCutLoadReply), type(reply).__name__
    assert (reply.nodes, reply.edges) == (load.nodes, load.edges), "not the graph sent"


def _rescored(got: Any, edges: Any, nodes: int) -> None:
    reply, arrays = got
    assert isinstance(reply, MaxCutRunReply), type(reply).__name__
    assert len(arrays) == 1 and arrays[0].shape == (nodes,), "no partition of every node"
    assert cut_size(edges, arrays[0]) == reply.cut, "the partition does not cut reply.cut"
    assert reply.t_end >= reply.t_start, "t_end before t_start"
    assert abs(reply.actual_s - (reply.t_end - reply.t_start)) < 1e-6, "actual_s != t_end - t_start"
