"""`hilbench audit export` and `hilbench audit verify`: a campaign's raw data as a bundle an
auditor can check without the lab."""

from __future__ import annotations

from pathlib import Path

import click

from hilbench.cli import EXIT_RUN_FAILED, EXIT_USAGE


@click.group()
def audit() -> None:
    """Export a campaign as a checkable bundle; verify a bundle's hashes and figures."""


@audit.command()
@click.argument("campaign")
@click.option("--db", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="SQLite results file [default: $HILBENCH_DB or ./hilbench.sqlite].")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="The bundle folder to write (new or empty).")
@click.option("--system", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None, help="A system description file to include (e.g. system.toml).")
def export(campaign: str, db: Path | None, out: Path, system: Path | None) -> None:
    """Write CAMPAIGN (uid, uid prefix or name) as a BagIt-style bundle: data/ holds the runs,
    phases, events and metrics as JSON lines, the raw samples as arrays (sha256 in
    data/samples.jsonl), the campaign row and the system description; manifest-sha256.txt the
    sha256 of every file in data/."""
    from hilbench.cassette.bundle import export_bundle
    from hilbench.store import StoreError, default_db_path

    db = db if db is not None else default_db_path()
    try:
        runs = export_bundle(db, campaign, out, system)
    except (StoreError, FileExistsError, NotADirectoryError) as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    click.echo(f"bundle {out}: {runs} run(s) of campaign {campaign} from {db}")


@audit.command()
@click.argument("bundle", type=click.Path(exists=True, file_okay=False, path_type=Path))
def verify(bundle: Path) -> None:
    """Check every sha256 in BUNDLE, then recompute every stored figure of every run from the
    raw samples and events with the analysis code a live run uses (QUBO: power, energy, gap,
    time to solution, the timed region against the orchestrator's window and clock offset;
    ASC: accuracy, stage times, idle / active / dynamic power and energy per inference), the
    clock offsets, the instrument settings the samples show, and NeuroBench's 5-trial rule on
    the recomputed figures of each replicate group.

    Every file is read inside BUNDLE: a manifest line naming a path outside it (``..``, an
    absolute path), a symlink, a device or FIFO, a file larger than the bag declares or a JSON
    line longer than 8 MiB is a mismatch, never read.

    Exit 0 only when everything agrees; 1 with one line per mismatch; 2 when BUNDLE is not a
    bundle at all (no manifest-sha256.txt, no bagit.txt)."""
    from hilbench.cassette.bundle import NotABundle
    from hilbench.cassette.verify import verify_bundle

    try:
        outcome = verify_bundle(bundle)
    except NotABundle as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    for procedure, runs in sorted(outcome.not_recomputed.items()):
        click.echo(f"note: {runs} {procedure} run(s) only hash-checked: the procedure offers "
                   "no recomputation of its figures", err=True)
    for note in outcome.notes:
        click.echo(f"note: {note}", err=True)
    for problem in outcome.problems:
        click.echo(problem)
    if outcome.problems:
        click.echo(f"{len(outcome.problems)} mismatch(es) in {bundle}", err=True)
        raise SystemExit(EXIT_RUN_FAILED)
    click.echo(f"{bundle}: every hash agrees; {outcome.checked} figure(s) recomputed, all agree")



