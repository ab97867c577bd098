"""The ``[[qubo]]`` campaign table: maximum independent set workloads, solvers and budgets.

```toml
[[qubo]]
agent = "cpu0"
scenario = "fixed_timeout"        # or "time_to_solution"
nodes = [10, 25, 50]
densities = [0.05]
seeds = [0, 1]
solvers = ["sa", "tabu"]          # "anytime": the cpu driver's own MIS solver; "lava": loihi's
timeouts_s = [0.001, 0.01]        # fixed_timeout only
# gaps = [0.1, 0.05, 0.01]; max_time_s = 10   (time_to_solution only)
```
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from hilbench.sdk import CampaignTable

# A solver is whatever the agent's driver declares (capabilities qubo.solvers; cpu: sa, tabu,
# anytime; loihi: lava): a new driver brings new names without a change here, and the agent
# refuses a name its driver lacks (bad_arguments naming ``solver``).
Solver = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.+-]+$")]


class QuboTable(CampaignTable):
    """One grid of QUBO runs: every combination of nodes × densities × seeds × solvers
    (× timeouts for fixed_timeout) is one unit per repetition."""

    scenario: Literal["fixed_timeout", "time_to_solution"] = "fixed_timeout"
    nodes: list[Annotated[int, Field(ge=2)]] = Field(min_length=1, description="graph sizes")
    densities: list[Annotated[float, Field(gt=0, le=1)]] = Field(
        min_length=1, description="edge densities in (0, 1]"
    )
    seeds: list[Annotated[int, Field(ge=0)]] = Field(min_length=1, description="workload seeds")
    solvers: list[Solver] = Field(
        min_length=1, description="solvers of the agent's driver (cpu: sa, tabu, anytime; "
        "loihi: lava; `hilbench drivers` lists each driver's)")
    timeouts_s: list[Annotated[float, Field(ge=1e-3, le=1e2)]] | None = Field(
        None, min_length=1, description="fixed_timeout: solver budgets in seconds (1e-3 … 1e2)"
    )
    gaps: list[Annotated[float, Field(gt=0, lt=1)]] = Field(
        [0.1, 0.05, 0.01], min_length=1, description="time_to_solution: BKS-gap thresholds"
    )
    max_time_s: float = Field(10.0, gt=0, le=86_400,
                              description="time_to_solution: give up after this (≤ 1 day)")

    @model_validator(mode="after")
    def _budget_given(self) -> QuboTable:
        if self.scenario == "fixed_timeout" and self.timeouts_s is None:
            raise ValueError("fixed_timeout needs timeouts_s, e.g. timeouts_s = [0.01, 0.1]")
        return self
