"""`hilbench serve`: read-only pages per campaign over real HTTP on loopback, the token rule,
and the daemon-status hook."""

from __future__ import annotations

import hashlib
import http.client
import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hilbench.report.serve import DaemonStatus, is_loopback, make_server
from tests.report.qubo_store import write_qubo_store
from tests.subprocesses import hilbench

pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    path = tmp_path_factory.mktemp("serve") / "s.sqlite"
    return path, write_qubo_store(path)


@contextmanager
def _serve(path: Path, tmp: Path, **kw: object) -> Iterator[tuple[str, int]]:
    server = make_server(path, "127.0.0.1", 0, report_dir=tmp, **kw)  # type: ignore[arg-type]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[:2]  # type: ignore[misc]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


RUNNING = {"daemon": {"state": "running", "detail": "pid 4242"},
           "current": {"campaign": "qubo-test", "unit": "qubo/fixed_timeout/n=10"},
           "queue": {"length": 2, "head": []}, "last_error": ""}


@pytest.fixture
def served(store: tuple[Path, str], tmp_path: Path) -> Iterator[tuple[str, int]]:
    status = DaemonStatus(store[0], [sys.executable, "-c", f"print({json.dumps(RUNNING)!r})"])
    with _serve(store[0], tmp_path / "reports", status=status) as address:
        yield address


def get(address: tuple[str, int], path: str, method: str = "GET",
        headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection(*address, timeout=60)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def test_index_and_campaign_pages_show_the_stored_tables_and_the_daemon_status(
        served: tuple[str, int], store: tuple[Path, str]) -> None:
    status, headers, body = get(served, "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert f"/campaign/{store[1]}" in body.decode() and "qubo-test" in body.decode()
    status, _, body = get(served, f"/campaign/{store[1][:8]}")
    page = body.decode()
    assert status == 200
    assert "<table" in page and "simulated" in page
    assert "Daemon: running (pid 4242)" in page and "queue: 2 item(s)" in page
    assert "refresh" in page  # live: the page reloads while a daemon runs
    status, _, body = get(served, "/status.json")
    assert status == 200 and json.loads(body)["status"] == RUNNING


@pytest.mark.slow  # makes the report (a few seconds of matplotlib)
def test_report_and_its_figure_files_are_served(served: tuple[str, int],
                                                store: tuple[Path, str]) -> None:
    status, _, body = get(served, f"/campaign/{store[1]}/report/")
    assert status == 200 and b"NeuroBench system-track report" in body
    status, headers, body = get(served, f"/campaign/{store[1]}/report/figures/qubo-gap.svg")
    assert status == 200 and headers["Content-Type"] == "image/svg+xml"
    assert body.startswith(b"<?xml")


def test_nothing_outside_the_report_folder_and_no_writes(served: tuple[str, int],
                                                          store: tuple[Path, str]) -> None:
    before = hashlib.sha256(store[0].read_bytes()).hexdigest()
    for path in (f"/campaign/{store[1]}/report/../../../../etc/passwd",
                 f"/campaign/{store[1]}/report/..%2f..%2fetc%2fpasswd",
                 "/campaign/nosuch", "/etc/passwd"):
        status, _, body = get(served, path)
        assert status == 404, path
        assert b"root:" not in body
    for method in ("POST", "PUT", "DELETE"):
        assert get(served, "/", method)[0] == 405
    assert hashlib.sha256(store[0].read_bytes()).hexdigest() == before


def test_a_token_is_required_when_given(store: tuple[Path, str], tmp_path: Path) -> None:
    with _serve(store[0], tmp_path / "r", token="s3cret-token") as address:
        assert get(address, "/")[0] == 401
        assert get(address, "/", headers={"Authorization": "Bearer wrong"})[0] == 401
        assert get(address, "/", headers={"Authorization": "Bearer s3cret-token"})[0] == 200
        status, headers, _ = get(address, "/?token=s3cret-token")
        assert status == 200 and "hilbench_token=s3cret-token" in headers["Set-Cookie"]
        cookie = {"Cookie": "hilbench_token=s3cret-token"}
        assert get(address, f"/campaign/{store[1]}", headers=cookie)[0] == 200


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
    with _serve(store[0], tmp_path / "r") as address:
        page = get(address, "/")[2].decode()
        assert "Daemon: not running" in page and "refresh" not in page
    failing = DaemonStatus(store[0], [sys.executable, "-c", "import sys; sys.exit(3)"])
    with _serve(store[0], tmp_path / "r2", status=failing) as address:
        page = get(address, "/")[2].decode()
        assert "Daemon status: not available" in page and "refresh" not in page
