"""`hilbench cassette …`: what can be made from a recorded cassette for other tools."""

from __future__ import annotations

from pathlib import Path

import click

from hilbench.cli import EXIT_USAGE


@click.group()
def cassette() -> None:
    """Work with cassettes written by `hilbench run --record`."""


@cassette.command("export-pyvisa-sim")
@click.argument("folder", metavar="CASSETTE",
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The pyvisa-sim YAML file to write.")
def export_pyvisa_sim(folder: Path, out: Path) -> None:
    """Write the stateless part of CASSETTE's instrument dialogues as a pyvisa-sim YAML file:
    every query answered the same each time (*IDN?, settings queries, the error queue) with
    that answer, every command only written (settings) without one. Answers that changed
    (readings) are stateful and left out; the file's comments name them. Open it with
    pyvisa.ResourceManager("FILE.yaml@sim") and the recorded resource names."""
    from hilbench.cassette.pyvisa_sim import export_pyvisa_sim as export

    try:
        dialogues = export(folder, out)
    except ValueError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    for d in dialogues:
        click.echo(f"{d.resource}: {len(d.stateless())} stateless dialogue(s), "
                   f"{len(d.stateful())} stateful query(ies) left out")
    click.echo(f"wrote {out}")
