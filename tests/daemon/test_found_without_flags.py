"""A daemon per store, found without flags: two real daemons started with their defaults in two
folders, `status` and `queue` typed without --db in each; an item queued where no daemon
serves says so, with the command that starts one; every stop is said and logged with why."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from hilbench.cli.daemon import fetch_status
from hilbench.daemon.filing import campaign_counts
from hilbench.daemon.queue_db import QueueDB
from tests.daemon.conftest import history, qubo_campaign
from tests.subprocesses import hilbench, hilbench_command

pytestmark = pytest.mark.slow

STORE = "hilbench.sqlite"  # the documented default: ./hilbench.sqlite


def _env() -> dict[str, str]:
    """This environment without $HILBENCH_DB, so the default store is the working folder's."""
    return {k: v for k, v in os.environ.items() if k != "HILBENCH_DB"}


def _start(argv: list[str], folder: Path) -> subprocess.Popen:
    return subprocess.Popen(argv, cwd=folder, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


def _answers(proc: subprocess.Popen, store: Path, timeout_s: float = 60) -> None:
    """Wait until the daemon ``proc`` answers `status` on ``store`` (asked in-process)."""
    deadline = time.monotonic() + timeout_s
    while fetch_status(store, None, None, None)["daemon"].get("pid") != proc.pid:
        assert proc.poll() is None, f"the daemon exited {proc.returncode}: {proc.stderr.read()}"
        assert time.monotonic() < deadline, "the daemon did not answer"
        time.sleep(0.3)


def _stop(proc: subprocess.Popen, signum: int) -> tuple[int, str]:
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=90)
    return proc.returncode, err


def _in(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """``hilbench ARGS`` typed in ``folder`` without --db."""
    return hilbench(*args, cwd=folder, env=_env())


def test_two_daemons_on_two_stores_start_with_defaults_and_each_folder_finds_its_own(tmp_path):
    folders = [tmp_path / "a", tmp_path / "b"]
    daemons = []
    try:
        for folder in folders:
            folder.mkdir()
            daemons.append(_start(hilbench_command("daemon"), folder))
        for folder, proc in zip(folders, daemons, strict=True):
            _answers(proc, folder / STORE)
        for folder, proc in zip(folders, daemons, strict=True):
            out = _in(folder, "status")
            assert out.returncode == 0, out.stderr
            first, second = out.stdout.splitlines()[:2]
            assert first == (f"store {folder.resolve() / STORE} (the default: ./{STORE} in the "
                             "working directory)")
            assert second.startswith("daemon: idle") and f"pid {proc.pid} " in second

        # An item queued in a goes to a's daemon only, and its history says what ran.
        campaign = qubo_campaign(tmp_path, "here", 2)
        added = _in(folders[0], "queue", "add", str(campaign))
        assert added.returncode == 0, added.stderr
        assert added.stderr == ""  # a daemon serves this store: nothing to warn of
        assert f"{folders[0].resolve() / STORE}" in added.stdout
        deadline = time.monotonic() + 120
        while not history(folders[0] / STORE):
            assert time.monotonic() < deadline, "the item did not finish"
            time.sleep(0.3)
        [row] = history(folders[0] / STORE)
        assert row["exit_status"] == "completed", row
        with QueueDB(folders[0] / STORE) as q:
            assert row["message"] == campaign_counts(q.run_counts(row["campaign_uid"]))
        assert "resumed" not in row["message"] and "completed" in row["message"]
        with QueueDB(folders[1] / STORE) as q:
            assert q.items() == [] and q.history() == []

        # A second daemon on a's store is refused, and the refusal is in a's daemon.log too.
        again = hilbench("daemon", cwd=folders[0], env=_env(), timeout=60)
        assert again.returncode == 2 and "a daemon already serves" in again.stderr
        log = (folders[0] / f"{STORE}.logs" / "daemon.log").read_text()
        assert "the daemon did not start: a daemon already serves" in log
    finally:
        for proc in daemons:
            if proc.poll() is None:
                _stop(proc, signal.SIGTERM)


def test_status_in_a_folder_without_a_store_says_so_and_makes_none(tmp_path):
    out = _in(tmp_path, "status")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.splitlines() == [
        f"error: no store at {tmp_path.resolve() / STORE} (the default: ./{STORE} in the "
        "working directory); give --db FILE or set HILBENCH_DB, or run this in the store's "
        "folder"]
    assert _in(tmp_path, "queue", "list").returncode == 2
    assert list(tmp_path.iterdir()) == []


def test_an_item_queued_where_no_daemon_serves_says_how_to_start_one_and_every_stop_is_said(
        tmp_path):
    folder = tmp_path / "bench"
    folder.mkdir()
    store = folder / STORE
    added = _in(folder, "queue", "add", str(qubo_campaign(tmp_path, "waits", 1)))
    assert added.returncode == 0, added.stderr
    assert "queued item 1: waits" in added.stdout
    [warning] = added.stderr.splitlines()
    assert warning.startswith(f"warning: no daemon serves {store.resolve()}: item 1 waits until "
                              "one starts; start one with: ")
    command = shlex.split(warning.split("start one with: ", 1)[1])
    assert command[-3:] == ["daemon", "--db", str(store.resolve())]

    # The command it printed starts a daemon that runs the item; Ctrl-C stops it, said.
    proc = _start(command, tmp_path)
    _answers(proc, store)
    deadline = time.monotonic() + 120
    while not history(store):
        assert time.monotonic() < deadline, "the item did not finish"
        time.sleep(0.3)
    code, err = _stop(proc, signal.SIGINT)
    assert code == 130
    said = f"hilbench daemon (pid {proc.pid}) stopped: SIGINT (Ctrl-C); exit 130"
    assert said in err
    log = (folder / f"{STORE}.logs" / "daemon.log").read_text()
    assert "SIGINT (Ctrl-C) received: the daemon is stopping" in log and said in log

    # SIGTERM (systemctl stop) likewise; and the queue stop command is logged as it is seen.
    proc = _start(command, tmp_path)
    _answers(proc, store)
    stopped = _in(folder, "queue", "stop")
    assert stopped.returncode == 0 and stopped.stdout == (
        f"queue stops after the current campaign; store {store.resolve()} (the default: "
        f"./{STORE} in the working directory)\n")
    deadline = time.monotonic() + 30
    while "queue mode stop" not in (folder / f"{STORE}.logs" / "daemon.log").read_text():
        assert time.monotonic() < deadline, "the queue stop was not logged"
        time.sleep(0.2)
    code, err = _stop(proc, signal.SIGTERM)
    assert code == 143
    said = f"hilbench daemon (pid {proc.pid}) stopped: SIGTERM (systemctl stop or kill); exit 143"
    assert said in err and said in (folder / f"{STORE}.logs" / "daemon.log").read_text()
    # the stopped daemon's store warns again
    again = _in(folder, "queue", "add", str(qubo_campaign(tmp_path, "waits", 1)))
    assert "warning: no daemon serves" in again.stderr and "stopped)" in again.stderr


def test_a_store_too_deep_for_a_socket_beside_it_gets_one_in_the_runtime_folder(tmp_path):
    folder = tmp_path.joinpath(*["a-folder-deep-in-a-lab-tree"] * 3)
    folder.mkdir(parents=True)
    beside = folder / f"{STORE}.logs" / "control.sock"
    assert len(str(beside).encode()) > 107  # the longest name a Unix socket may have
    proc = _start(hilbench_command("daemon"), folder)
    try:
        _answers(proc, folder / STORE)
        out = _in(folder, "status")
        assert out.returncode == 0 and f"pid {proc.pid} " in out.stdout.splitlines()[1]
        with QueueDB(folder / STORE) as q:
            address = q.daemon_info()["control"]
        runtime = Path(os.environ.get("XDG_RUNTIME_DIR") or "/tmp")
        home = runtime / "hilbench" if "XDG_RUNTIME_DIR" in os.environ else (
            runtime / f"hilbench-{os.geteuid()}")
        assert address.startswith(f"ipc://{home}/") and address.endswith(".sock")
        st = home.stat()
        assert st.st_uid == os.geteuid() and st.st_mode & 0o777 == 0o700
        assert not beside.exists()
    finally:
        assert _stop(proc, signal.SIGTERM)[0] == 143
    assert not Path(address.removeprefix("ipc://")).exists()  # gone with its daemon
