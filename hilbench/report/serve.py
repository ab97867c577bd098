"""`hilbench serve`: a read-only results page per campaign, from the store, in the browser.

Pages: ``/`` lists the campaigns; ``/campaign/<uid>`` shows its summary tables and, when a
daemon runs on the same store, its live status; ``/campaign/<uid>/report/`` is the full
NeuroBench report (made on first request and again whenever the campaign has changed);
``/status.json`` is the daemon's status as JSON.

Read-only by construction: the store is opened through :class:`~hilbench.store.Store` (an
SQLite ``mode=ro`` URI) and the server answers GET and HEAD only. It binds loopback unless a
token is given; with a token every request must carry it (``Authorization: Bearer …``, or
``?token=…`` once, which sets a cookie for the links that follow).

The daemon's status comes from ``hilbench status --json --db STORE`` (the daemon's own
command), run at most every few seconds; while the daemon runs, the pages reload themselves.
"""

from __future__ import annotations

import hmac
import html
import ipaddress
import json
import logging
import subprocess
import sys
import tempfile
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from hilbench.store import Store, StoreError

log = logging.getLogger(__name__)

STATUS_TTL_S = 5.0
STATUS_TIMEOUT_S = 5.0
COOKIE = "hilbench_token"
CSP = ("default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; "
       "script-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


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
        self._lock = threading.Lock()  # matplotlib's rc context is process-wide
        self._made: dict[str, tuple[Any, Path]] = {}

    def folder(self, campaign: dict[str, Any]) -> Path:
        from hilbench.report.document import build_report
        from hilbench.report.html import write_report

        uid = campaign["uid"]
        version = (campaign["n_runs"], campaign["status"], campaign["wall_stop"])
        with self._lock:
            made = self._made.get(uid)
            if made and made[0] == version:
                return made[1]
            out = self.root / f"{uid}-{len(self._made)}-{int(time.monotonic() * 1000)}"
            report = build_report(self.db_path, [(uid, campaign["name"])], [None], out)
            write_report(report, out)
            self._made[uid] = (version, out)
            return out


class ResultsServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], db_path: Path, token: str | None,
                 status: DaemonStatus, reports: ReportCache) -> None:
        self.db_path = db_path
        self.token = token
        self.status = status
        self.reports = reports
        super().__init__(address, Handler)


def _page(title: str, body: str, refresh_s: int | None = None) -> str:
    refresh = f'<meta http-equiv="refresh" content="{refresh_s}">' if refresh_s else ""
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html.escape(title)}</title>{refresh}<style>"
        "body{font-family:'DejaVu Sans',Arial,sans-serif;max-width:1100px;margin:1.5em auto;"
        "padding:0 1em}table{border-collapse:collapse;margin:.6em 0;font-size:13px}"
        "th,td{border:1px solid #999;padding:.25em .55em}th{background:#eee;text-align:left}"
        "td.right{text-align:right;white-space:nowrap}tr.section td{border-top:3px double #333}"
        ".status{border:2px solid #333;"
        "padding:.5em 1em}.mono{font-family:'DejaVu Sans Mono',monospace;font-size:12px}"
        f"</style></head><body>{body}</body></html>"
    )


def daemon_running(status: dict[str, Any]) -> bool:
    """The daemon answered and is not stopped (``hilbench status --json``'s daemon.state)."""
    if not status["available"]:
        return False
    state = ((status["status"] or {}).get("daemon") or {}).get("state")
    return state not in (None, "not running", "stopped")


def _status_html(status: dict[str, Any]) -> str:
    """The daemon's state in a few lines, its whole status JSON folded under them."""
    if not status["available"]:
        return (f'<div class="status" id="daemon-status">Daemon status: not available '
                f'({html.escape(status["reason"])}).</div>')
    current = status["status"] or {}
    daemon = current.get("daemon") or {}
    lines = [f"Daemon: {daemon.get('state', 'unknown')}"
             + (f" ({daemon['detail']})" if daemon.get("detail") else "")]
    if current.get("current"):
        lines.append("now: " + json.dumps(current["current"], ensure_ascii=False,
                                          default=str)[:300])
    queue = current.get("queue") or {}
    if "length" in queue:
        lines.append(f"queue: {queue['length']} item(s)")
    if current.get("last_error"):
        lines.append(f"last error: {current['last_error']}")
    if daemon_running(status):
        lines.append(f"(live: this page reloads every {int(STATUS_TTL_S * 2)} s)")
    text = json.dumps(current, indent=1, ensure_ascii=False, default=str)
    return ('<div class="status" id="daemon-status">'
            + "<br>".join(html.escape(line) for line in lines)
            + f'<details><summary>hilbench status --json</summary><pre class="mono">'
            f"{html.escape(text)}</pre></details></div>")


class Handler(BaseHTTPRequestHandler):
    server: ResultsServer
    server_version = "hilbench-serve"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        log.info("%s %s", self.address_string(), format % args)

    # -- access ---------------------------------------------------------------------------

    def _token_ok(self, query: dict[str, list[str]]) -> tuple[bool, bool]:
        """(allowed, set the cookie)."""
        token = self.server.token
        if token is None:
            return True, False
        offered = []
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer "):
            offered.append(auth[len("Bearer "):].strip())
        for part in self.headers.get("Cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE:
                offered.append(value)
        from_query = query.get("token", [])
        offered += from_query
        ok = any(hmac.compare_digest(o.encode(), token.encode()) for o in offered)
        return ok, ok and bool(from_query)

    def do_HEAD(self) -> None:
        self._handle(head=True)

    def do_GET(self) -> None:
        self._handle(head=False)

    def _refuse_method(self) -> None:
        self._send(HTTPStatus.METHOD_NOT_ALLOWED, "text/plain; charset=utf-8",
                   b"read-only: GET and HEAD only\n", extra={"Allow": "GET, HEAD"})

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse_method

    def _handle(self, head: bool) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        ok, set_cookie = self._token_ok(query)
        if not ok:
            self._send(HTTPStatus.UNAUTHORIZED, "text/plain; charset=utf-8",
                       b"a token is required (Authorization: Bearer TOKEN, or ?token=TOKEN)\n",
                       head=head)
            return
        extra = {}
        if set_cookie:
            extra["Set-Cookie"] = (f"{COOKIE}={query['token'][0]}; HttpOnly; SameSite=Strict; "
                                   "Path=/")
        try:
            status, ctype, body = self._route(url.path)
        except StoreError as exc:
            status, ctype, body = (HTTPStatus.NOT_FOUND, "text/plain; charset=utf-8",
                                   f"{exc}\n".encode())
        except Exception:  # a page that fails must not take the server down
            log.exception("serving %s failed", url.path)
            status, ctype, body = (HTTPStatus.INTERNAL_SERVER_ERROR,
                                   "text/plain; charset=utf-8",
                                   b"internal error; see the server's log\n")
        self._send(status, ctype, body, head=head, extra=extra)

    def _send(self, status: HTTPStatus, ctype: str, body: bytes, *, head: bool = False,
              extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if not head:
            self.wfile.write(body)

    # -- pages ----------------------------------------------------------------------------

    def _route(self, path: str) -> tuple[HTTPStatus, str, bytes]:
        html_type = "text/html; charset=utf-8"
        if path in ("/", "/index.html"):
            return HTTPStatus.OK, html_type, self._index().encode()
        if path == "/status.json":
            return (HTTPStatus.OK, "application/json",
                    json.dumps(self.server.status.get()).encode())
        parts = [p for p in path.split("/") if p]
        if len(parts) >= 2 and parts[0] == "campaign":
            with Store(self.server.db_path) as store:
                campaign = store.campaign(store.resolve_campaign_uid(parts[1]))
            if len(parts) == 2:
                return HTTPStatus.OK, html_type, self._campaign(campaign).encode()
            if parts[2] == "report":
                return self._report_file(campaign, parts[3:])
        return HTTPStatus.NOT_FOUND, "text/plain; charset=utf-8", b"no such page\n"

    def _index(self) -> str:
        with Store(self.server.db_path) as store:
            campaigns = store.campaigns()
        rows = "".join(
            f'<tr><td><a href="/campaign/{c["uid"]}">{html.escape(c["name"])}</a></td>'
            f'<td class="mono">{c["uid"][:8]}</td><td>{html.escape(c["status"])}</td>'
            f'<td class="right">{c["n_runs"]}</td><td>{_utc(c["wall_start"])}</td></tr>'
            for c in reversed(campaigns))
        status = self.server.status.get()
        return _page("hilbench results", (
            f"<h1>hilbench results</h1><p>Store <span class=\"mono\">"
            f"{html.escape(str(self.server.db_path))}</span> (read-only).</p>"
            + _status_html(status)
            + "<table><thead><tr><th>campaign</th><th>id</th><th>status</th><th>runs</th>"
            f"<th>started</th></tr></thead><tbody>{rows}</tbody></table>"),
            refresh_s=int(STATUS_TTL_S * 2) if daemon_running(status) else None)

    def _campaign(self, campaign: dict[str, Any]) -> str:
        from hilbench.report.campaign_data import load_campaign_data
        from hilbench.report.html import render_tables
        from hilbench.report.summary import summary_tables

        tables = summary_tables(load_campaign_data(self.server.db_path, campaign["uid"]))
        status = self.server.status.get()
        name = html.escape(campaign["name"])
        body = (
            f'<p><a href="/">all campaigns</a></p><h1>{name}</h1>'
            f'<p>campaign <span class="mono">{campaign["uid"]}</span>, status '
            f'{html.escape(campaign["status"])}, {campaign["n_runs"]} run(s), started '
            f'{_utc(campaign["wall_start"])}. <a href="/campaign/{campaign["uid"]}/report/">'
            "Full report (figures, workflow, methodology, provenance)</a></p>"
            + _status_html(status)
            + render_tables(tables))
        running = campaign["status"] == "incomplete" or daemon_running(status)
        return _page(f"hilbench: {campaign['name']}", body,
                     refresh_s=int(STATUS_TTL_S * 2) if running else None)

    def _report_file(self, campaign: dict[str, Any],
                     rest: list[str]) -> tuple[HTTPStatus, str, bytes]:
        if any(part in ("", ".", "..") or "\\" in part for part in rest):
            return HTTPStatus.NOT_FOUND, "text/plain; charset=utf-8", b"no such file\n"
        folder = self.server.reports.folder(campaign).resolve()
        target = (folder / "/".join(rest or ["report.html"])).resolve()
        if folder not in target.parents or not target.is_file():
            return HTTPStatus.NOT_FOUND, "text/plain; charset=utf-8", b"no such file\n"
        types = {".html": "text/html; charset=utf-8", ".png": "image/png",
                 ".svg": "image/svg+xml", ".md": "text/markdown; charset=utf-8",
                 ".csv": "text/csv; charset=utf-8"}
        return HTTPStatus.OK, types.get(target.suffix, "application/octet-stream"), \
            target.read_bytes()


def _utc(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def make_server(db_path: Path, host: str = "127.0.0.1", port: int = 8765,
                token: str | None = None, status: DaemonStatus | None = None,
                report_dir: Path | None = None) -> ResultsServer:
    """A server bound to ``host:port`` (port 0: any free one); refuses a non-loopback host
    without a token (ValueError) and a store it cannot read (StoreError)."""
    if not is_loopback(host) and not token:
        raise ValueError(f"--host {host} is reachable from other hosts: give --token (or "
                         "serve on 127.0.0.1 and tunnel to it)")
    with Store(db_path):
        pass  # refuse a missing or foreign file now, not at the first request
    root = report_dir or Path(tempfile.mkdtemp(prefix="hilbench-serve-"))
    return ResultsServer((host, port), db_path, token, status or DaemonStatus(db_path),
                         ReportCache(db_path, root))
