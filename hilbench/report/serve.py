"""`hilbench serve`: a read-only results page per campaign, from the store, in the browser.

Pages: ``/`` lists the campaigns; ``/status`` is the daemon's status as a page (campaign,
unit, ETA and its basis, agents, instruments, last error, queue, schedules);
``/campaign/<uid>`` shows its summary tables, its failure reason and each run that did not
succeed with its reason; ``/run/<uid>`` one run's phases, events, figures and power trace
(``power.svg``); ``/live`` the running run's last seconds of power (``power-live.svg``);
``/campaign/<uid>/report/`` is the full NeuroBench report (made on first request and again
whenever the campaign has changed); ``/status.json`` is the daemon's status as JSON. Live
pages reload by ``<meta http-equiv="refresh">``: no script. Times are in the server's timezone,
the zone named (docs/operation/results-page.md).

Owner-only: every request carries the server's token, a random one unless given, as the first
part of the path (``http://127.0.0.1:8765/TOKEN/``, the URL printed at start; relative links
keep it) or as ``Authorization: Bearer TOKEN``. Without it the answer is 403 and no data, so
another local user who can reach the port sees nothing. No cookie: a browser sends a cookie
to every port of the host, another user's server included.

Read-only by construction: the store is opened through :class:`~hilbench.store.Store` (an
SQLite ``mode=ro`` URI) and the server answers GET and HEAD only. Pages come from templates
escaped by construction (:mod:`hilbench.report.markup`) and run no script (CSP header).

The daemon's status comes from ``hilbench status --json --db STORE`` (the daemon's own
command), run at most every few seconds; while the daemon runs, the pages reload themselves.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import re
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from hilbench.report.markup import CSP_HEADER
from hilbench.report.serve_trace import LIVE_WINDOW_S, TraceImages
from hilbench.report.serve_views import (
    campaign_runs_view,
    daemon_running,
    live_run,
    local_time,
    run_view,
    status_view,
)
from hilbench.safe_paths import inside, open_inside, safe_name
from hilbench.store import Store, StoreError

log = logging.getLogger(__name__)

STATUS_TTL_S = 5.0
STATUS_TIMEOUT_S = 5.0
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9._~-]{16,}")
TEXT = "text/plain; charset=utf-8"
FORBIDDEN = (b"403: this server answers only requests that carry its token: open the URL "
             b"`hilbench serve` printed at start, or send Authorization: Bearer TOKEN\n")


def new_token() -> str:
    """A random token (192 bits), URL-safe: it is a path segment of every page's address."""
    return secrets.token_urlsafe(24)


def check_token(token: str) -> str:
    """``token`` if it can stand in a URL path and is long enough not to be guessed."""
    if not TOKEN_PATTERN.fullmatch(token):
        raise ValueError("the token must be at least 16 characters of A-Z a-z 0-9 . _ ~ - "
                         "(leave --token out for a random one)")
    return token


def is_loopback(host: str) -> bool:
    """True for 127.0.0.0/8, ::1 and ``localhost``: addresses no other host reaches."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class DaemonStatus:
    """The daemon's status for one store, from its own ``hilbench status --json`` command,
    cached for a few seconds (a page load must not start a process per request)."""

    def __init__(self, db_path: Path, command: list[str] | None = None) -> None:
        self.db_path = db_path
        self.command = command or [sys.executable, "-m", "hilbench", "status", "--json",
                                   "--db", str(db_path)]
        self._lock = threading.Lock()
        self._cached: tuple[float, dict[str, Any]] | None = None

    def get(self) -> dict[str, Any]:
        """``{"available": bool, "status": {...} | None, "reason": str}``."""
        with self._lock:
            if self._cached and time.monotonic() - self._cached[0] < STATUS_TTL_S:
                return self._cached[1]
            value = self._ask()
            self._cached = (time.monotonic(), value)
            return value

    def _ask(self) -> dict[str, Any]:
        try:
            proc = subprocess.run(self.command, capture_output=True, text=True,
                                  timeout=STATUS_TIMEOUT_S, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return {"available": False, "status": None, "reason": f"status command: {exc}"}
        if proc.returncode == 0:
            try:
                return {"available": True, "status": json.loads(proc.stdout), "reason": ""}
            except json.JSONDecodeError:
                return {"available": False, "status": None,
                        "reason": "hilbench status --json printed no JSON"}
        err = (proc.stderr or proc.stdout).strip().splitlines()
        if "No such command" in proc.stderr:
            reason = ("this hilbench has no daemon (`hilbench status` is not installed); "
                      "only stored results are shown")
        else:
            reason = err[-1] if err else f"hilbench status exited {proc.returncode}"
        return {"available": False, "status": None, "reason": reason}


class ReportCache:
    """Reports made on request into a private folder, remade when the campaign changed."""

    def __init__(self, db_path: Path, root: Path) -> None:
        self.db_path = db_path
        self.root = root
        self.lock = threading.Lock()  # matplotlib's rc context is process-wide
        self._made: dict[str, tuple[Any, Path]] = {}

    def folder(self, campaign: dict[str, Any]) -> Path:
        from hilbench.report.document import build_report
        from hilbench.report.html import write_report

        uid = campaign["uid"]
        version = (campaign["n_runs"], campaign["status"], campaign["wall_stop"])
        with self.lock:
            made = self._made.get(uid)
            if made and made[0] == version:
                return made[1]
            # the uid is the store's word: a name, not a path
            out = inside(self.root, safe_name(
                f"{uid}-{len(self._made)}-{int(time.monotonic() * 1000)}"))
            report = build_report(self.db_path, [(uid, campaign["name"])], [None], out)
            write_report(report, out)
            self._made[uid] = (version, out)
            return out


class ResultsServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], db_path: Path, token: str,
                 status: DaemonStatus, reports: ReportCache) -> None:
        self.db_path = db_path
        self.token = token
        self.status = status
        self.reports = reports
        self.traces = TraceImages(db_path, reports.root / "traces", reports.lock)
        super().__init__(address, Handler)

    def url(self) -> str:
        """The address to open: the token is its first path part."""
        host, port = self.server_address[:2]
        shown = f"[{host}]" if ":" in str(host) else host
        return f"http://{shown}:{port}/{self.token}/"


_ENV: Any = None


def _render(template: str, **values: Any) -> bytes:
    """A page from its template (autoescaped: :func:`hilbench.report.markup.html_environment`)."""
    global _ENV
    if _ENV is None:
        from hilbench.report.html import table_view
        from hilbench.report.markup import html_environment
        from hilbench.simulation import LABEL

        env = html_environment()
        env.globals.update(table_view=table_view, when=local_time, simulated_label=LABEL)
        _ENV = env
    return _ENV.get_template(template).render(**values).encode()


class Handler(BaseHTTPRequestHandler):
    server: ResultsServer
    server_version = "hilbench-serve"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        line = format % args
        log.info("%s %s", self.address_string(), line.replace(self.server.token, "TOKEN"))

    # -- access ---------------------------------------------------------------------------

    def _base(self, path: str) -> str | None:
        """The path prefix this request proved the token with (``/TOKEN``, or ``""`` for the
        Authorization header); None: no token, no page."""
        token = self.server.token.encode()
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer ") and hmac.compare_digest(
                auth[len("Bearer "):].strip().encode(), token):
            return ""
        first = path.split("/")[1] if path.startswith("/") else ""
        if hmac.compare_digest(first.encode(), token):
            return "/" + self.server.token
        return None

    def do_HEAD(self) -> None:
        self._handle(head=True)

    def do_GET(self) -> None:
        self._handle(head=False)

    def _refuse_method(self) -> None:
        if self._base(urlsplit(self.path).path) is None:
            self._send(HTTPStatus.FORBIDDEN, TEXT, FORBIDDEN)
            return
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, TEXT, b"read-only: GET and HEAD only\n",
                   extra={"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse_method

    def _handle(self, head: bool) -> None:
        path = urlsplit(self.path).path
        base = self._base(path)
        if base is None:
            self._send(HTTPStatus.FORBIDDEN, TEXT, FORBIDDEN, head=head)
            return
        page = path[len(base):] or "/"
        if re.fullmatch(r"/campaign/[^/]+/report", page):  # relative links need the slash
            self._send(HTTPStatus.PERMANENT_REDIRECT, TEXT, b"", head=head,
                       extra={"Location": path + "/"})
            return
        try:
            status, ctype, body = self._route(page, base)
        except StoreError as exc:
            status, ctype, body = HTTPStatus.NOT_FOUND, TEXT, f"{exc}\n".encode()
        except Exception:  # a page that fails must not take the server down
            log.exception("serving %s failed", path.replace(self.server.token, "TOKEN"))
            status, ctype, body = (HTTPStatus.INTERNAL_SERVER_ERROR, TEXT,
                                   b"internal error; see the server's log\n")
        self._send(status, ctype, body, head=head)

    def _send(self, status: HTTPStatus, ctype: str, body: bytes, *, head: bool = False,
              extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP_HEADER)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    # -- pages ----------------------------------------------------------------------------

    def _route(self, path: str, base: str) -> tuple[HTTPStatus, str, bytes]:
        html_type = "text/html; charset=utf-8"
        if path in ("/", "/index.html"):
            return HTTPStatus.OK, html_type, self._index(base)
        if path == "/status.json":
            return (HTTPStatus.OK, "application/json",
                    json.dumps(self.server.status.get()).encode())
        if path == "/status":
            return HTTPStatus.OK, html_type, self._status(base)
        if path == "/live":
            return HTTPStatus.OK, html_type, self._live(base)
        parts = [unquote(p) for p in path.split("/")[1:]]
        if len(parts) in (2, 3) and parts[0] == "run" and parts[1]:
            return self._run(parts[1], parts[2:], base)
        if len(parts) >= 2 and parts[0] == "campaign" and parts[1]:
            with Store(self.server.db_path) as store:
                campaign = store.campaign(store.resolve_campaign_uid(parts[1]))
            if len(parts) == 2:
                return HTTPStatus.OK, html_type, self._campaign(campaign, base)
            if parts[2] == "report":
                return self._report_file(campaign, parts[3:])
        return HTTPStatus.NOT_FOUND, TEXT, b"no such page\n"

    def _refresh(self, status: dict[str, Any], running: bool = False) -> int | None:
        return int(STATUS_TTL_S * 2) if running or daemon_running(status) else None

    def _index(self, base: str) -> bytes:
        with Store(self.server.db_path) as store:
            campaigns = store.campaigns()
        status = self.server.status.get()
        return _render("serve_index.html.j2", base=base, store=str(self.server.db_path),
                       campaigns=list(reversed(campaigns)), refresh_s=self._refresh(status),
                       **status_view(status))

    def _campaign(self, campaign: dict[str, Any], base: str) -> bytes:
        from hilbench.report.campaign_data import load_campaign_data
        from hilbench.report.summary import summary_tables

        tables = summary_tables(load_campaign_data(self.server.db_path, campaign["uid"]))
        status = self.server.status.get()
        return _render("serve_campaign.html.j2", base=base, campaign=campaign, tables=tables,
                       refresh_s=self._refresh(status, campaign["status"] == "incomplete"),
                       **campaign_runs_view(self.server.db_path, campaign["uid"]),
                       **status_view(status))

    def _status(self, base: str) -> bytes:
        status = self.server.status.get()
        view = status_view(status)
        current = view["current"]
        running = live_run(self.server.db_path,
                           current["campaign_uid"] if current else None) if view[
                               "running"] else None
        return _render("serve_status_page.html.j2", base=base, live=running,
                       refresh_s=self._refresh(status), **view)

    def _live(self, base: str) -> bytes:
        status = self.server.status.get()
        view = status_view(status)
        current = view["current"]
        running = live_run(self.server.db_path, current["campaign_uid"] if current else None)
        return _render("serve_live.html.j2", base=base, live=running,
                       window_s=int(LIVE_WINDOW_S), refresh_s=int(STATUS_TTL_S), **view)

    def _run(self, ref: str, rest: list[str], base: str) -> tuple[HTTPStatus, str, bytes]:
        with Store(self.server.db_path) as store:
            uid = store.find_run(ref)["uid"]
        if rest in ([], [""]):
            view = run_view(self.server.db_path, uid)
            return HTTPStatus.OK, "text/html; charset=utf-8", _render(
                "serve_run.html.j2", base=base, refresh_s=int(STATUS_TTL_S * 2) if view[
                    "running"] else None, **view)
        if rest[0] in ("power.svg", "power-live.svg"):
            body = self.server.traces.svg(
                uid, LIVE_WINDOW_S if rest[0] == "power-live.svg" else None)
            if body is None:
                return HTTPStatus.NOT_FOUND, TEXT, b"this run stored no power readings\n"
            return HTTPStatus.OK, "image/svg+xml", body
        return HTTPStatus.NOT_FOUND, TEXT, b"no such page\n"

    def _report_file(self, campaign: dict[str, Any],
                     rest: list[str]) -> tuple[HTTPStatus, str, bytes]:
        if rest and rest[-1] == "":  # a folder's address: its page
            rest = rest[:-1]
        if any("/" in part for part in rest):  # an encoded slash: no file of ours has one
            return HTTPStatus.NOT_FOUND, TEXT, b"no such file\n"
        name = "/".join(rest or ["report.html"])
        folder = self.server.reports.folder(campaign)
        try:
            with open_inside(folder, name) as fh:
                body = fh.read()
        except OSError:  # OutsideFolder included
            return HTTPStatus.NOT_FOUND, TEXT, b"no such file\n"
        types = {".html": "text/html; charset=utf-8", ".png": "image/png",
                 ".svg": "image/svg+xml", ".md": "text/markdown; charset=utf-8",
                 ".csv": "text/csv; charset=utf-8"}
        return HTTPStatus.OK, types.get(Path(name).suffix, "application/octet-stream"), body


def make_server(db_path: Path, host: str = "127.0.0.1", port: int = 8765,
                token: str | None = None, status: DaemonStatus | None = None,
                report_dir: Path | None = None) -> ResultsServer:
    """A server bound to ``host:port`` (port 0: any free one) answering only requests with
    ``token`` (None: a random one, :attr:`ResultsServer.token`); refuses a non-loopback host
    without a token given (ValueError), a token too short or not URL-safe (ValueError) and a
    store it cannot read (StoreError)."""
    if not is_loopback(host) and not token:
        raise ValueError(f"--host {host} is reachable from other hosts: give --token (or "
                         "serve on 127.0.0.1 and tunnel to it)")
    token = check_token(token) if token else new_token()
    with Store(db_path):
        pass  # refuse a missing or foreign file now, not at the first request
    root = report_dir or Path(tempfile.mkdtemp(prefix="hilbench-serve-"))
    return ResultsServer((host, port), db_path, token, status or DaemonStatus(db_path),
                         ReportCache(db_path, root))
