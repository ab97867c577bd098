"""`hilbench bench NAME`: benchmarks that measure and print figures (never pass/fail tests)."""

from __future__ import annotations

import importlib

import click

# name -> "module:attribute" of a click command, imported when run.
BENCHMARKS: dict[str, str] = {
    "dispatch": "hilbench.bench.dispatch:dispatch",
    "power-accuracy": "hilbench.bench.power_accuracy:power_accuracy",
    "store-stream": "hilbench.bench.store_stream:store_stream",
    "asc-harness": "hilbench.bench.asc_harness:asc_harness",
}


class _LazyBenchGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(BENCHMARKS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in BENCHMARKS:
            return None
        module_name, attr = BENCHMARKS[cmd_name].split(":")
        return getattr(importlib.import_module(module_name), attr)


@click.group(cls=_LazyBenchGroup)
def bench() -> None:
    """Benchmarks: each prints its figures, with the headline figure on the last line."""
