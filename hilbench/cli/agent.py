"""`hilbench agent`: host one driver and serve the agent protocol; `hilbench drivers`: list them."""

from __future__ import annotations

import logging
import signal

import click

from hilbench.cli import EXIT_USAGE


@click.command()
@click.option(
    "--driver", "driver_name", required=True, help="Driver to host (see `hilbench drivers`)."
)
@click.option(
    "--bind", default=None, help="Listen here, e.g. tcp://127.0.0.1:5555 (port 0 or * picks one)."
)
@click.option(
    "--connect", default=None, help="Instead of listening, connect to an orchestrator here."
)
@click.option(
    "--id", "agent_id", default=None, help="Agent id shown in results [default: driver@host:pid]."
)
@click.option(
    "--option",
    "-o",
    "options",
    multiple=True,
    metavar="KEY=VALUE",
    help="Driver option, repeatable (e.g. -o rapl_root=/sys/class/powercap).",
)
@click.option("--heartbeat", default=0.5, show_default=True, help="Heartbeat interval, seconds.")
@click.option(
    "--liveness",
    default=6,
    show_default=True,
    help="Missed heartbeats before a peer counts as gone.",
)
@click.option(
    "--announce",
    is_flag=True,
    hidden=True,
    help="Print the bound endpoint on stdout once ready (used when hilbench spawns agents).",
)
def agent(
    driver_name: str,
    bind: str | None,
    connect: str | None,
    agent_id: str | None,
    options: tuple[str, ...],
    heartbeat: float,
    liveness: int,
    announce: bool,
) -> None:
    """Run an agent that hosts one device driver and serves orchestrators over ZeroMQ.

    Give --bind to listen (the usual case: the orchestrator connects to it) or --connect to
    dial out to an orchestrator that listens. The agent keeps serving after bad messages and
    stops on a `shutdown` command, SIGTERM or Ctrl-C.
    """
    import threading

    from hilbench.agent.driver import DriverError, load_driver
    from hilbench.agent.runtime import AgentRuntime

    if (bind is None) == (connect is None):
        raise click.UsageError("give exactly one of --bind or --connect")
    opts = {}
    for item in options:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--option")
        opts[key] = value
    try:
        driver = load_driver(driver_name, opts)
    except DriverError as exc:
        click.echo(f"error: driver {driver_name}: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    except TypeError as exc:
        click.echo(f"error: driver {driver_name!r} rejected its options: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    runtime = AgentRuntime(
        driver, agent_id, bind=bind, connect=connect, heartbeat_s=heartbeat, liveness=liveness
    )
    signal.signal(signal.SIGTERM, lambda *_: runtime.request_shutdown())
    if announce:

        def _announce() -> None:
            if runtime.wait_ready(30):
                click.echo(f"READY {runtime.endpoint}", nl=True)
                import sys

                sys.stdout.flush()

        threading.Thread(target=_announce, daemon=True).start()
    try:
        runtime.serve()
    except KeyboardInterrupt:
        logging.getLogger(__name__).info("interrupted")


@click.command()
def drivers() -> None:
    """List the installed drivers (entry-point group `hilbench.drivers`)."""
    from hilbench.agent.driver import available_drivers

    for name, target in sorted(available_drivers().items()):
        click.echo(f"{name}\t{target}")
