"""`hilbench campaign schema|check`: the campaign file format, and checking a file before a run."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import click

from hilbench.cli import EXIT_USAGE


def echo_campaign_error(exc: Exception) -> None:
    """One ``error:`` line per problem, printed verbatim: ``[[qubo]]`` must survive, so no
    console markup is involved."""
    problems = getattr(exc, "problems", None) or [str(exc)]
    for line in problems:
        click.echo(f"{click.style('error:', fg='red')} {line}", err=True)


@click.group()
def campaign() -> None:
    """Campaign files: print their JSON Schema, check one without running it.

    A campaign file (TOML) has [campaign], [[agents]], optional [[instruments]] and one or
    more procedure tables such as [[qubo]] or [[asc]]; installed procedure plugins add their
    own tables. Point your editor at the schema (e.g. with taplo or Even Better TOML) to get
    completion and checking while you type.
    """


@campaign.command()
@click.option(
    "-o",
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the schema to this file instead of stdout.",
)
def schema(out: Path | None) -> None:
    """Print the JSON Schema of campaign files, including every installed procedure's table."""
    from hilbench.orchestrator.campaign import campaign_schema
    from hilbench.orchestrator.procedure import ProcedureError

    try:
        text = json.dumps(campaign_schema(), indent=2)
    except ProcedureError as exc:
        echo_campaign_error(exc)
        raise SystemExit(EXIT_USAGE) from None
    if out is None:
        click.echo(text)
    else:
        out.write_text(text + "\n", encoding="utf-8")
        click.echo(f"wrote {out}", err=True)


RUNS_LISTED = 20


@campaign.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--all", "every_run", is_flag=True,
              help=f"List every run, not only the first {RUNS_LISTED}.")
def check(files: tuple[Path, ...], every_run: bool) -> None:
    """Validate campaign FILES without starting anything; list the runs each would make.

    Checks every table and key, agent addresses, interpreter paths and instrument settings,
    exactly as `hilbench run` does before it starts a process; then counts the runs, estimates
    the duration (the units' budgets plus a per-run overhead) and the memory a unit needs, and
    refuses a campaign this host's memory or a driver's declared limits cannot hold. Prints
    each run's unit key (the first 20; --all: every one). Exit status 0 when every file is
    valid, 2 otherwise.
    """
    from hilbench.orchestrator.gate import CampaignRefused, gate_file
    from hilbench.orchestrator.procedure import expand_all

    bad = 0
    for path in files:
        try:
            gated = gate_file(path)
            loaded, bounds = gated.campaign, gated.bounds
            units = expand_all(loaded)
        except CampaignRefused as exc:
            echo_campaign_error(exc)
            bad += 1
            continue
        per_procedure = Counter(u.procedure for u in units)
        listed = ", ".join(f"{name} {n}" for name, n in sorted(per_procedure.items()))
        agents = ", ".join(f"{a.id} ({a.driver})" for a in loaded.agents)
        instruments = ", ".join(i.id for i in loaded.instruments) or "none"
        click.echo(
            f"{path}: ok, campaign {loaded.name!r}: {len(units)} run(s) ({listed}) on "
            f"agent(s) {agents}; instrument(s) {instruments}"
        )
        click.echo(f"  {bounds.summary()}")
        for name, tables in loaded.tables.items():  # what a table says of its files (a hash)
            for i, table in enumerate(tables):
                for note in getattr(table, "check_notes", lambda: [])():
                    click.echo(f"  [[{name}]] #{i + 1} {note}")
        shown = units if every_run else units[:RUNS_LISTED]
        for unit in shown:
            click.echo(f"  {unit.key}  (agent {unit.agent})")
        if len(shown) < len(units):
            click.echo(f"  … and {len(units) - len(shown)} more (--all lists every run)")
    if bad:
        raise SystemExit(EXIT_USAGE)
