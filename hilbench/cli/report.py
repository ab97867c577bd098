"""`hilbench report CAMPAIGN… --system system.toml --out DIR`: the NeuroBench submission report
(self-contained HTML, Markdown, figures as PNG and SVG) from the store."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import click

from hilbench.cli import EXIT_USAGE
from hilbench.cli.options import DB, DB_HELP
from hilbench.cli.options import db_path as store_location
from hilbench.store import Store, StoreError
from hilbench.store.paths import logs_dir


def require_report_extra(command: str) -> None:
    """Exit 2 with the install line when matplotlib or Jinja2 is missing."""
    try:
        import jinja2  # noqa: F401
        import matplotlib  # noqa: F401
    except ImportError as exc:
        click.echo(f"error: hilbench {command} needs {exc.name}: pip install "
                   "'hilbench[report]'", err=True)
        raise SystemExit(EXIT_USAGE) from None


def _progress_to(log_path: Path | None):  # type: ignore[no-untyped-def]
    started = time.perf_counter()

    def progress(message: str) -> None:
        line = f"[{time.perf_counter() - started:5.1f} s] report: {message}"
        click.echo(line, err=True)
        if log_path is not None:
            try:
                with log_path.open("a", encoding="utf-8") as f:
                    f.write(time.strftime("%Y-%m-%dT%H:%M:%SZ ", time.gmtime()) + line + "\n")
            except OSError:
                pass  # a report is not lost because its log could not be written

    return progress


def _resolve(store: Any, campaigns: tuple[str, ...], trace_runs: tuple[str, ...]
             ) -> tuple[list[tuple[str, str]], list[str]]:
    """The campaigns as (uid, name) and the --trace runs' uids; exit 2 for a run of none."""
    resolved = []
    for ref in campaigns:
        uid, note = store.resolve_campaign(ref)
        if note:
            click.echo(note, err=True)
        resolved.append((uid, store.campaign(uid)["name"]))
    traces = []
    for ref in trace_runs:
        run = store.find_run(ref)
        if run["campaign_uid"] not in {uid for uid, _ in resolved}:
            click.echo(f"error: --trace {ref}: run {run['uid'][:8]} belongs to none "
                       "of the campaigns given", err=True)
            raise SystemExit(EXIT_USAGE)
        traces.append(run["uid"])
    return resolved, traces


@click.command()
@click.argument("campaigns", nargs=-1, required=True)
@click.option("--db", "db_path", type=DB, default=None,
              help=DB_HELP)
@click.option("--system", "system_files", multiple=True,
              type=click.Path(dir_okay=False, path_type=Path),
              help="System description (template: examples/system.toml). Once for all "
                   "campaigns, or once per campaign in the same order.")
@click.option("--out", "out_dir", required=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="Folder for report.html, report.md, runs.csv and figures/ (created).")
@click.option("--reference", default=None,
              help="Cross-system ratios against this system (a campaign name as given) "
                   "[default: the first campaign].")
@click.option("--reported", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              default=None,
              help="Check the trials against figures reported earlier (the JSON or CSV of an "
                   "earlier `hilbench summary`) [default: each figure's trial mean].")
@click.option("--trace", "trace_runs", multiple=True,
              help="Draw the power trace of this run (uid prefix; repeat) instead of the "
                   "default choice (each workload's own pick, e.g. a power group's first "
                   "run).")
def report(campaigns: tuple[str, ...], db_path: Path | None, system_files: tuple[Path, ...],
           out_dir: Path, reference: str | None, reported: Path | None,
           trace_runs: tuple[str, ...]) -> None:
    """Write the NeuroBench report of CAMPAIGN(s) (names or uid prefixes) from the store.

    Sections: the system (from --system), a workflow diagram per procedure generated from the
    stored phases, timing and power methodology from the stored instrument identity,
    settings, windows and time resolution, results with uncertainties and the 5-trial check,
    and provenance (campaign and run ids, software versions). Several campaigns are drawn side
    by side (QUBO gap and power per solver and system; ASC Table 6 with power and energy
    ratios). Simulated figures say so in every table and figure.

    report.html is self-contained (figures embedded); report.md links figures/*.png; every
    figure is also written as SVG, and the same store gives byte-identical figure files.
    Needs the `report` extra (matplotlib, jinja2).
    """
    require_report_extra("report")
    from hilbench.report.document import build_report
    from hilbench.report.html import write_report
    from hilbench.report.system import SystemFileError, load_system
    from hilbench.report.trials import ReportedFileError, load_reported

    path = store_location(db_path)
    if len(system_files) not in (0, 1, len(campaigns)):
        click.echo(f"error: --system given {len(system_files)} times for {len(campaigns)} "
                   "campaigns: give it once (for all) or once per campaign", err=True)
        raise SystemExit(EXIT_USAGE)
    try:
        descriptions = [load_system(p) for p in system_files]
        figures = load_reported(reported) if reported else None
    except (SystemFileError, ReportedFileError) as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    systems = (descriptions * len(campaigns) if len(descriptions) == 1
               else descriptions or [None] * len(campaigns))
    try:
        with Store(path) as store:
            resolved, traces = _resolve(store, campaigns, trace_runs)
        labels = [name for _, name in resolved]
        if len(set(labels)) < len(labels):  # the same name twice: tell them apart by uid
            resolved = [(uid, f"{name}-{uid[:6]}") for uid, name in resolved]
        if reference is not None and reference not in [label for _, label in resolved]:
            click.echo(f"error: --reference {reference!r} is none of the campaigns "
                       f"({', '.join(label for _, label in resolved)})", err=True)
            raise SystemExit(EXIT_USAGE)
        out_dir.mkdir(parents=True, exist_ok=True)
        log = logs_dir(path)
        progress = _progress_to(log / "report.log" if log.is_dir() else None)
        result = build_report(path, resolved, systems, out_dir, reference=reference,
                              trace_runs=traces or None, reported=figures, progress=progress)
        progress("writing report.html and report.md")
        html, md = write_report(result, out_dir)
    except StoreError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    except OSError as exc:
        click.echo(f"error: cannot write the report into {out_dir}: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    click.echo(f"{html}\n{md}")
    sys.stdout.flush()
