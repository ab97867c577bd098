"""What the core's workloads do in each NeuroBench stage (their plugins name these for the
workflow diagram, :func:`hilbench.report.workflow.stage_plans`)."""

from __future__ import annotations

from hilbench.report.workflow import StagePlan

ASC_STAGES: tuple[StagePlan, ...] = (
    StagePlan("host", "clips read and cut into 1 s samples, sent as raw audio"),
    StagePlan("device", "model loaded, then one sample at a time into device memory "
              "(load)", phases=("load",)),
    StagePlan("device", "MFE features on the device", "device timer per sample",
              ("single_stream",), ("active_preprocessing",), "preprocess_time_s"),
    StagePlan("device", "CNN inference on the device", "device timer per sample",
              ("single_stream",), ("active_inference",), "inference_time_s"),
    StagePlan("host", "class = argmax, scored on the orchestrator"),
)

QUBO_STAGES: tuple[StagePlan, ...] = (
    StagePlan("host", "graph drawn from (n, density, seed), Q matrix built"),
    StagePlan("device", "Q sent to the agent; solver set-up that does not depend on "
              "the deadline (load)", phases=("load",)),
    StagePlan("none", "none: set-up belongs to loading"),
    StagePlan("device", "solving plus the cost check until the deadline",
              "agent clock: requested and actual time", ("solve",), ("solve",),
              "actual_s"),
    StagePlan("host", "orchestrator re-checks feasibility and cost, BKS-gap"),
)
