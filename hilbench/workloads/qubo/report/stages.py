"""What the QUBO workload does in each NeuroBench stage (its plugin names these for the
workflow diagram, :func:`hilbench.report.workflow.stage_plans`)."""

from __future__ import annotations

from hilbench.report.workflow import StagePlan

STAGES: tuple[StagePlan, ...] = (
    StagePlan("host", "graph drawn from (n, density, seed), Q matrix built"),
    StagePlan("device", "Q sent to the agent; solver set-up that does not depend on "
              "the deadline (load)", phases=("load",)),
    StagePlan("none", "none: set-up belongs to loading"),
    StagePlan("device", "solving plus the cost check until the deadline",
              "agent clock: requested and actual time", ("solve",), ("solve",),
              "actual_s"),
    StagePlan("host", "orchestrator re-checks feasibility and cost, BKS-gap"),
)
