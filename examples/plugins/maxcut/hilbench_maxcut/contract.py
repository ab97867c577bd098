"""The maxcut wire contract: the graph is loaded once (its edge list as one int32 payload of
shape (edges, 2)), then each run asks for a cut by a named solver with a seed and a number of
restarts; the reply gives the cut size and the timed region on the agent's clock, and the
partition travels as one uint8 payload (0/1 per node) that the orchestrator re-scores."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
import numpy as np

from hilbench.contracts.base import (
    Contract,
    ContractError,
    Count,
    Instant,
    Name,
    Reply,
    Seconds,
    Seed,
    payload_count,
)

MAX_NODES = 4096
Restarts = Annotated[int, msgspec.Meta(ge=1, le=100_000, description="int 1 … 100 000")]
Nodes = Annotated[int, msgspec.Meta(ge=2, le=MAX_NODES, description="int 2 … 4096")]


class MaxCutLoad(Contract, kw_only=True):
    """The graph: ``nodes`` and one int32 payload of its edges (u, v), 0 ≤ u < v < nodes."""

    workload: Literal["maxcut"]
    nodes: Nodes
    edges: Count

    def check_payloads(self, arrays: list[np.ndarray]) -> None:
        payload_count(arrays, 1)
        edges = arrays[0]
        if edges.dtype != np.int32 or edges.ndim != 2 or edges.shape != (self.edges, 2):
            raise ContractError("bad_arguments", "payloads[0]",
                                f"the edges are int32 of shape ({self.edges}, 2), got "
                                f"{edges.dtype} {edges.shape}")
        if self.edges and not (int(edges.min()) >= 0 and int(edges.max()) < self.nodes):
            raise ContractError("bad_arguments", "payloads[0]",
                                f"an edge names a node outside 0 … {self.nodes - 1}")


class MaxCutLoadReply(Reply, kw_only=True):
    nodes: Count
    edges: Count


class MaxCutRun(Contract, kw_only=True):
    """One cut of the loaded graph: the best of ``restarts`` searches from random partitions."""

    workload: Literal["maxcut"]
    solver: Name
    restarts: Restarts = 16
    seed: Seed = 0


class MaxCutRunReply(Reply, kw_only=True):
    """``cut``: edges across the returned partition (the payload), as the solver counted them;
    ``t_start``/``t_end``: the timed region on the agent's clock."""

    solver: Name
    cut: Count
    t_start: Instant
    t_end: Instant
    actual_s: Seconds


class MaxCutCapabilities(Contract, omit_defaults=False, kw_only=True):
    """The solvers the driver offers and the largest graph it takes."""

    solvers: list[Name]
    max_nodes: Nodes = MAX_NODES


def check_declared(request: object, declared: MaxCutCapabilities) -> None:
    """A solver or a graph size the driver does not offer (bad_arguments)."""
    if isinstance(request, MaxCutRun) and request.solver not in declared.solvers:
        raise ContractError("bad_arguments", "solver",
                            f"unknown solver {request.solver!r} (this driver has "
                            f"{', '.join(declared.solvers)})")
    if isinstance(request, MaxCutLoad) and request.nodes > declared.max_nodes:
        raise ContractError("bad_arguments", "nodes",
                            f"{request.nodes} nodes pass this driver's {declared.max_nodes}")
