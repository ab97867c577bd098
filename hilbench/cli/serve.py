"""`hilbench serve`: the store's campaigns as read-only pages in the browser."""

from __future__ import annotations

import shutil
import signal
import tempfile
import threading
from pathlib import Path

import click

from hilbench.cli import EXIT_USAGE
from hilbench.cli.options import DB, DB_HELP
from hilbench.cli.options import db_path as store_location
from hilbench.cli.report import require_report_extra
from hilbench.store import StoreError


@click.command()
@click.option("--db", "db_path", type=DB, default=None,
              help=DB_HELP)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Anything but loopback needs --token.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535),
              help="Port (0: any free port; the address is printed).")
@click.option("--token", default=None, envvar="HILBENCH_SERVE_TOKEN",
              help="The token every request must carry (16 or more of A-Z a-z 0-9 . _ ~ -) "
                   "[env: HILBENCH_SERVE_TOKEN; prefer it: other users see command lines] "
                   "[default: a random one, printed in the URL].")
def serve(db_path: Path | None, host: str, port: int, token: str | None) -> None:
    """Serve read-only results pages: per campaign its summary tables, failure reasons and the
    full report (figures, workflow, methodology, provenance); per run its phases, events,
    figures and power trace; the daemon's status (campaign, unit, ETA, agents, instruments,
    last error, schedules) and a live power plot of the running run, which reload themselves.
    Times are in the server's timezone (set TZ), the zone named. The store is only read
    (SQLite read-only connection); GET and HEAD only. Pages: docs/operation/results-page.md.

    Owner-only: every request must carry a token, a random one unless --token gives it.
    Open the URL printed at start, http://127.0.0.1:8765/TOKEN/ (the token is the first part
    of every page's path), or send `Authorization: Bearer TOKEN` (curl, scripts). Anything
    else, e.g. another local user's browser or curl without it, gets 403 and no data.

    Binds 127.0.0.1 by default. On an address other hosts reach, give --token; the page is
    plain HTTP, so prefer an SSH tunnel to a loopback server on untrusted networks. Pages run
    no script (Content-Security-Policy) and show every stored value as text. Stop with
    Ctrl-C.
    """
    require_report_extra("serve")
    from hilbench.report.serve import make_server

    path = store_location(db_path)
    reports = Path(tempfile.mkdtemp(prefix="hilbench-serve-"))
    try:
        try:
            server = make_server(path, host, port, token, report_dir=reports)
        except (ValueError, StoreError) as exc:
            click.echo(f"error: {exc}", err=True)
            raise SystemExit(EXIT_USAGE) from None
        except OSError as exc:
            click.echo(f"error: cannot listen on {host}:{port}: {exc.strerror or exc}",
                       err=True)
            raise SystemExit(EXIT_USAGE) from None
        click.echo(f"serving {path} (read-only) on {server.url()}", err=False)
        click.echo("only requests with the token in that URL (or Authorization: Bearer) are "
                   "answered", err=True)
        # SIGTERM (systemd, kill) ends serve_forever from another thread, so the temporary
        # report folder is removed as on Ctrl-C.
        signal.signal(signal.SIGTERM,
                      lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
        with server:
            try:
                server.serve_forever()
            except KeyboardInterrupt:
                click.echo("stopped", err=True)
                raise SystemExit(130) from None
    finally:
        shutil.rmtree(reports, ignore_errors=True)
