"""`hilbench bench NAME`: benchmarks that measure and print figures (never pass/fail tests)."""

from __future__ import annotations

import click

from hilbench.cli.lazy import BENCHMARKS_GROUP, LazyGroup

# name -> "module:attribute" of a click command, imported when run. Drivers' and workloads'
# benchmarks (`bench xylo`, `bench qubo-cpu`, …) join through the `hilbench.benchmarks` entry
# points.
BENCHMARKS: dict[str, str] = {
    "dispatch": "hilbench.bench.dispatch:dispatch",
    "reference": "hilbench.bench.reference_ratio:reference_ratio",
    "power-accuracy": "hilbench.bench.power_accuracy_command:power_accuracy",
    "stage-attribution": "hilbench.bench.stage_attribution:stage_attribution",
    "store-stream": "hilbench.bench.store_stream:store_stream",
    "results": "hilbench.bench.results_scale:results_scale",
    "flat-cost": "hilbench.bench.flat_cost:flat_cost",
    "soak": "hilbench.bench.soak:soak",
    "status": "hilbench.bench.daemon_figures:status",
    "daemon-overhead": "hilbench.bench.daemon_figures:daemon_overhead",
    "schedule": "hilbench.bench.daemon_figures:schedule_timing",
    "summary": "hilbench.bench.summary_scale:summary_scale",
    "report": "hilbench.bench.report_scale:report_scale",
}


@click.group(cls=LazyGroup, lazy_commands=BENCHMARKS, entry_point_group=BENCHMARKS_GROUP)
def bench() -> None:
    """Benchmarks: each prints its figures, with the headline figure on the last line."""
