"""A bench that loses the shared database: its store file keeps every run, and the push
catches up by run id once the link is back (a real daemon, a real PostgreSQL server, and a TCP
proxy in between that the test cuts)."""

from __future__ import annotations

import contextlib
import socket
import sqlite3
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.campaign_toml import agent, campaign, qubo, write_campaign
from tests.daemon.conftest import history, qubo_campaign
from tests.subprocesses import hilbench, hilbench_here, units_of

pytestmark = pytest.mark.slow

CUT_S = 60.0
# The campaign runs on through the cut: 200 units of 1 ms take ~40 ms of wall each (more under
# load) for ~12 ms of CPU, where 40 units of 0.8 s cost SA's 32 s of CPU. Eight units of 0.5 s
# end it: seconds of campaign left however fast the short units went (under a load of 10 they
# had all ended before the failing push was seen).
SHORT_UNITS, TAIL_UNITS = 200, 8
UNITS = SHORT_UNITS + TAIL_UNITS


class CuttableProxy:
    """TCP on 127.0.0.1 forwarded to the PostgreSQL server's Unix socket. ``cut()`` resets
    every open connection and every new one until ``restore()``: the link really breaks."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self.cut_now = False
        self.conns: list[socket.socket] = []
        self._lock = threading.Lock()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.cut_now:
                client.close()
                continue
            server = socket.socket(socket.AF_UNIX)
            server.connect(self.upstream)
            with self._lock:
                self.conns += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        self.cut_now = True
        with self._lock:
            for s in self.conns:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            self.conns.clear()

    def restore(self) -> None:
        self.cut_now = False

    def close(self) -> None:
        self._closed = True
        self.cut()
        self.listener.close()


def _server_socket(url: str) -> str:
    import psycopg

    with psycopg.connect(url) as conn:
        folder = conn.execute("SHOW unix_socket_directories").fetchone()[0].split(",")[0]
        port = conn.execute("SHOW port").fetchone()[0]
    return f"{folder.strip()}/.s.PGSQL.{port}"


def _pg_runs(url: str) -> list[tuple[str, str, str, str]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return conn.execute(
            "SELECT uid, campaign_uid, unit_key, exit_status FROM runs").fetchall()


def _local_finished(store: Path) -> set[str]:
    with sqlite3.connect(store) as conn:
        return {r[0] for r in conn.execute(
            "SELECT uid FROM runs WHERE exit_status IS NOT NULL")}


def test_a_bench_cut_off_for_60_s_pushes_every_run_once_after(daemon_at, tmp_path, pg_url):
    proxy = CuttableProxy(_server_socket(pg_url))
    name = pg_url.rsplit("/", 1)[1]
    proxied = f"postgresql://root@127.0.0.1:{proxy.port}/{name}?sslmode=disable"
    config = tmp_path / "daemon.toml"
    config.write_text("[daemon]\npoll_s = 0.1\npush_interval_s = 0.5\n")
    store = tmp_path / "bench.sqlite"
    d = daemon_at(store, config=config, push_to=proxied)
    try:
        d.start()
        path = write_campaign(tmp_path, campaign(
            agent(), qubo(seeds=list(range(SHORT_UNITS)), timeouts_s=[0.001]),
            qubo(seeds=list(range(TAIL_UNITS)), timeouts_s=[0.5]), name="long"), "long.toml")
        assert hilbench_here("queue", "add", path, "--db", store).returncode == 0
        before = d.wait_until(lambda s: (s["push"] or {}).get("pushed", 0) >= 3,
                              "3 runs pushed")["push"]["pushed"]
        proxy.cut()
        cut_at = time.monotonic()
        during = d.wait_until(lambda s: (s["push"] or {}).get("failing_since") is not None
                              and s["push"]["pending"], "the push fails and runs wait")
        assert during["current"] is not None, during  # the campaign goes on meanwhile
        time.sleep(max(0.0, CUT_S - (time.monotonic() - cut_at)))
        finished_while_cut = len(_local_finished(store))
        proxy.restore()
        d.wait_until(lambda s: s["current"] is None and not s["queue"]["length"]
                     and s["push"]["pending"] == 0 and not s["push"]["last_error"],
                     "the campaign ended and every finished run was pushed", timeout_s=180)
    finally:
        d.stop()
        proxy.close()

    local = _local_finished(store)
    remote = _pg_runs(pg_url)
    assert units_of(store, sorted(local)) == UNITS  # and any unverified attempt before a unit's run
    assert [h["exit_status"] for h in history(store)] == ["completed"]
    assert Counter(uid for uid, *_ in remote) == Counter(local)  # each run there, once
    assert all(n == 1 for n in Counter((c, k) for _, c, k, s in remote if s == "success")
               .values())
    log = (Path(f"{store}.logs") / "daemon.log").read_text()
    assert "push to" in log and "failed" in log and "works again" in log
    assert "***" not in proxied and "root@127.0.0.1" in log  # the URL, as given, no secret

    # Pushing the same runs again by hand, under another URL of the same database: each
    # run is still there exactly once.
    again = hilbench_here("store", "push", "--db", store, "--to", pg_url)
    assert again.returncode == 0, again.stderr
    assert f"{len(local)} finished run(s) not yet pushed" in again.stdout
    assert Counter(uid for uid, *_ in _pg_runs(pg_url)) == Counter(local)
    print(f"{before} run(s) pushed before the cut; cut {CUT_S:.0f} s; {finished_while_cut} "
          "run(s) finished by the restore; "
          f"{len(remote)} in PostgreSQL afterwards, {len(local)} in the store file")


def test_a_campaign_that_ends_after_its_runs_were_pushed_ends_in_postgresql_too(tmp_path, pg_url):
    """The push copies a campaign's row with its runs; a campaign that ends (or is resumed)
    after its last run was pushed has no run left to push, and its end must still arrive."""
    import psycopg

    from hilbench.daemon.push import push_all

    store = tmp_path / "bench.sqlite"
    path = qubo_campaign(tmp_path, "short", 2, timeout_s=0.01)
    assert hilbench("run", path, "--db", store, "-q").returncode == 0
    with sqlite3.connect(store) as conn:
        (uid, status, wall_stop), = conn.execute("SELECT uid, status, wall_stop FROM campaigns")
        assert status == "success"
        conn.execute("UPDATE campaigns SET status = NULL, wall_stop = NULL")  # mid-campaign
    assert push_all(store, pg_url) == len(_local_finished(store))  # 2 units, any attempts

    def remote() -> tuple:
        with psycopg.connect(pg_url) as conn:
            return conn.execute("SELECT status, wall_stop FROM campaigns WHERE uid = %s",
                                (uid,)).fetchone()

    assert remote() == (None, None)
    with sqlite3.connect(store) as conn:  # the campaign ends after its last run was pushed
        conn.execute("UPDATE campaigns SET status = ?, wall_stop = ?", (status, wall_stop))
    assert push_all(store, pg_url) == 0  # no run left to push ...
    assert remote() == (status, wall_stop)  # ... and the end arrived all the same
