"""The QUBO (maximum independent set) contract: load, fixed-timeout and time-to-solution runs,
their replies, the capabilities a solver declares, and the :class:`QuboSolver` role.

A driver that solves QUBOs implements :class:`QuboSolver`; the orchestrator's remote handle
(:class:`hilbench.contracts.remote.RemoteQuboSolver`) implements the same role over an agent
link, and :class:`hilbench.contracts.local.LocalDevice` over a driver in this process, so that
``qubo``, ``qubo_largest`` and ``qubo solve`` share one call path.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Annotated, Literal, Protocol, runtime_checkable

import msgspec
import numpy as np

from hilbench.contracts.base import (
    BigInt,
    Contract,
    ContractError,
    Count,
    Detail,
    Instant,
    Name,
    Reply,
    Seconds,
    Seed,
    Text,
    UntimedWork,
    payload_count,
)
from hilbench.contracts.power import PowerReport

MAX_NODES = 1_000_000
MIN_TIMEOUT_S = 1e-3
MAX_TIMEOUT_S = 1e3
MAX_GAPS = 16

Nodes = Annotated[int, msgspec.Meta(ge=1, le=MAX_NODES, description=f"int 1 … {MAX_NODES}")]
Density = Annotated[float, msgspec.Meta(gt=0, le=1, description="float in (0, 1]")]
Gap = Annotated[float, msgspec.Meta(gt=0, lt=1, description="float in (0, 1)")]
Timeout = Annotated[
    float,
    msgspec.Meta(ge=MIN_TIMEOUT_S, le=MAX_TIMEOUT_S, description="s, 1e-3 … 1e3"),
]
MaxTime = Annotated[float, msgspec.Meta(gt=0, le=86_400.0, description="s, (0, 86 400]")]


class QuboLoad(Contract, tag_field="workload", tag="qubo", kw_only=True):
    """``load``: the workload and, as ONE payload, its int8 ``nodes × nodes`` matrix."""

    nodes: Nodes
    density: Density
    seed: Seed
    solvers: Annotated[list[Name], msgspec.Meta(max_length=16)] | None = None

    def check_payloads(self, arrays: list[np.ndarray]) -> None:
        payload_count(arrays, 1)
        m = arrays[0]
        if m.dtype != np.int8 or m.shape != (self.nodes, self.nodes):
            raise ContractError(
                "bad_arguments", "payloads[0]",
                f"the QUBO matrix is a square int8 ({self.nodes}, {self.nodes}) array, got "
                f"{m.dtype}{list(m.shape)}")


class FixedTimeout(Contract, tag_field="mode", tag="fixed_timeout", kw_only=True):
    """``run``: solve for ``timeout_s`` from the start of the timed region."""

    workload: Literal["qubo"]
    solver: Name
    timeout_s: Timeout
    seed: Seed


class TimeToSolution(Contract, tag_field="mode", tag="time_to_solution", kw_only=True):
    """``run``: solve until every gap is reached or ``max_time_s`` has passed."""

    workload: Literal["qubo"]
    solver: Name
    target: BigInt
    gaps: Annotated[list[Gap], msgspec.Meta(min_length=1, max_length=MAX_GAPS)]
    max_time_s: MaxTime
    seed: Seed


QuboRun = FixedTimeout | TimeToSolution


class QuboLoadReply(Reply, kw_only=True):
    nodes: Nodes
    couplings: Count | None = None
    load_s: Seconds | None = None
    setup_s: Seconds | dict[str, Seconds] | None = None
    detail: Detail = msgspec.field(default_factory=dict)


class Reached(Contract, kw_only=True):
    gap: Gap
    t_s: Seconds
    cost: BigInt | None = None


class QuboRunReply(Reply, kw_only=True):
    """The run's reply; the best state travels as ONE payload (uint8/int8, shape (nodes,))."""

    cost: BigInt
    requested_s: Seconds
    actual_s: Seconds
    t_start: Instant
    t_end: Instant
    reached: list[Reached] | None = None
    solver: Name | None = None
    mode: Literal["fixed_timeout", "time_to_solution"] | None = None
    target: BigInt | None = None
    set_size: Count | None = None
    setup_s: Seconds | None = None
    # Per-run set-up and teardown outside the timed region (a Lava process per run), allowed
    # for when the orchestrator checks the claim against its own request→reply window, up to
    # the maximum the driver declares in its capabilities (``qubo.untimed``).
    untimed_s: Seconds | None = None
    solver_s: Seconds | None = None
    cost_check_s: Seconds | None = None
    stopped_early: bool = False
    power: PowerReport | None = None  # the agent's own reading: labelled so, never trusted
    solver_params: Detail = msgspec.field(default_factory=dict)
    detail: Detail = msgspec.field(default_factory=dict)


class QuboLimits(Contract, omit_defaults=False, kw_only=True):
    max_nodes: Count | dict[str, Count] | None = None
    max_couplings: Count | None = None
    max_bytes: Count | None = None
    note: Text | None = None


class QuboCapabilities(Contract, omit_defaults=False, kw_only=True):
    """``untimed``: the most per-run set-up and teardown a run does outside its timed region
    (reported in each reply's ``untimed_s``), with its reason; absent: none."""

    solvers: list[Name]
    modes: list[Literal["fixed_timeout", "time_to_solution"]] = msgspec.field(
        default_factory=lambda: ["fixed_timeout", "time_to_solution"])
    timeout_range_s: tuple[Timeout, Timeout] | None = None
    limits: QuboLimits | None = None
    untimed: UntimedWork | None = None
    detail: Detail = msgspec.field(default_factory=dict)

    def declared_limit(self, solver: str, nodes: int) -> str | None:
        """Why the declared limits rule out ``nodes`` for ``solver`` (None: they allow it)."""
        limits = self.limits or QuboLimits()
        max_nodes = limits.max_nodes
        if isinstance(max_nodes, dict):
            max_nodes = max_nodes.get(solver)
        if max_nodes is not None and nodes > max_nodes:
            return f"the driver declares max_nodes {max_nodes} for {solver}"
        if limits.max_bytes is not None and nodes * nodes > limits.max_bytes:
            return (f"a {nodes}² int8 matrix passes the driver's declared max_bytes "
                    f"{limits.max_bytes}")
        return None


@dataclass(frozen=True)
class Solved:
    """A run's reply and the state it returned."""

    reply: QuboRunReply
    state: np.ndarray


@runtime_checkable
class QuboSolver(Protocol):
    """The QUBO role: a device (or a handle to one) that loads a workload and solves it."""

    def load_qubo(self, body: QuboLoad, matrix: np.ndarray) -> QuboLoadReply:
        """Untimed: everything that does not depend on the deadline happens here."""
        ...

    def solve(self, body: QuboRun, stop: threading.Event) -> Solved:
        """The timed region: solving plus the cost check of the returned state."""
        ...
