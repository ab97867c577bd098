"""What the daemon tells the world: notifications (Apprise and a command hook, through real
sinks), sd_notify datagrams on a real unix socket, systemd unit files."""

from __future__ import annotations

import http.server
import json
import re
import signal
import socket
import sys
import threading
from typing import ClassVar

import pytest

from tests.campaign_toml import agent, campaign, qubo, write_campaign
from tests.daemon.conftest import history, qubo_campaign
from tests.subprocesses import hilbench, hilbench_here

pytestmark = pytest.mark.slow


class _Sink(http.server.BaseHTTPRequestHandler):
    received: ClassVar[list[dict]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _Sink.received.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_notifications_reach_apprise_and_the_command_and_a_failing_sink_stops_nothing(
        tmp_path, daemon_at):
    server = http.server.HTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    events = tmp_path / "events.jsonl"
    hook = tmp_path / "hook.py"
    hook.write_text("import sys\nopen(sys.argv[1], 'a').write(sys.stdin.read() + '\\n')\n")
    config = tmp_path / "daemon.toml"
    config.write_text(
        "[notify]\n"
        f"urls = ['json://127.0.0.1:{server.server_port}/hook', 'json://127.0.0.1:9/dead']\n"
        f"command = '{sys.executable} {hook} {events}'\n"
    )
    db = tmp_path / "d.sqlite"
    for name in ("one", "two"):
        path = qubo_campaign(tmp_path, name, 1)
        assert hilbench_here("queue", "add", path, "--db", db).returncode == 0
    d = daemon_at(db, config=config).start()
    status = d.wait_until(lambda s: len(history(db)) == 2 and s["notifications"]["sent"] >= 2
                          and s["notifications"]["failed"] >= 2, "both items and their events")
    server.shutdown()
    assert "Apprise could not deliver" in status["notifications"]["last_error"]
    hooked = [json.loads(line) for line in events.read_text().splitlines()]
    assert [e["event"] for e in hooked] == ["campaign.finished"] * 2
    assert {e["campaign"] for e in hooked} == {"one", "two"} and all(e["host"] for e in hooked)
    assert len(_Sink.received) == 2
    assert all("campaign.finished" in r["title"] for r in _Sink.received)
    assert "finished" in _Sink.received[0]["message"]


def test_sd_notify_ready_watchdog_status_and_stopping(tmp_path, daemon_at):
    path = tmp_path / "notify.sock"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(10)
    d = daemon_at(tmp_path / "d.sqlite",
                  env={"NOTIFY_SOCKET": str(path), "WATCHDOG_USEC": "400000"}).start()
    seen: list[str] = []
    while not any("WATCHDOG=1" in m for m in seen) or len(seen) < 4:
        seen.append(sock.recv(4096).decode())
    assert seen[0].startswith("READY=1\nSTATUS=idle") and f"MAINPID={d.proc.pid}" in seen[0]
    assert any(m.startswith("STATUS=idle: queue empty") for m in seen)
    assert d.signal(signal.SIGTERM) == 143
    # the daemon has exited: what it sent is in the socket's buffer (waiting 10 s for a
    # datagram that could not come cost the test 10 s of wall)
    sock.setblocking(False)
    rest = []
    try:
        while True:
            rest.append(sock.recv(4096).decode())
    except BlockingIOError:
        pass
    assert any(m.startswith("STOPPING=1") for m in rest)
    sock.close()


def test_systemd_prints_a_notify_unit_and_keyed_agent_units(tmp_path):
    campaign = tmp_path / "net.toml"
    campaign.write_text(
        "[campaign]\nname = 'net'\nkey = 'orch.key_secret'\n"
        "[[agents]]\nid = 'cpu0'\ndriver = 'cpu'\naddress = 'tcp://bench:5555'\n"
        "key = 'cpu0.key'\n"
        "[[qubo]]\nagent = 'cpu0'\nscenario = 'fixed_timeout'\nnodes = [10]\n"
        "densities = [0.1]\nseeds = [0]\nsolvers = ['sa']\ntimeouts_s = [0.01]\n"
    )
    from hilbench.wire import keys

    keys.generate("orch", tmp_path)
    keys.generate("cpu0", tmp_path)
    out = hilbench("systemd", "--campaign", campaign, "--keys-dir", "/etc/hb")
    assert out.returncode == 0, out.stderr
    blocks = {b.split()[0]: b for b in re.split(r"^# /", out.stdout, flags=re.M)[1:]}
    assert set(blocks) == {"etc/profile.d/hilbench.sh", "etc/sysusers.d/hilbench.conf",
                           "etc/systemd/system/hilbench-agent-cpu0.service",
                           "etc/systemd/system/hilbench-daemon.service",
                           "etc/tmpfiles.d/hilbench.conf"}
    tmpfiles = blocks["etc/tmpfiles.d/hilbench.conf"]
    daemon_unit = blocks["etc/systemd/system/hilbench-daemon.service"]
    agent_unit = blocks["etc/systemd/system/hilbench-agent-cpu0.service"]
    assert "d /run/lock/hilbench 1777 root root -" in tmpfiles.splitlines()
    for line in ("Type=notify", "WatchdogSec=60", "Restart=on-failure", "SuccessExitStatus=143"):
        assert line in daemon_unit
    # systemd starts services in /: the store is named, in the unit's own state directory
    assert daemon_unit.split("ExecStart=")[1].splitlines()[0].endswith(
        " daemon --db /var/lib/hilbench/hilbench.sqlite --group hilbench")
    assert "StateDirectory=hilbench" in daemon_unit
    store = tmp_path / "bench.sqlite"
    named = hilbench("systemd", "--db", store).stdout.split("ExecStart=")[1].splitlines()[0]
    assert named.endswith(f" daemon --db {store} --group hilbench")
    config = tmp_path / "daemon.toml"
    config.write_text("[daemon]\nstore = 'bench.sqlite'\n")
    unit = hilbench("systemd", "--config", config).stdout
    assert unit.split("ExecStart=")[1].splitlines()[0].endswith(
        f" daemon --config {config} --group hilbench")
    assert "HILBENCH_DB" not in unit  # the config names the store: no profile line guesses it
    exec_line = agent_unit.split("ExecStart=")[1].splitlines()[0]
    assert "agent --driver cpu --id cpu0 --bind tcp://0.0.0.0:5555" in exec_line
    assert "--key /etc/hb/cpu0.key_secret --authorized /etc/hb/orchestrators" in exec_line


def test_an_unreachable_agent_is_notified_as_lost_and_the_item_fails_with_the_reason(
        tmp_path, daemon_at):
    events = tmp_path / "events.jsonl"
    hook = tmp_path / "hook.py"
    hook.write_text("import sys\nopen(sys.argv[1], 'a').write(sys.stdin.read() + '\\n')\n")
    config = tmp_path / "daemon.toml"
    config.write_text("[daemon]\nretries = 1\nretry_delay_s = 0.2\n"
                      f"[notify]\ncommand = '{sys.executable} {hook} {events}'\n")
    text = campaign(agent(spawn=False, address="tcp://127.0.0.1:9"), qubo(), name="gone",
                    connect_timeout_s=0.5)
    path, db = write_campaign(tmp_path, text), tmp_path / "d.sqlite"
    assert hilbench_here("queue", "add", path, "--db", db).returncode == 0
    d = daemon_at(db, config=config).start()
    # four events: agent.lost, campaign.aborted (retried), agent.lost, campaign.failed (waiting
    # for three read the hook's file before the last one was written, under load)
    status = d.wait_until(lambda s: len(history(db)) == 1 and s["notifications"]["sent"] >= 4,
                          "the item given up and its events sent")
    [item] = history(db)
    assert item["exit_status"] == "failed"
    assert "could not start: agent cpu0 at tcp://127.0.0.1:9" in item["message"]
    assert "gave up after 2 start(s)" in item["message"]
    assert "could not start" in status["last_error"]
    hooked = [json.loads(line) for line in events.read_text().splitlines()]
    kinds = [e["event"] for e in hooked]
    assert kinds.count("agent.lost") == 2 and kinds[-1] == "campaign.failed", kinds
    assert "campaign.aborted" in kinds  # the first start: retried
    assert all(e["campaign"] == "gone" for e in hooked)
    # the campaign row says why, as `hilbench run` would have stored it
    shown = hilbench_here("results", "--db", db)
    assert "gone: abort at" in shown.stdout and "could not start" in shown.stdout
