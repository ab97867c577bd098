"""What the ASC workload does in each NeuroBench stage (its plugin names these for the
workflow diagram, :func:`hilbench.report.workflow.stage_plans`)."""

from __future__ import annotations

from hilbench.report.workflow import StagePlan

STAGES: tuple[StagePlan, ...] = (
    StagePlan("host", "clips read and cut into 1 s samples, sent as raw audio"),
    StagePlan("device", "model loaded, then one sample at a time into device memory "
              "(load)", phases=("load",)),
    StagePlan("device", "MFE features on the device", "device timer per sample",
              ("single_stream",), ("active_preprocessing",), "preprocess_time_s"),
    StagePlan("device", "CNN inference on the device", "device timer per sample",
              ("single_stream",), ("active_inference",), "inference_time_s"),
    StagePlan("host", "class = argmax, scored on the orchestrator"),
)
