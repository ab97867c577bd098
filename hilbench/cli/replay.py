"""`hilbench replay CASSETTE`: a recorded bench session computed again and compared with what
it recorded."""

from __future__ import annotations

from pathlib import Path

import click

from hilbench.cli import EXIT_RUN_FAILED, EXIT_USAGE


@click.command()
@click.argument("cassette", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--analysis-only", is_flag=True,
              help="Re-run only the analysis: every figure of every successful run computed "
                   "again from the recorded events and raw samples by the code a live run "
                   "uses (no agent, no instrument), and compared with the recorded figure.")
def replay(cassette: Path, analysis_only: bool) -> None:
    """Replay CASSETTE (a folder written by `hilbench run --record`, or an audit bundle)
    and compare every figure with the recorded one, exactly (value and uncertainty).

    Exit 0 when all agree; 1 with one line per difference (run, metric, recorded and
    recomputed value); 2 when CASSETTE cannot be read."""
    if not analysis_only:
        click.echo("error: only --analysis-only is available so far (replay with stand-in "
                   "agents and instruments is not built yet)", err=True)
        raise SystemExit(EXIT_USAGE)
    from hilbench.cassette.analysis import compare_recording

    if (cassette / "bagit.txt").is_file():  # an audit bundle: its payload is the recording
        cassette = cassette / "data"
    try:
        outcome = compare_recording(cassette)
    except ValueError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    for procedure, runs in sorted(outcome.not_recomputed.items()):
        click.echo(f"note: {runs} {procedure} run(s) not re-analysed: the procedure offers no "
                   "re-analysis", err=True)
    for line in outcome.differences:
        click.echo(line)
    if outcome.differences:
        click.echo(f"{len(outcome.differences)} difference(s) in {cassette}", err=True)
        raise SystemExit(EXIT_RUN_FAILED)
    click.echo(f"{cassette}: {outcome.compared} figure(s) recomputed, all equal to the "
               "recorded ones")
