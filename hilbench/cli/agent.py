"""`hilbench agent`: host one driver and serve the agent protocol; `hilbench drivers`: list them."""

from __future__ import annotations

import logging
from typing import Any

import click

from hilbench.cli import EXIT_USAGE
from hilbench.lifeline import call_on_signal


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
    "--key",
    "key_file",
    default=None,
    type=click.Path(dir_okay=False),
    help="This agent's secret key file (NAME.key_secret from `hilbench keys generate`); "
    "with it the link is CurveZMQ-encrypted and authenticated.",
)
@click.option(
    "--authorized",
    "authorized_dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Folder of public keys (*.key) of the orchestrators this agent obeys; any other key "
    "gets no connection. With --connect it holds the one orchestrator's key.",
)
@click.option(
    "--insecure",
    is_flag=True,
    help="Allow plaintext without keys on an address other hosts can reach (logged loudly). "
    "Without keys and without this flag the agent binds or connects over loopback only.",
)
@click.option(
    "--memory-budget-mib",
    default=512,
    show_default=True,
    type=click.IntRange(min=1),
    help="Total MiB the agent holds for its peers: requests, unsent replies and what ZeroMQ "
    "is still receiving, across all connections. Past it a request beyond its connection's "
    "fair share is refused with error over_budget, and connections over their share are "
    "dropped, the largest first.",
)
@click.option(
    "--key-fd",
    default=None,
    type=click.IntRange(min=0),
    help="Read this agent's key pair and the public keys it admits (JSON) from this inherited "
    "descriptor instead of --key/--authorized: how hilbench hands ephemeral keys to the agents "
    "it spawns, never on the command line.",
)
@click.option(
    "--unread-reply-s",
    default=10.0,
    show_default=True,
    type=click.FloatRange(min=0.1),
    help="A large reply its peer has not read after this long is dropped with the peer's "
    "connection, freeing its share of the memory budget.",
)
@click.option(
    "--max-connections",
    default=None,
    type=click.IntRange(min=1),
    help="Most peer connections at once; a new one past it drops the longest idle. "
    "[default: the descriptor limit (ulimit -n) less 64, at most what a quarter of the memory "
    "budget pays for at 64 KiB a connection]",
)
@click.option(
    "--log-file",
    default=None,
    type=click.Path(dir_okay=False),
    help="Also write the agent's log (start line, bad messages, incidents) to this file.",
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
    key_file: str | None,
    authorized_dir: str | None,
    insecure: bool,
    memory_budget_mib: int,
    key_fd: int | None,
    unread_reply_s: float,
    max_connections: int | None,
    log_file: str | None,
    announce: bool,
) -> None:
    """Run an agent that hosts one device driver and serves orchestrators over ZeroMQ.

    Give --bind to listen (the usual case: the orchestrator connects to it) or --connect to
    dial out to an orchestrator that listens. On a network, give --key and --authorized (see
    `hilbench keys generate --help`); without keys the agent serves loopback only unless
    --insecure. It prints its endpoint, driver and key fingerprint at start, keeps serving after
    bad messages and stops on a `shutdown` command, SIGTERM or Ctrl-C.
    """
    import zmq

    from hilbench.agent.runtime import AgentRuntime, InsecureAddress

    if (bind is None) == (connect is None):
        raise click.UsageError("give exactly one of --bind or --connect")
    _log_agent_to(log_file)
    key_pair, authorized, server_key = _keys(key_file, authorized_dir, key_fd, connect)
    driver = _driver(driver_name, options)
    try:
        runtime = AgentRuntime(
            driver,
            agent_id,
            bind=bind,
            connect=connect,
            heartbeat_s=heartbeat,
            liveness=liveness,
            memory_budget_bytes=memory_budget_mib * 1024 * 1024,
            unread_reply_s=unread_reply_s,
            max_connections=max_connections,
            key=key_pair,
            authorized=authorized if bind is not None else None,
            server_key=server_key,
            insecure=insecure,
        )
    except InsecureAddress as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    call_on_signal(runtime.request_shutdown)  # SIGTERM: a stop, or the parent-death signal

    runtime.tell_when_ready(announce)
    try:
        runtime.serve()
    except KeyboardInterrupt:
        logging.getLogger(__name__).info("interrupted")
    except zmq.ZMQError as exc:
        click.echo(f"error: agent cannot use {bind or connect}: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None


def _keys(key_file: str | None, authorized_dir: str | None, key_fd: int | None,
          connect: str | None) -> tuple[Any, dict[bytes, str], bytes | None]:
    """This agent's key pair, the public keys it admits, and (dialling out) the
    orchestrator's key; all None/empty without keys. Bad key files exit 2 naming the file."""
    from hilbench.wire import keys

    if (key_file is None) != (authorized_dir is None):
        raise click.UsageError("--key and --authorized go together")
    if key_fd is not None and (key_file is not None or connect is not None):
        raise click.UsageError("--key-fd goes with --bind and without --key/--authorized")
    key_pair, authorized, server_key = None, {}, None
    try:
        if key_fd is not None:
            key_pair, authorized = keys.read_handover(key_fd)
        if key_file is not None and authorized_dir is not None:
            key_pair = keys.load_pair(key_file)
            authorized = keys.load_authorized(authorized_dir)
            if connect is not None:
                if len(authorized) != 1:
                    raise keys.KeyFileError(
                        f"with --connect, {authorized_dir} must hold exactly the orchestrator's "
                        f"public key; it holds {len(authorized)}"
                    )
                server_key = next(iter(authorized))
    except keys.KeyFileError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    return key_pair, authorized, server_key


def _driver(driver_name: str, options: tuple[str, ...]) -> Any:
    """The named driver, made with the --option KEY=VALUE pairs; exit 2 naming what failed."""
    from hilbench.agent.driver import DriverError, load_driver

    opts = {}
    for item in options:
        key, sep, value = item.partition("=")
        if not sep:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="--option")
        opts[key] = value
    try:
        return load_driver(driver_name, opts)
    except DriverError as exc:
        click.echo(f"error: driver {driver_name}: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    except TypeError as exc:
        click.echo(f"error: driver {driver_name!r} rejected its options: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None


def _log_agent_to(log_file: str | None) -> None:
    """Agent lifecycle lines (start, incidents) are logged at INFO, also to ``log_file``."""
    agent_log = logging.getLogger("hilbench.agent")
    if agent_log.getEffectiveLevel() > logging.INFO:
        agent_log.setLevel(logging.INFO)
        if not logging.getLogger().handlers:
            logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if log_file is not None:
        from hilbench.private_files import open_private

        open_private(log_file, "a").close()  # a new log file is owner-only, whatever the umask
        handler = logging.FileHandler(log_file)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logging.getLogger("hilbench").addHandler(handler)


@click.command()
def drivers() -> None:
    """List the installed drivers (entry-point group `hilbench.drivers`)."""
    from hilbench.agent.driver import available_drivers

    for name, target in sorted(available_drivers().items()):
        click.echo(f"{name}\t{target}")
