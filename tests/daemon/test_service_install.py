"""`hilbench systemd` as a lab installs it: the units pass `systemd-analyze verify`, the
sysusers file makes the user and group, and the unit's ExecStart run as that user (runuser, as
systemd would: its group, supplementary groups, umask and state folder mode) serves an engineer
of the group who queues a campaign and reads `status` without sudo. PID 1 here is not systemd,
so the unit is not started by systemd itself."""

from __future__ import annotations

import contextlib
import grp
import json
import os
import pwd
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hilbench.cli.daemon import fetch_status
from hilbench.daemon.systemd import DEFAULT_STATE_DIR, serial_groups
from tests.daemon.conftest import qubo_campaign

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="makes throwaway users: runs as root"),
    pytest.mark.skipif(not shutil.which("systemd-analyze") or not shutil.which("runuser"),
                       reason="needs systemd-analyze and runuser"),
]


def _unit(path: Path) -> dict[str, str]:
    """A unit file's KEY=VALUE lines (the last one of each key)."""
    return dict(line.split("=", 1) for line in path.read_text().splitlines()
                if "=" in line and not line.startswith("#"))


def _generate(hilbench: list[str], out: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "HILBENCH_DB"}
    done = subprocess.run([*hilbench, "systemd", "--out", str(out), *args], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def test_the_units_pass_verify_and_the_sysusers_file_makes_the_user_and_group(tmp_path):
    campaign = tmp_path / "net.toml"
    campaign.write_text(
        "[campaign]\nname = 'net'\n[[agents]]\nid = 'xylo0'\ndriver = 'cpu'\n"
        "address = 'tcp://bench:5555'\n[[qubo]]\nagent = 'xylo0'\nscenario = 'fixed_timeout'\n"
        "nodes = [10]\ndensities = [0.1]\nseeds = [0]\nsolvers = ['sa']\ntimeouts_s = [0.01]\n")
    out = tmp_path / "gen"
    _generate([sys.executable, "-m", "hilbench"], out, "--campaign", str(campaign))
    units = sorted((out / "etc/systemd/system").glob("*.service"))
    assert [u.name for u in units] == ["hilbench-agent-xylo0.service", "hilbench-daemon.service"]
    for unit in units:
        verified = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True,
                                  text=True, timeout=60)
        assert (verified.returncode, verified.stderr) == (0, ""), unit.name

    daemon = _unit(out / "etc/systemd/system/hilbench-daemon.service")
    command = shlex.split(daemon["ExecStart"])
    assert Path(command[0]).is_absolute() and os.access(command[0], os.X_OK)
    assert command[-5:] == ["daemon", "--db", f"{DEFAULT_STATE_DIR}/hilbench.sqlite",
                            "--group", "hilbench"]
    assert (daemon["User"], daemon["Group"]) == ("hilbench", "hilbench")
    assert daemon["SupplementaryGroups"].split() == serial_groups() == ["dialout", "plugdev"]
    assert (daemon["StateDirectory"], daemon["StateDirectoryMode"], daemon["UMask"]) == (
        "hilbench", "2770", "0007")
    assert (out / "etc/profile.d/hilbench.sh").read_text().splitlines()[-1] == (
        f"export HILBENCH_DB={DEFAULT_STATE_DIR}/hilbench.sqlite")

    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    made = subprocess.run(["systemd-sysusers", f"--root={root}",
                           str(out / "etc/sysusers.d/hilbench.conf")],
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    [user] = [line.split(":") for line in (root / "etc/passwd").read_text().splitlines()
              if line.startswith("hilbench:")]
    [group] = [line.split(":") for line in (root / "etc/group").read_text().splitlines()
               if line.startswith("hilbench:")]
    assert int(user[2]) < 1000 and user[3] == group[2]  # a system user, in its own group
    assert user[5:] == [DEFAULT_STATE_DIR, "/usr/sbin/nologin"]


def _installed_copy(folder: Path) -> Path:
    """A hilbench command outside /root (whose interpreter other users cannot run): a venv of
    the system's Python of this minor version that sees this environment's packages."""
    base = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if not base.is_file():
        pytest.skip(f"no {base} for the service user to run")
    venv = folder / "venv"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)
    [site] = venv.glob("lib/python*/site-packages")
    here = sysconfig.get_paths()["purelib"]
    (site / "hilbench-env.pth").write_text(f"import site; site.addsitedir({here!r})\n")
    command = venv / "bin" / "hilbench"
    command.write_text(f"#!{venv / 'bin' / 'python'}\nimport sys\n"
                       "from hilbench.launch import main\nsys.exit(main())\n")
    command.chmod(0o755)
    return command


@contextlib.contextmanager
def _users(service: str, engineer: str) -> Iterator[None]:
    """A throwaway system user (its own group) and an engineer in that group; removed after."""
    try:
        subprocess.run(["useradd", "--system", "--user-group", "--no-create-home",
                        "--shell", "/usr/sbin/nologin", service], check=True, timeout=60)
        subprocess.run(["useradd", "--no-create-home", "--groups", service, engineer],
                       check=True, timeout=60)
        yield
    finally:
        for name in (engineer, service):
            subprocess.run(["userdel", name], capture_output=True, timeout=60)
        with contextlib.suppress(KeyError):
            grp.getgrnam(service)
            subprocess.run(["groupdel", service], capture_output=True, timeout=60)


def _as(user: str, argv: list[str], env: dict[str, str], cwd: Path
        ) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", user, "--", *argv], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_the_units_daemon_as_its_user_serves_an_engineer_of_its_group_without_sudo():
    token = secrets.token_hex(3)
    service, engineer = f"hbs{token}", f"hbe{token}"
    scratch = Path(tempfile.mkdtemp(prefix="hb-service-", dir="/tmp"))
    daemon: subprocess.Popen | None = None
    try:
        scratch.chmod(0o755)
        hilbench = _installed_copy(scratch)
        out = scratch / "gen"
        generated = _generate([str(hilbench)], out, "--user", service)
        assert "source tree" in generated.stderr  # this copy imports the checkout: said
        unit = _unit(out / "etc/systemd/system/hilbench-daemon.service")
        argv = [a.replace(DEFAULT_STATE_DIR, str(scratch / "state"))
                for a in shlex.split(unit["ExecStart"])]
        assert argv[0] == str(hilbench)  # the command the unit was made with, not a guess
        with _users(service, engineer):
            state = scratch / "state"  # what StateDirectory= makes
            state.mkdir()
            shutil.chown(state, service, service)
            state.chmod(int(unit["StateDirectoryMode"], 8))
            locks = scratch / "locks"  # the tmpfiles.d folder: root's, 1777
            locks.mkdir()
            locks.chmod(0o1777)
            env = {"PATH": os.environ["PATH"], "HILBENCH_LOCK_DIR": str(locks),
                   "LANG": "C.UTF-8"}
            groups = [f"-G{g}" for g in unit.get("SupplementaryGroups", "").split()]
            daemon = subprocess.Popen(
                ["runuser", "-u", unit["User"], "-g", unit["Group"], *groups, "--", *argv],
                cwd=state, env=env, umask=int(unit["UMask"], 8), stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, text=True)
            store = state / "hilbench.sqlite"
            deadline = time.monotonic() + 60
            while not store.exists() or not fetch_status(store, None, None, None)[
                    "daemon"].get("pid"):
                assert daemon.poll() is None, daemon.stderr.read()
                assert time.monotonic() < deadline, "the service's daemon did not answer"
                time.sleep(0.3)
            pid = fetch_status(store, None, None, None)["daemon"]["pid"]
            assert pwd.getpwuid(os.stat(f"/proc/{pid}").st_uid).pw_name == service

            # The engineer: the profile.d line names the store; no sudo anywhere.
            profile = (out / "etc/profile.d/hilbench.sh").read_text().splitlines()[-1]
            db = shlex.split(profile.removeprefix("export HILBENCH_DB="))[0]
            mine = {**env, "HILBENCH_DB": db.replace(DEFAULT_STATE_DIR, str(state))}
            campaign = qubo_campaign(scratch, "shared", 2)
            added = _as(engineer, [str(hilbench), "queue", "add", str(campaign)], mine, scratch)
            assert added.returncode == 0, added.stderr
            assert "queued item 1: shared" in added.stdout and "warning" not in added.stderr
            deadline = time.monotonic() + 180
            while True:
                seen = _as(engineer, [str(hilbench), "queue", "history", "--json"], mine,
                           scratch)
                assert seen.returncode == 0, seen.stderr
                if json.loads(seen.stdout):
                    break
                assert time.monotonic() < deadline, "the engineer's item did not finish"
                time.sleep(1)
            [row] = json.loads(seen.stdout)
            assert row["exit_status"] == "completed", row
            status = _as(engineer, [str(hilbench), "status"], mine, scratch)
            assert status.returncode == 0, status.stderr
            lines = status.stdout.splitlines()
            assert lines[0] == f"store {store} ($HILBENCH_DB)"
            assert lines[1].startswith("daemon: idle") and f"pid {pid} " in lines[1], lines
            assert "queue: 0 item(s)" in status.stdout

            # A user outside the group sees nothing of it, in one line.
            outsider = _as("nobody", [str(hilbench), "status"], mine, scratch)
            assert outsider.returncode == 2 and outsider.stdout == ""
            assert outsider.stderr.splitlines() == [
                f"error: Permission denied: cannot look for the store {store} ($HILBENCH_DB); "
                "give --db FILE or set HILBENCH_DB, or run this in the store's folder"]

            os.kill(pid, signal.SIGTERM)  # as `systemctl stop` does
            assert daemon.wait(90) == 143
            log = (state / "hilbench.sqlite.logs" / "daemon.log").read_text()
            assert f"hilbench daemon (pid {pid}) stopped: SIGTERM" in log
    finally:
        if daemon is not None and daemon.poll() is None:
            daemon.kill()
            daemon.wait(30)
        shutil.rmtree(scratch, ignore_errors=True)
