"""`hilbench keys`: CurveZMQ key pairs for agents and orchestrators on a network."""

from __future__ import annotations

import click

from hilbench.cli import EXIT_USAGE


@click.group()
def keys() -> None:
    """Make and inspect the CurveZMQ keys that let agents serve on a network.

    Each agent and each orchestrator has a pair: NAME.key (public, copy it to the other side)
    and NAME.key_secret (secret, owner-only, never copied). An agent started with
    `--key agent.key_secret --authorized DIR` answers only orchestrators whose public key is
    in DIR; the campaign names the orchestrator's secret key and each agent's public key.
    """


@keys.command()
@click.argument("name")
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Folder to write NAME.key and NAME.key_secret into (created if missing).",
)
def generate(name: str, out_dir: str) -> None:
    """Write a new key pair NAME.key (public) and NAME.key_secret (secret, mode 0600)."""
    from hilbench.wire import keys as curve

    try:
        public, secret = curve.generate(name, out_dir)
    except curve.KeyFileError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    click.echo(f"public key  {public}  (copy to the other side)")
    click.echo(f"secret key  {secret}  (keep here; owner-only)")
    click.echo(f"fingerprint {curve.fingerprint(curve.load_public(public))}")


@keys.command()
@click.argument("key_file", type=click.Path(dir_okay=False, exists=True))
def fingerprint(key_file: str) -> None:
    """Print the fingerprint of a public or secret key file (an agent prints its own at start)."""
    from hilbench.wire import keys as curve

    try:
        click.echo(curve.fingerprint(curve.load_public(key_file)))
    except curve.KeyFileError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
