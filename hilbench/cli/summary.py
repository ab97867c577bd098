"""`hilbench summary CAMPAIGN`: the campaign's own tables, from the store, as the run printed
them (the same code prints them at the end of `hilbench run`)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click

from hilbench.cli import EXIT_USAGE
from hilbench.cli.options import DB, DB_HELP
from hilbench.cli.options import db_path as store_location

FORMATS = ("text", "md", "csv", "json")


@click.command()
@click.argument("campaign")
@click.option(
    "--db",
    "db_path",
    type=DB,
    default=None,
    help=DB_HELP,
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="text (80 columns when not a terminal), md (Markdown), csv (one line per "
              "figure, unrounded beside the text), json (everything, for tools and --reported).")
@click.option(
    "--reported",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Check these trials against figures reported earlier: the JSON or CSV of an earlier "
    "`hilbench summary`. Default: the reported figure is the trials' own mean.",
)
@click.option("--width", type=click.IntRange(min=40), default=None,
              help="Text width [default: the terminal's, else 80].")
def summary(campaign: str, db_path: Path | None, fmt: str, reported: Path | None,
            width: int | None) -> None:
    """Print a campaign's summary tables: each installed workload's own (``hilbench campaign
    schema`` lists the workloads), in the layouts NeuroBench prints.

    CAMPAIGN is a campaign name (the newest of that name) or a uid prefix. Numbers carry the
    digits their uncertainty supports; simulated figures say so. Text fits the width (wide
    tables are split, repeating their key columns) and never cuts a figure.

    NeuroBench's 5-trial rule is checked for every figure with trials (hilbench run --trials
    5): |mean of trials − reported| ≤ 5 % of reported, where reported is the trial mean or,
    with --reported FILE, the figure of an earlier summary (an auditor's re-run). The
    per-trial spread is shown beside it. Means exclude infeasible answers.
    """
    from hilbench.report.campaign_data import load_campaign_data
    from hilbench.report.render import PAGE, render
    from hilbench.report.summary import summary_tables
    from hilbench.report.trials import ReportedFileError, load_reported
    from hilbench.store import Store, StoreError

    path = store_location(db_path)
    try:
        figures = load_reported(reported) if reported else None
        if not path.exists():
            raise StoreError(f"no store at {path} (give --db, or run a campaign first)")
        with Store(path) as store:
            uid, note = store.resolve_campaign(campaign)
        if note:
            click.echo(note, err=True)
        data = load_campaign_data(path, uid)
    except (StoreError, ReportedFileError) as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    tables = summary_tables(data, figures)
    if not tables:
        click.echo(f"campaign {data.name} ({uid[:8]}) has no runs with a summary table", err=True)
        return
    if width is None:
        width = shutil.get_terminal_size().columns if sys.stdout.isatty() else PAGE
    extra = {"campaign": {"uid": uid, "name": data.name, "store": str(path)}}
    click.echo(render(tables, fmt, width=width, extra=extra), nl=False)
