"""`hilbench replay CASSETTE`: a recorded campaign run again without the bench, every figure
compared; `--against-live`: the recorded identity dialogue sent to the live bench."""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import click

from hilbench.cli import EXIT_RUN_FAILED, EXIT_UNREACHABLE, EXIT_USAGE


def _pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    found = {}
    for value in values:
        key, sep, target = value.partition("=")
        if not sep or not key or not target:
            raise click.BadParameter(f"{value!r} is not OLD=NEW", param_hint=option)
        found[key] = target
    return found


@click.command()
@click.argument("cassette", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--analysis-only", is_flag=True,
              help="Re-run only the analysis: every figure of every successful run computed "
                   "again from the recorded events and raw samples by the code a live run "
                   "uses (no agent, no instrument, no channels needed: an audit bundle too), "
                   "and compared with the recorded figure.")
@click.option("--strict/--lenient", default=True, show_default=True,
              help="Strict: a recorded interaction the replay never used (a request, a VISA "
              "call, a clock reading) is a difference too. Lenient: only what the replay did "
              "that the cassette does not hold, and the figures, count.")
@click.option("--against-live", is_flag=True,
              help="Instead of replaying: greet each recorded agent live (hello: identity, "
              "versions, capabilities) and send each recorded instrument the identity and "
              "settings queries it answered (*IDN?, SYST:LFR?...), and report every answer "
              "that differs. Read-only; the campaign is not run.")
@click.option("--agent", "agents", multiple=True, metavar="ID=ADDRESS",
              help="With --against-live: reach agent ID at ADDRESS (default: the campaign's "
              "address; a spawned agent is started here).")
@click.option("--visa", "visa", multiple=True, metavar="RECORDED=LIVE",
              help="With --against-live: ask VISA resource LIVE in place of the recorded one.")
@click.option("--visa-library", default=None,
              help="With --against-live: the pyvisa library (\"@py\", \"\" for IVI) "
              "[default: the campaign's].")
def replay(cassette: Path, analysis_only: bool, strict: bool, against_live: bool,
           agents: tuple[str, ...], visa: tuple[str, ...], visa_library: str | None) -> None:
    """Run the campaign recorded in CASSETTE (`hilbench run --record`) again, without the
    bench, and compare every figure with the recorded one.

    The real orchestrator runs the recorded campaign file against stand-ins: each agent a
    ZeroMQ socket on loopback answering from the cassette, each VISA instrument a stand-in
    resource answering from it, each answer matched to the same command in recorded order (a
    DMM returns a new value to each READ?). The clock is virtual: each reading returns the
    recorded one, sleeps and waits do not wait, so a 60 s power window replays in milliseconds
    and every time stamp comes out bit for bit.

    Compared: every run (in order, by unit), its exit status, and each of its figures
    (metrics: value, uncertainty and unit), exactly. A command the cassette does not hold
    stops the replay at once, naming the command and the nearest recorded one.

    --analysis-only recomputes the figures from the recorded events and samples instead (no
    orchestrator run; a cassette without channels or an audit bundle will do).

    Exit status: 0 every figure agrees; 1 any difference (one line each on stdout: a figure,
    a run, an unexpected command, or, --strict, a recorded interaction never used); 2 not a
    cassette, or recorded without channels. With --against-live: 0 every answer agrees; 1 an
    answer differs (identity, firmware, versions, capabilities, settings); 3 an agent or
    instrument could not be reached.
    """
    if analysis_only:
        _analysis_only(cassette)
        return
    if against_live:
        _against_live(cassette, _pairs(agents, "--agent"), _pairs(visa, "--visa"), visa_library)
        return
    from hilbench.cassette.replay import replay_cassette
    from hilbench.orchestrator.campaign import CampaignError

    try:
        outcome = replay_cassette(cassette, strict=strict)
    except (ValueError, CampaignError, OSError) as exc:
        _refused(cassette, exc)
    for line in outcome.differences:
        click.echo(line)
    span = (f" (recorded over {outcome.recorded_s:.1f} s)"
            if outcome.recorded_s is not None else "")
    summary = (f"{cassette}: {outcome.runs} run(s), {outcome.figures} figure(s) compared; "
               f"replayed in {outcome.replay_s:.1f} s{span}")
    if outcome.differences:
        click.echo(f"{len(outcome.differences)} difference(s); {summary}", err=True)
        raise SystemExit(EXIT_RUN_FAILED)
    click.echo(f"every figure agrees: {summary}")


def _refused(cassette: Path, exc: Exception) -> NoReturn:
    """A cassette that cannot be replayed: one ``error:`` line per problem (a recorded
    campaign file may hold several), each naming the cassette; exit 2."""
    for problem in getattr(exc, "problems", None) or [str(exc)]:
        click.echo(f"error: {cassette}: {problem}", err=True)
    raise SystemExit(EXIT_USAGE) from None


def _against_live(cassette: Path, agents: dict[str, str], visa: dict[str, str],
                  visa_library: str | None) -> None:
    from hilbench.cassette.live import against_live
    from hilbench.orchestrator.campaign import CampaignError

    try:
        outcome = against_live(cassette, agents, visa, visa_library)
    except (ValueError, CampaignError, OSError) as exc:
        _refused(cassette, exc)
    for line in outcome.differences:
        click.echo(line)
    for line in outcome.unreachable:
        click.echo(f"unreachable: {line}", err=True)
    if outcome.differences:
        click.echo(f"{len(outcome.differences)} difference(s) from the live bench in "
                   f"{outcome.compared} answer(s)", err=True)
        raise SystemExit(EXIT_RUN_FAILED)
    if outcome.unreachable:
        raise SystemExit(EXIT_UNREACHABLE)
    click.echo(f"{outcome.compared} answer(s) from the live bench agree with {cassette}")


def _analysis_only(cassette: Path) -> None:
    from hilbench.cassette.analysis import compare_recording
    from hilbench.cassette.bundle import BAGIT, DATA
    from hilbench.confined_read import ConfinedFolder

    folder = ConfinedFolder(cassette)
    if folder.exists(BAGIT):  # an audit bundle: its payload is the recording
        folder = folder.sub(DATA)
    cassette = folder.path
    try:
        outcome = compare_recording(folder)
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
