"""`hilbench leaderboard CAMPAIGN… --system system.toml`: NeuroBench leaderboard rows."""

from __future__ import annotations

from pathlib import Path

import click

from hilbench.cli import EXIT_USAGE
from hilbench.cli.options import DB, DB_HELP
from hilbench.cli.options import db_path as store_location


@click.command()
@click.argument("campaigns", nargs=-1, required=True)
@click.option("--system", "system_path", required=True,
              type=click.Path(dir_okay=False, path_type=Path),
              help="The system description (see examples/system.toml for every field).")
@click.option("--db", "db_path", type=DB, default=None,
              help=DB_HELP)
@click.option("--format", "fmt", type=click.Choice(["csv", "json", "md"]), default="csv",
              show_default=True, help="csv (one row per entry), json (with units), md.")
def leaderboard(campaigns: tuple[str, ...], system_path: Path, db_path: Path | None,
                fmt: str) -> None:
    """Leaderboard rows for the campaigns' results on one system.

    CAMPAIGNS are names (the newest of each name) or uid prefixes. Each row carries the
    system's fields (system, organisation, date, availability, power-measurement category,
    configuration, software, architecture, algorithm, power domains) and the spec version;
    ASC rows the accuracy, execution time and dynamic energy per inference of pre-processing
    and inference; QUBO rows the time and energy to 90 / 95 / 99 % of the target (gap 0.1,
    0.05, 0.01) averaged over the seeds that reached it, and the solver's largest workload at
    1 % density and fully connected. SI units without prefix (s, J, W; accuracy a fraction);
    a row with any simulated figure says simulated = true.
    """
    from hilbench.report.campaign_data import load_campaign_data
    from hilbench.report.leaderboard import (
        leaderboard_rows,
        render_leaderboard,
        what_makes_a_row,
    )
    from hilbench.report.system import SystemFileError, load_system
    from hilbench.store import Store, StoreError

    path = store_location(db_path)
    try:
        system = load_system(system_path)
        if not path.exists():
            raise StoreError(f"no store at {path} (give --db, or run a campaign first)")
        data = []
        with Store(path) as store:
            uids = []
            for ref in campaigns:
                uid, note = store.resolve_campaign(ref)
                if note:
                    click.echo(note, err=True)
                uids.append(uid)
        data = [load_campaign_data(path, uid) for uid in dict.fromkeys(uids)]
    except (StoreError, SystemFileError) as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    rows = leaderboard_rows(data, system)
    if not rows:
        click.echo(f"error: the campaigns hold no {what_makes_a_row()}", err=True)
        raise SystemExit(EXIT_USAGE)
    click.echo(render_leaderboard(rows, fmt), nl=False)
