"""The orchestrator's own check of a QUBO answer: recompute the cost, test independence.

An agent's claimed cost is never trusted: the state it returns is scored here in int64 and
tested as an independent set. A claim that disagrees with the recomputed cost is an error of the
agent (a broken cost check or a corrupted state); an infeasible state is a valid measurement with
its own status, reported as such and never averaged into a BKS-gap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hilbench.workloads.qubo.cost import SparseQubo


class SolutionError(ValueError):
    """A returned state is unusable (wrong shape or values) or its claimed cost is wrong."""


@dataclass(frozen=True)
class StateCheck:
    """What the orchestrator found in a returned state."""

    cost: int  # recomputed x^T Q x, int64 arithmetic
    set_size: int  # number of chosen nodes
    violated_edges: int  # couplings with both ends chosen (0 for an independent set)

    @property
    def feasible(self) -> bool:
        return self.violated_edges == 0

    @property
    def status(self) -> str:
        return "feasible" if self.feasible else "infeasible"

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "cost": self.cost,
            "set_size": self.set_size,
            "violated_edges": self.violated_edges,
        }


def state_vector(arrays: list[np.ndarray], nodes: int) -> np.ndarray:
    """The single 0/1 state payload of a run reply, checked for length and values."""
    if len(arrays) != 1:
        raise SolutionError(
            f"a qubo run reply carries exactly one state payload, got {len(arrays)}"
        )
    state = np.asarray(arrays[0])
    if state.ndim != 1 or state.shape[0] != nodes:
        raise SolutionError(f"state must have shape ({nodes},), got {list(state.shape)}")
    if state.dtype not in (np.uint8, np.int8):
        raise SolutionError(f"state must be uint8 or int8, got {state.dtype}")
    if state.size and not np.all((state == 0) | (state == 1)):
        raise SolutionError("state must contain only 0 and 1")
    return state


def check_state(sparse: SparseQubo, state: np.ndarray) -> StateCheck:
    """Score ``state`` and count the couplings it violates (positive weight, both ends set)."""
    x = np.asarray(state).astype(np.int64)
    both = (x[sparse.u] & x[sparse.v]).astype(bool)
    violated = int(np.count_nonzero(both & (sparse.weight > 0)))
    return StateCheck(cost=sparse.cost(x), set_size=int(x.sum()), violated_edges=violated)


def verify_claim(check: StateCheck, claimed_cost: Any) -> None:
    """Raise :class:`SolutionError` unless the agent's claimed cost equals the recomputed one."""
    try:
        claimed = int(claimed_cost)
    except (TypeError, ValueError):
        raise SolutionError(f"the reply's cost {claimed_cost!r} is not an integer") from None
    if claimed != claimed_cost or claimed != check.cost:
        raise SolutionError(
            f"the agent claimed cost {claimed_cost!r} but its returned state costs {check.cost} "
            f"(set size {check.set_size}, {check.violated_edges} violated edges)"
        )


# Fixed timeout: an overrun is more than 5 % of the requested time, or 0.5 ms, whichever is larger.
OVERRUN_RELATIVE = 0.05
OVERRUN_ABSOLUTE_S = 0.5e-3


def overrun_tolerance_s(requested_s: float) -> float:
    """How far past the requested time a run may end before it counts as an overrun."""
    return max(OVERRUN_RELATIVE * requested_s, OVERRUN_ABSOLUTE_S)


def is_overrun(requested_s: float, actual_s: float) -> bool:
    """True when the timed region outlasted the request beyond the tolerance."""
    return actual_s > requested_s + overrun_tolerance_s(requested_s)
