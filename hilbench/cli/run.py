"""`hilbench run CAMPAIGN.toml` and `hilbench demo`."""

from __future__ import annotations

import logging
import shlex
import sys
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from hilbench.cli import EXIT_RUN_FAILED, EXIT_STORE_FAULT, EXIT_USAGE
from hilbench.cli.campaign import echo_campaign_error
from hilbench.cli.options import DB_OPTION, db_path

log = logging.getLogger(__name__)


class _Screen:
    """The campaign's progress bar and its lines on stderr (errors print even with --quiet)."""

    def __init__(self, quiet: bool) -> None:
        self.console = Console(stderr=True, quiet=quiet)
        self.errors = Console(stderr=True)
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[last]}"),
            TextColumn("{task.fields[eta]}"),
            console=self.console,
            transient=False,
        )

    def error(self, message: str) -> None:
        self.errors.print(f"[red]error:[/red] {escape(message)}", highlight=False,
                          soft_wrap=True)

    def say(self, text: str) -> None:
        """A plain line (no markup), e.g. the command that resumes."""
        self.errors.print(text, highlight=False, soft_wrap=True, markup=False)


def _open_campaign(campaign_path: Path, db: Path, trials: int | None, record: Path | None,
                   hint: str, screen: _Screen) -> tuple[Any, Any]:
    """The gated campaign and its cassette recorder (or None); refused (exit 2, or 4 for a
    store that cannot be written) before anything starts or is created beside the store."""
    from hilbench.cassette.recorder import CassetteRecorder
    from hilbench.orchestrator.gate import CampaignRefused, gate_file
    from hilbench.store import StoreError, StoreFault
    from hilbench.store.opening import check_store_path

    try:
        gated = gate_file(campaign_path, trials)
    except CampaignRefused as exc:
        echo_campaign_error(exc)
        raise SystemExit(EXIT_USAGE) from None
    try:
        if check_store_path(db):
            click.echo(f"new store {db}" + (" (owner-only)" if isinstance(db, Path) else ""))
    except StoreFault as exc:
        screen.error(str(exc))
        screen.say(hint)
        raise SystemExit(EXIT_STORE_FAULT) from None
    except StoreError as exc:
        screen.error(str(exc))
        raise SystemExit(EXIT_USAGE) from None
    try:
        recorder = (CassetteRecorder(record, campaign_path, gated.campaign, channels=True)
                    if record else None)
    except (FileExistsError, NotADirectoryError) as exc:
        screen.error(f"--record {record}: {exc}")
        raise SystemExit(EXIT_USAGE) from None
    return gated, recorder


class _Follow:
    """What the session runner tells the screen and the run log: the plan, each unit's end
    and the estimate of what is left."""

    def __init__(self, screen: _Screen, runlog: Any, campaign_path: Path, db: Path,
                 gated: Any, consumers: list) -> None:
        self.screen, self.runlog, self.campaign_path, self.db = screen, runlog, campaign_path, db
        self.gated, self.consumers = gated, consumers
        self.task = screen.progress.add_task(gated.campaign.name, total=None, last="", eta="")
        self.units: list = []
        self.live: Any = None  # made once the plan says which units are left

    def wire(self, runner: Any) -> None:
        runner.extra_consumers = list(self.consumers)
        runner.on_unit_done = self.unit_done
        runner.on_plan = self.plan
        self.units[:] = runner.units

    def unit_done(self, unit: Any, status: str, run_uid: str | None) -> None:
        # "retried": an unverified run whose unit runs again; the unit is not done yet
        eta = ""
        if self.live is not None:
            self.live.unit_done(unit, status, run_uid)
            eta = self.live.estimate().short()
        self.screen.progress.update(self.task, advance=0 if status == "retried" else 1,
                                    last=f"{status}: {unit.key!s}", eta=eta)
        run = run_uid[:8] if run_uid else ""
        if status in ("retried", "unverified"):
            self.screen.errors.print(
                f"[cyan]run {run} unverified[/cyan] "
                f"({escape(str(unit.key))}): its timing is outside the link's measured bound"
                + (", tried again" if status == "retried" else "; no attempt left, counted"))
        if status == "fail":
            self.screen.errors.print(f"[red]run {run} failed[/red] ({escape(str(unit.key))})")

    def plan(self, plan: Any) -> None:
        # What this run does with earlier attempts, before anything starts; shown with --quiet.
        from hilbench.orchestrator.eta import LiveEstimate

        message = plan.message(str(self.campaign_path))
        self.screen.say(message)
        if plan.action != "finished":
            self.live = LiveEstimate(self.units, plan.done, self.db)
            first = self.live.estimate()
            self.screen.progress.update(self.task, eta=first.short())
            self.runlog.note(f"campaign {self.gated.campaign.name} starting: "
                             f"{self.gated.bounds.summary()}; store {self.db}; "
                             f"estimate {first.text()}")
        else:  # no bar stuck at 0/N for what will not run
            self.screen.progress.update(self.task, visible=False)
        self.runlog.note(message)


def _run_campaign(
    campaign_path: Path,
    db: Path,
    resume: bool,
    record: Path | None,
    quiet: bool,
    resume_command: list[str],
    trials: int | None = None,
    again: bool = False,
) -> None:
    from hilbench.orchestrator.interrupt import signals_interrupt
    from hilbench.orchestrator.runlog import RunLog
    from hilbench.orchestrator.session import Outcome, run_session
    from hilbench.store.paths import logs_dir

    ran = (Outcome.COMPLETED, Outcome.FAILED_RUNS, Outcome.NOTHING_TO_DO)
    screen = _Screen(quiet)
    hint = f"to resume: {shlex.join(resume_command)}"
    gated, recorder = _open_campaign(campaign_path, db, trials, record, hint, screen)
    campaign = gated.campaign
    # A person reading a log (stdout not a terminal) gets one line per finished run; the same
    # lines always go to a file beside the store.
    runlog = RunLog.for_campaign(
        logs_dir(db), campaign.name, None if sys.stdout.isatty() else sys.stdout
    )
    follow = _Follow(screen, runlog, campaign_path, db, gated,
                     [runlog, *([recorder] if recorder else [])])
    try:
        with signals_interrupt(), screen.progress:
            outcome = run_session(
                campaign, db, follow.wire, again=again or not resume,
                made=lambda r: screen.progress.update(follow.task, total=len(r.units)))
        if outcome.outcome not in ran:
            # The log first: on a full disk its own failure is logged, and the line that
            # resumes must stay the last one printed.
            runlog.note(outcome.message + (f"; {hint}" if outcome.resumable else ""))
            screen.error(outcome.message)
            if outcome.resumable:
                screen.say(hint)
    finally:
        runlog.close()
        if recorder:
            recorder.close(discard_empty=True)
            if recorder.discarded:
                screen.say(f"--record {record}: no run was recorded, so no cassette was left "
                           "there")
    if outcome.outcome not in ran:
        raise SystemExit(outcome.exit_code)
    if outcome.outcome is Outcome.NOTHING_TO_DO:
        return  # said so above; nothing ran
    _print_end(outcome, db, campaign.name, runlog.path, screen)
    if outcome.outcome is Outcome.FAILED_RUNS:
        raise SystemExit(EXIT_RUN_FAILED)


def _print_end(outcome: Any, db: Path, name: str, log_path: Path, screen: _Screen) -> None:
    """The summary tables and the closing line, on stdout."""
    from hilbench.orchestrator.interrupt import Interrupted
    from hilbench.report.summary import print_summary

    # Piped or logged output is not cut to 80 columns: the tables are the result.
    out = Console() if sys.stdout.isatty() else Console(width=160)
    try:
        print_summary(db, outcome.campaign_uid, out, name)
        out.print(
            f"campaign {outcome.campaign_uid[:8]}: {outcome.completed} run(s) completed, "
            f"{outcome.skipped} resumed from earlier, {outcome.failed} failed, "
            f"{outcome.unverified} unverified; store {db}; run log {log_path}",
            highlight=False,
        )
    except Interrupted as exc:
        screen.error(f"{exc} while printing the summary; the campaign had ended and every run "
                     f"is in {db} (`hilbench results` shows them)")
        raise SystemExit(exc.exit_code) from None


_DB_OPTION = DB_OPTION


def invoked_program() -> list[str]:
    """The program as this process was started, so a printed command runs as typed:
    ``.venv/bin/hilbench`` (not bare ``hilbench``, which may not be on PATH) or
    ``python -m hilbench``."""
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else "hilbench"
    if Path(argv0).name == "__main__.py":
        return [sys.executable, "-m", "hilbench"]
    return [argv0]


def _interrupted_at_start(exc: BaseException, resume_command: list[str]) -> SystemExit:
    """A stop signal before the campaign began: nothing ran; say so and how to start it."""
    from hilbench.orchestrator.interrupt import Interrupted

    assert isinstance(exc, Interrupted)
    click.echo(f"error: {exc} before the campaign started; nothing was run", err=True)
    click.echo(f"to resume: {shlex.join(resume_command)}", err=True)
    return SystemExit(exc.exit_code)


_db_path = db_path


@click.command()
@click.argument("campaign", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_DB_OPTION
@click.option(
    "--resume/--no-resume",
    default=True,
    show_default=True,
    help="Skip units that an earlier, interrupted attempt of this campaign finished "
    "(--no-resume: the same as --again).",
)
@click.option(
    "--again",
    is_flag=True,
    help="Run every unit as a new campaign, even when an earlier attempt of this campaign "
    "finished (without it, a finished campaign is reported and nothing runs).",
)
@click.option(
    "--record",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also write a cassette into this new (or empty) folder: a manifest (software, "
    "campaign file and its sha256, agents, instruments, clock offsets), every run document "
    "as JSON lines and the raw power samples as array files named by sha256; owner-only, "
    "flushed as it goes.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
@click.option(
    "--trials",
    type=click.IntRange(min=1),
    default=None,
    help="Run every unit this many times (NeuroBench: 5), overriding [campaign] repetitions; "
    "tables show each figure's mean over the trials, NeuroBench's rule (that mean within 5 % of "
    "the reported figure; check against an earlier one with `hilbench summary --reported`) "
    "and the per-trial spread beside it.",
)
def run(campaign: Path, db: Path | None, resume: bool, again: bool, record: Path | None,
        quiet: bool, trials: int | None) -> None:
    """Run a campaign file (TOML): its agents, workloads and repetitions.

    Results go to the SQLite store; a summary table is printed at the end; one line per
    finished run goes to STORE.logs/NAME.log (and to stdout when it is not a terminal).

    Exit status: 0 all runs succeeded, 1 some runs failed, 2 bad campaign or store, 3 an
    agent or instrument was unreachable, lost or failed (the campaign stops), 4 the store
    could not be written (disk full, I/O error, read-only), 130 stopped by Ctrl-C (SIGINT),
    143 stopped by SIGTERM. After 3, 4, 130 and 143 the run in progress is marked in the
    store (after 4, by the next run), completed runs stay, and the same command resumes.

    Before it starts, it says what it does with earlier attempts in the same store: "resuming
    campaign X: k of n units done"; "new campaign …: FILE changed since campaign X (keys …)";
    or, for a campaign that already finished, that there is nothing to do (exit 0; --again
    runs it anew).
    """
    from hilbench.orchestrator.interrupt import Interrupted

    db = _db_path(db)
    command = [*invoked_program(), "run", str(campaign), "--db", str(db)]
    if trials is not None:
        command += ["--trials", str(trials)]
    try:
        _run_campaign(campaign, db, resume, record, quiet, command, trials, again)
    except Interrupted as exc:
        raise _interrupted_at_start(exc, command) from None


@click.command()
@_DB_OPTION
@click.option("-q", "--quiet", is_flag=True, help="No progress display.")
@click.option("--again", is_flag=True, help="Run it anew when it already finished in this store.")
def demo(db: Path | None, quiet: bool, again: bool) -> None:
    """Run the example QUBO campaign (examples/qubo-cpu.toml) on this machine.

    hilbench starts the CPU agent process itself on loopback, runs D-Wave SA and Tabu for
    fixed timeouts on NeuroBench MIS workloads, stores every run and prints a BKS-gap table.
    """
    resource = files("hilbench.campaigns").joinpath("demo.toml")
    db = _db_path(db)
    from hilbench.orchestrator.interrupt import Interrupted

    command = [*invoked_program(), "demo", "--db", str(db)]
    try:
        with as_file(resource) as path:
            _run_campaign(path, db, True, None, quiet, command, again=again)
    except Interrupted as exc:
        raise _interrupted_at_start(exc, command) from None
