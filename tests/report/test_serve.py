"""`hilbench serve`: read-only pages per campaign over real HTTP on loopback, the token every
request must carry, and the daemon-status hook."""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from hilbench.report.serve import DaemonStatus, is_loopback, make_server
from hilbench.store import Store
from tests.report.qubo_store import write_qubo_store
from tests.subprocesses import hilbench

pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("serve") / "s.sqlite"
    return path, write_qubo_store(path)


@dataclass(frozen=True)
class Served:
    host: str
    port: int
    token: str


@contextmanager
def serving(path: Path, tmp: Path, **kw: object) -> Iterator[Served]:
    """``make_server`` on a free loopback port, in a thread, until the block ends."""
    server = make_server(path, "127.0.0.1", 0, report_dir=tmp, **kw)  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        yield Served(str(host), int(port), server.token)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


RUNNING = {"daemon": {"state": "running", "detail": "pid 4242"},
           "current": {"campaign": "qubo-test", "unit": "qubo/fixed_timeout/n=10"},
           "queue": {"length": 2, "head": []}, "last_error": ""}


@pytest.fixture
def served(store: tuple[Path, str], tmp_path: Path) -> Iterator[Served]:
    status = DaemonStatus(store[0], [sys.executable, "-c", f"print({json.dumps(RUNNING)!r})"])
    with serving(store[0], tmp_path / "reports", status=status) as server:
        yield server


def get(server: Served, path: str, method: str = "GET", headers: dict[str, str] | None = None,
        *, token: bool = True) -> tuple[int, dict[str, str], bytes]:
    """``path`` under the server's token (``token=False``: as given, no token)."""
    conn = http.client.HTTPConnection(server.host, server.port, timeout=60)
    try:
        conn.request(method, f"/{server.token}{path}" if token else path,
                     headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def test_index_and_campaign_pages_show_the_stored_tables_and_the_daemon_status(
        served: Served, store: tuple[Path, str]) -> None:
    status, headers, body = get(served, "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert "script-src 'none'" in headers["Content-Security-Policy"]
    page = body.decode()
    assert f'href="/{served.token}/campaign/{store[1]}"' in page and "qubo-test" in page
    status, _, body = get(served, f"/campaign/{store[1][:8]}")
    page = body.decode()
    assert status == 200
    assert "<table" in page and "simulated" in page
    assert "Daemon: running (pid 4242)" in page and "queue: 2 item(s)" in page
    assert "refresh" in page  # live: the page reloads while a daemon runs
    assert f'href="/{served.token}/campaign/{store[1]}/report/"' in page
    status, _, body = get(served, "/status.json")
    assert status == 200 and json.loads(body)["status"] == RUNNING


@pytest.mark.slow  # makes the report (a few seconds of matplotlib)
def test_report_and_its_figure_files_are_served(served: Served,
                                                store: tuple[Path, str]) -> None:
    status, headers, _ = get(served, f"/campaign/{store[1]}/report")
    assert status == 308 and headers["Location"] == f"/{served.token}/campaign/{store[1]}/report/"
    status, _, body = get(served, f"/campaign/{store[1]}/report/")
    assert status == 200 and b"NeuroBench system-track report" in body
    status, headers, body = get(served, f"/campaign/{store[1]}/report/figures/qubo-gap.svg")
    assert status == 200 and headers["Content-Type"] == "image/svg+xml"
    assert body.startswith(b"<?xml")


@pytest.mark.slow
def test_nothing_outside_the_report_folder_and_no_writes(served: Served,
                                                          store: tuple[Path, str]) -> None:
    before = hashlib.sha256(store[0].read_bytes()).hexdigest()
    for path in (f"/campaign/{store[1]}/report/../../../../etc/passwd",
                 f"/campaign/{store[1]}/report/..%2f..%2fetc%2fpasswd",
                 f"/campaign/{store[1]}/report/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
                 "/campaign/nosuch", "/etc/passwd"):
        status, _, body = get(served, path)
        assert status == 404, path
        assert b"root:" not in body
    for method in ("POST", "PUT", "DELETE"):
        assert get(served, "/", method)[0] == 405
    assert hashlib.sha256(store[0].read_bytes()).hexdigest() == before


def test_every_request_needs_the_token(served: Served, store: tuple[Path, str]) -> None:
    """Another local user reaching the port without the token gets 403 and no data, whatever
    the path or method; the token in the path or as a bearer header opens every page."""
    wrong = "x" * len(served.token)
    with Store(store[0]) as db:
        run = db.runs(store[1])[0]["uid"]
    for path in ("/", "/status.json", f"/campaign/{store[1]}", f"/{wrong}/",
                 f"/{served.token[:-1]}/", f"/campaign/{store[1]}/report/", "/status",
                 "/live", f"/run/{run}", f"/run/{run}/power.svg"):
        for method in ("GET", "HEAD", "POST"):
            status, _, body = get(served, path, method, token=False)
            assert status == 403, (path, method)
            assert b"qubo" not in body and store[1].encode() not in body
            assert run.encode() not in body
    assert get(served, "/", headers={"Authorization": "Bearer wrong"}, token=False)[0] == 403
    bearer = {"Authorization": f"Bearer {served.token}"}
    assert get(served, "/status.json", headers=bearer, token=False)[0] == 200
    assert get(served, f"/campaign/{store[1]}", headers=bearer, token=False)[0] == 200
    assert get(served, f"/run/{run}", headers=bearer, token=False)[0] == 200
    assert get(served, "/")[0] == 200


@pytest.mark.slow  # three real `hilbench serve` processes
def test_the_url_printed_at_start_works_and_nothing_else(store: tuple[Path, str]) -> None:
    """The real command: it prints a URL with a random token; that URL answers, the bare
    address answers 403, and a token given by the environment is used as given."""
    for env in ({}, {"HILBENCH_SERVE_TOKEN": "given-token-0123456789"}):
        with hilbench_serve(store[0], env) as url:
            assert url.startswith("http://127.0.0.1:") and url.endswith("/")
            token = url.rstrip("/").rsplit("/", 1)[1]
            assert len(token) >= 16
            if env:
                assert token == env["HILBENCH_SERVE_TOKEN"]
            address = url.split("/")[2]
            host, port = address.rsplit(":", 1)
            server = Served(host, int(port), token)
            assert get(server, "/")[0] == 200
            assert get(server, "/", token=False)[0] == 403
    with hilbench_serve(store[0], {}) as first, hilbench_serve(store[0], {}) as second:
        assert first.rsplit("/", 2)[1] != second.rsplit("/", 2)[1]  # random each time


@contextmanager
def hilbench_serve(db: Path, env: dict[str, str]) -> Iterator[str]:
    """`hilbench serve --port 0` in a process; yields the URL it printed."""
    proc = subprocess.Popen([sys.executable, "-m", "hilbench", "serve", "--db", str(db),
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **env})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "serving" in line, (line, proc.stderr.read() if proc.poll() is not None else "")
        yield line.split(" on ", 1)[1].strip()
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_weak_or_unsafe_token_is_refused(store: tuple[Path, str]) -> None:
    for token in ("short", "has space in it 0123", "a/b/c/d/e/f/g/h/i"):
        with pytest.raises(ValueError, match="16 characters"):
            make_server(store[0], "127.0.0.1", 0, token=token)
    proc = hilbench("serve", "--db", store[0], "--port", "0", "--token", "short", timeout=60)
    assert proc.returncode == 2 and "16 characters" in proc.stderr


def test_other_hosts_are_refused_without_a_token(store: tuple[Path, str]) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.0.2.1")
    with pytest.raises(ValueError, match="--token"):
        make_server(store[0], "0.0.0.0", 0)
    proc = hilbench("serve", "--db", store[0], "--host", "0.0.0.0", "--port", "0", timeout=60)
    assert proc.returncode == 2 and "--token" in proc.stderr


def test_without_a_daemon_the_page_says_so(store: tuple[Path, str], tmp_path: Path) -> None:
    """The real `hilbench status --json` on a store no daemon has run on, and a status
    command that fails: neither page reloads itself."""
    with serving(store[0], tmp_path / "r") as server:
        page = get(server, "/")[2].decode()
        assert "Daemon: not running" in page and "refresh" not in page
    failing = DaemonStatus(store[0], [sys.executable, "-c", "import sys; sys.exit(3)"])
    with serving(store[0], tmp_path / "r2", status=failing) as server:
        page = get(server, "/")[2].decode()
        assert "Daemon status: not available" in page and "refresh" not in page
