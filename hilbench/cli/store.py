"""`hilbench store check` and `hilbench store salvage`: a damaged store, examined and rescued."""

from __future__ import annotations

from pathlib import Path

import click

from hilbench.cli import EXIT_RUN_FAILED, EXIT_USAGE


@click.group()
def store() -> None:
    """Examine a store that SQLite calls damaged ("database disk image is malformed": a
    truncated copy, a disk that lost blocks) and copy its intact runs into a new store."""


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
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The store to check [default: $HILBENCH_DB or ./hilbench.sqlite].",
)
def check(db: Path | None) -> None:
    """Say whether a store is intact and, if not, what is damaged: SQLite's integrity check,
    then per table how many rows can be read and which ranges sat in lost pages.

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
    if report.wal:
        click.echo(f"note: {path}-wal exists: its last writes are not in the main file yet "
                   "(open the store once with `hilbench results --db` to fold them in)")
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
@click.argument("bad", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--out",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The new store to write (must not exist; owner-only).",
)
def salvage(bad: Path, out: Path) -> None:
    """Copy every run of the damaged store BAD that can still be read into a new store OUT.

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
    wal = Path(f"{bad}-wal")
    if wal.exists() and wal.stat().st_size:
        click.echo(f"note: {wal} holds writes not yet in {bad}; they are not recovered")
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
