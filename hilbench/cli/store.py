"""`hilbench store check` and `hilbench store salvage`: a damaged SQLite store, examined and
rescued; `hilbench store copy`: runs moved between stores of either back end, then checked."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import click

from hilbench.cli import EXIT_RUN_FAILED, EXIT_USAGE


@click.group()
def store() -> None:
    """Copy runs between stores (SQLite file or PostgreSQL URL), and examine a SQLite store
    that SQLite calls damaged ("database disk image is malformed": a truncated copy, a disk
    that lost blocks) and copy its intact runs into a new store."""


def _sqlite_file(value: str | None, param: click.Parameter, must_exist: bool = True) -> Path | None:
    """A SQLite store file; a PostgreSQL URL is refused (these commands read SQLite's pages),
    with its password hidden."""
    if value is None:
        return None
    from hilbench.store.engine import is_url, redact

    if is_url(value):
        raise click.BadParameter(
            f"{redact(value)}: this command reads SQLite files page by page and works on SQLite "
            "stores only (a PostgreSQL store is checked by its server; `hilbench store copy` "
            "copies it to a file)", param=param)
    path = Path(value)
    if path.is_dir():
        raise click.BadParameter(f"{value} is a directory, not a store file", param=param)
    if must_exist and not path.exists():
        raise click.BadParameter(f"{value} does not exist", param=param)
    return path


def _ranges(lost: list) -> str:
    def span(r) -> str:
        if r.lo is not None and r.lo + 1 == r.hi:
            return f"rowid {r.hi}"
        return f"rowids {'…' if r.lo is None else r.lo + 1}–{'…' if r.hi is None else r.hi}"

    shown = [f"{span(r)} (page {r.page}: {r.why})" for r in lost[:3]]
    more = f" and {len(lost) - 3} more" if len(lost) > 3 else ""
    return "; ".join(shown) + more


@store.command()
@click.option(
    "--db",
    callback=lambda ctx, param, value: _sqlite_file(value, param, must_exist=False),
    default=None,
    help="The SQLite store to check [default: $HILBENCH_DB or ./hilbench.sqlite].",
)
def check(db: Path | None) -> None:
    """Say whether a SQLite store is intact and, if not, what is damaged: SQLite's integrity
    check, then per table how many rows can be read and which ranges sat in lost pages.
    SQLite only: a PostgreSQL store is checked by its server (and `store copy` checks copies).

    Exit status: 0 intact, 1 damaged (run `hilbench store salvage`), 2 not a store.
    """
    from hilbench.store import StoreError, default_db_path
    from hilbench.store.salvage import check as check_store

    path = db if db is not None else default_db_path()
    try:
        report = check_store(path)
    except StoreError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    if report.wal_pages:
        click.echo(f"note: read through {path}-wal: {report.wal_pages} committed page(s) not "
                   "in the main file yet (the next writer folds them in)")
    if not report.damaged:
        click.echo(f"{path}: intact ({report.pages_in_file} pages; "
                   + ", ".join(f"{n} {t}" for t, n in report.rows.items()) + ")")
        return
    click.echo(f"{path}: DAMAGED")
    if report.pages_in_file < report.pages_expected:
        click.echo(f"  the file is cut short: {report.pages_in_file} of "
                   f"{report.pages_expected} pages are there")
    for problem in report.problems:
        click.echo(f"  sqlite: {problem}")
    for table, lost in report.lost.items():
        state = f"{len(lost)} lost range(s): {_ranges(lost)}" if lost else "no lost pages"
        click.echo(f"  {table}: {report.rows[table]} readable rows; {state}")
    click.echo(f"to recover the intact runs: hilbench store salvage {path} --out NEW.sqlite")
    raise SystemExit(EXIT_RUN_FAILED)


@store.command()
@click.argument("bad", callback=lambda ctx, param, value: _sqlite_file(value, param))
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The new store to write (must not exist; owner-only).",
)
def salvage(bad: Path, out: Path) -> None:
    """Copy every run of the damaged SQLite store BAD that can still be read into a new
    SQLite store OUT (SQLite only: it reads the file's pages itself).

    The file is read page by page (SQLite's own reader stops at the first bad page). A run
    whose rows all sit in readable pages is copied as it was; a run next to a lost range, which
    may have lost events, samples or metrics, is copied with status `fail` and a reason
    starting `invalid: salvaged`, so summaries never average it in. BAD is not changed.
    """
    from hilbench.store import StoreError
    from hilbench.store.salvage import salvage as salvage_store

    try:
        report = salvage_store(bad, out)
    except StoreError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    lost = sum(len(v) for v in report.lost.values())
    click.echo(
        f"new store {out}: {report.runs} run(s) recovered from {bad}, {report.intact} intact, "
        f"{len(report.invalid)} marked invalid (rows may be lost), {report.campaigns} "
        f"campaign(s); {lost} lost range(s) in the file"
        + (f"; {report.orphan_rows} row(s) of runs whose run record is lost were left out"
           if report.orphan_rows else "")
    )


@store.command()
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The bench's store file [default: $HILBENCH_DB or ./hilbench.sqlite].",
)
@click.option("--to", "target", required=True, metavar="URL",
              help="The shared PostgreSQL store (postgresql://…; credentials from libpq: "
                   "service file, PG* environment, ~/.pgpass).")
@click.option("--batch", type=click.IntRange(min=1), default=200, show_default=True,
              help="Runs per transaction.")
def push(db: Path | None, target: str, batch: int) -> None:
    """Copy the finished runs of a bench's store file to a shared PostgreSQL store, by run id.

    Runs already there are left as they are, and each pushed run is noted in the store file,
    so pushing again (after a network outage, a kill, or twice by hand) loses nothing and
    duplicates nothing. `hilbench daemon --push-to URL` does the same continuously.
    """
    from hilbench.cli import EXIT_STORE_FAULT
    from hilbench.daemon.push import pending, push_all
    from hilbench.store import StoreError, default_db_path
    from hilbench.store.engine import is_url, redact

    if not is_url(target):
        click.echo(f"error: --to takes a postgresql:// URL, not {target!r}", err=True)
        raise SystemExit(EXIT_USAGE)
    path = db if db is not None else default_db_path()
    shown = redact(target)
    try:
        waiting = len(pending(path, target))
        click.echo(f"{path}: {waiting} finished run(s) not yet pushed to {shown}")
        total = push_all(path, target, lambda done, left: click.echo(
            f"  pushed {done} run(s), {left} left"), batch)
    except StoreError as exc:
        click.echo(f"error: {redact(str(exc))}", err=True)
        raise SystemExit(EXIT_STORE_FAULT) from None
    except Exception as exc:  # the server or the network: say which, keep the journal
        click.echo(f"error: pushing to {shown} failed ({type(exc).__name__}: "
                   f"{redact(str(exc)).strip()}); nothing is lost: run it again", err=True)
        raise SystemExit(EXIT_STORE_FAULT) from None
    click.echo(f"pushed {total} run(s) to {shown}; every finished run of {path} is there")


def _progress() -> Callable[[int, int], None]:
    """Progress on stderr: every 2 s, and at the end of a copy of more than a few runs."""
    last = [time.monotonic()]

    def show(done: int, total: int) -> None:
        now = time.monotonic()
        if now - last[0] >= 2.0 or (done == total and total >= 100):
            last[0] = now
            click.echo(f"copy: {done}/{total} runs", err=True)

    return show


@store.command("copy")
@click.argument("src")
@click.argument("dst")
@click.option("--run", "run_ids", multiple=True, metavar="ID",
              help="Copy only this run (repeatable; full run ids) [default: every run].")
@click.option("--no-check", is_flag=True, help="Skip comparing the copied runs afterwards.")
def copy_command(src: str, dst: str, run_ids: tuple[str, ...], no_check: bool) -> None:
    """Copy every run of store SRC into store DST, then check the copy.

    SRC and DST are each a SQLite file or a PostgreSQL URL (postgresql://…, credentials from
    a service file or the environment as for --db). DST is created if new. Runs are copied
    whole with their campaigns; a run already in DST is skipped when identical and an error
    (exit 1, naming the run) when different, so copying again is harmless. Afterwards every
    copied run is compared with SRC, row by row, sample by sample and metric by metric: the
    counts are printed, and the first difference, if any, names the run (exit 1).

    \b
    Examples:
      hilbench store copy hilbench.sqlite postgresql://db.lab/hilbench
      hilbench store copy 'postgresql:///?service=lab' local.sqlite
    """
    from hilbench.store import StoreError
    from hilbench.store.copy import RunConflict, compare_runs, copy_runs
    from hilbench.store.engine import parse_db

    try:
        src_t, dst_t = parse_db(src), parse_db(dst)
        if src_t.path is not None and not src_t.path.exists():
            raise StoreError(f"no store at {src_t.path} (file does not exist)")
        if src_t == dst_t:
            raise StoreError(f"{src_t}: source and destination are the same store")
        report = copy_runs(src_t, dst_t, run_ids or None, progress=_progress())
    except RunConflict as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_RUN_FAILED) from None
    except StoreError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    click.echo(f"copied {len(report.copied)} run(s) from {src_t} to {dst_t}; "
               f"{len(report.skipped)} already there and identical; "
               f"{report.campaigns} campaign(s) written")
    if no_check:
        return
    try:
        check = compare_runs(src_t, dst_t, run_ids or None)
    except StoreError as exc:
        click.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_USAGE) from None
    counts = ", ".join(f"{n} {name}" for name, n in check.counts.items())
    if check.difference is not None:
        click.echo(f"check FAILED after {check.runs} identical run(s): {check.difference}",
                   err=True)
        raise SystemExit(EXIT_RUN_FAILED)
    extra = f" ({check.extra_in_dst} other run(s) in {dst_t})" if check.extra_in_dst else ""
    click.echo(f"check: {check.runs} run(s) identical in both stores: {counts}{extra}")
