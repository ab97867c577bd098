"""The maxcut workload as hilbench's registry sees it (``hilbench.workloads`` entry point
``maxcut``): its contract, the role methods a driver serves it with (``load_maxcut``,
``cut``), and where its procedure, summary table, figures and workflow live."""

from __future__ import annotations

from typing import Any

import numpy as np

from hilbench.contracts.base import Reply
from hilbench.contracts.registry import WorkloadPlugin
from hilbench_maxcut.contract import (
    MaxCutCapabilities,
    MaxCutLoad,
    MaxCutLoadReply,
    MaxCutRun,
    MaxCutRunReply,
    check_declared,
)


def _load(driver: Any, request: Any, arrays: list[np.ndarray], stop: Any
          ) -> tuple[Reply, list[np.ndarray]]:
    return driver.load_maxcut(request, arrays[0]), []


def _cut(driver: Any, request: Any, arrays: list[np.ndarray], stop: Any
         ) -> tuple[Reply, list[np.ndarray]]:
    reply, side = driver.cut(request, stop)
    return reply, [np.ascontiguousarray(side, dtype=np.uint8)]


WORKLOAD = WorkloadPlugin(
    name="maxcut",
    load=MaxCutLoad,
    run=MaxCutRun,
    replies={MaxCutLoad: MaxCutLoadReply, MaxCutRun: MaxCutRunReply},
    capabilities=MaxCutCapabilities,
    check=check_declared,
    roles={MaxCutLoad: _load, MaxCutRun: _cut},
    procedures={"maxcut": "hilbench_maxcut.procedure:PROCEDURE"},
    summary_tables=("hilbench_maxcut.table",),
    report_figures=("hilbench_maxcut.figures:report_figures",),
    stage_plans="hilbench_maxcut.figures:STAGES",
    conformance="hilbench_maxcut.conformance:check_maxcut",
)
