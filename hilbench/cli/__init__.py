"""The ``hilbench`` command: one entry point, one sub-command module per area, imported lazily.

Exit codes: 0 success; 1 a run failed; 2 bad usage or input (click's own); 3 an agent or
instrument could not be reached, was lost or failed; 4 the store could not be written (disk
full, I/O error, read-only); 70 an internal error (a bug: one line, the traceback in
``~/.local/state/hilbench/crash-*.log``, see :mod:`hilbench.launch`); 128 + N stopped by signal
N (130 Ctrl-C, 143 SIGTERM), after a clean stop.
"""

from __future__ import annotations

import logging
import sys

import click

from hilbench import __version__
from hilbench.cli.lazy import COMMANDS_GROUP, LazyGroup

EXIT_OK = 0
EXIT_RUN_FAILED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_STORE_FAULT = 4

# name -> "module:attribute" of a click command; imported only when that command is used.
# Drivers' and workloads' commands (`hilbench arduino`, `hilbench xylo`, `hilbench qubo`,
# `hilbench asc`) join through the `hilbench.commands` entry-point group instead
# (hilbench.cli.lazy).
SUBCOMMANDS: dict[str, str] = {
    "agent": "hilbench.cli.agent:agent",
    "run": "hilbench.cli.run:run",
    "demo": "hilbench.cli.run:demo",
    "results": "hilbench.cli.results:results",
    "summary": "hilbench.cli.summary:summary",
    "leaderboard": "hilbench.cli.leaderboard:leaderboard",
    "campaign": "hilbench.cli.campaign:campaign",
    "bench": "hilbench.cli.bench:bench",
    "drivers": "hilbench.cli.agent:drivers",
    "power": "hilbench.cli.power:power",
    "sim-meter": "hilbench.cli.sim:sim_meter",
    "keys": "hilbench.cli.keys:keys",
    "store": "hilbench.cli.store:store",
    "audit": "hilbench.cli.audit:audit",
    "replay": "hilbench.cli.replay:replay",
    "cassette": "hilbench.cli.cassette:cassette",
    "daemon": "hilbench.cli.daemon:daemon",
    "status": "hilbench.cli.daemon:status",
    "systemd": "hilbench.cli.systemd:systemd",
    "queue": "hilbench.cli.queue:queue",
    "schedule": "hilbench.cli.queue:schedule",
    "report": "hilbench.cli.report:report",
    "serve": "hilbench.cli.serve:serve",
}


@click.group(
    cls=LazyGroup,
    lazy_commands=SUBCOMMANDS,
    entry_point_group=COMMANDS_GROUP,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(__version__, prog_name="hilbench")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
def cli(verbose: int) -> None:
    """Hardware-in-the-loop benchmarking for NeuroBench system-track workloads.

    Start with `hilbench demo` (a QUBO campaign on this machine's CPU), then
    `hilbench results` to read the stored runs back.
    """
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )


def main() -> None:
    cli()
