"""A store this user cannot use is one line naming it, never sqlite3's traceback (issue 31):
unreadable, a read-only folder with a write-ahead log pending, truncated, not a database,
locked by another process, for `results`, `summary`, `status`, `queue` and `report`; and a
second daemon on a store it cannot write says so before touching anything."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doors.stores import (
    CAMPAIGN,
    make_store,
    with_wal_pending,
    without_file_privilege,
)
from tests.subprocesses import hilbench_command

COMMANDS = {
    "results": ["results"],
    "summary": ["summary", CAMPAIGN],
    "status": ["status"],
    "queue": ["queue", "list"],
    "report": ["report", CAMPAIGN, "--out", "{tmp}/report"],
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return make_store(tmp_path_factory.mktemp("store") / "s.sqlite")


def _run(args, tmp_path, **kw) -> subprocess.CompletedProcess:
    args = [str(a).replace("{tmp}", str(tmp_path)) for a in args]
    env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")}
    return subprocess.run(without_file_privilege(hilbench_command(*args)), capture_output=True,
                          text=True, timeout=120, cwd=tmp_path, env=env, **kw)


def _one_line(done: subprocess.CompletedProcess, code: int, *parts: str) -> str:
    assert done.returncode == code, done.stdout + done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: ") and all(p in line for p in parts), line
    return line


def _unreadable(store, tmp_path):
    path = tmp_path / "s.sqlite"
    shutil.copyfile(store, path)
    path.chmod(0)
    return path, 2, "cannot be read: permission denied"


def _wal_pending_in_a_read_only_folder(store, tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    path = with_wal_pending(store, folder / "s.sqlite")
    folder.chmod(0o555)
    return path, None, "cannot"


def _truncated(store, tmp_path):
    path = tmp_path / "s.sqlite"
    path.write_bytes(store.read_bytes()[:3000])
    return path, 2, "the store is damaged"


def _not_a_database(store, tmp_path):
    path = tmp_path / "s.sqlite"
    path.write_bytes(b"campaign results, honestly\n")
    return path, 2, "is not a SQLite database"


CASES = {"unreadable": _unreadable, "truncated": _truncated, "not a database": _not_a_database,
         "wal pending, folder read-only": _wal_pending_in_a_read_only_folder}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_store_that_cannot_be_used_is_one_line_naming_it(store, tmp_path, command, case):
    path, code, reason = CASES[case](store, tmp_path)
    done = _run([*COMMANDS[command], "--db", path], tmp_path)
    if code is None:  # reading needs the -shm file; status and queue would also write
        code = 4 if command in ("status", "queue") else 2
        reason = ("cannot be written: SQLite keeps its journal beside the store"
                  if code == 4 else "cannot be read here: its write-ahead log s.sqlite-wal "
                  "holds changes not yet in the store")
    _one_line(done, code, str(path), reason)
    assert not (tmp_path / "state").exists()  # no crash log: said where it was read


def test_a_store_locked_by_another_process_is_one_line(store, tmp_path):
    path = tmp_path / "s.sqlite"
    shutil.copyfile(store, path)
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        f"c = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
        "c.execute('PRAGMA locking_mode = EXCLUSIVE'); c.execute('BEGIN EXCLUSIVE')\n"
        "c.execute('UPDATE campaigns SET reason = reason')\n"
        "print('held', flush=True); time.sleep(60)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "held\n"
        done = _run(["results", "--db", path], tmp_path)
    finally:
        holder.kill()
        holder.wait()
    _one_line(done, 2, str(path), "another process holds the store locked")


def test_a_read_only_store_file_is_still_read(store, tmp_path):
    path = tmp_path / "s.sqlite"
    shutil.copyfile(store, path)
    path.chmod(0o444)
    for command in ("results", "summary"):
        done = _run([*COMMANDS[command], "--db", path], tmp_path)
        assert done.returncode == 0, (command, done.stderr)
        assert "error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    for command in ("status", "queue"):  # a store holds the queue's tables from its creation
        done = _run([*COMMANDS[command], "--db", path], tmp_path)
        assert done.returncode == 0, (command, done.stderr)
        assert "queue: 0 item(s)" in done.stdout and "Traceback" not in done.stderr


def test_a_read_only_store_of_an_older_schema_is_one_line(tmp_path):
    """A store an older hilbench made must be upgraded before it is read: read-only, the
    upgrade cannot run, and each command says so in one line naming the file."""
    path = tmp_path / "old.sqlite"
    shutil.copyfile(Path(__file__).parents[1] / "store" / "shapes" / "v5-main-3b35219.sqlite",
                    path)
    path.chmod(0o444)
    done = _run([*COMMANDS["results"], "--db", path], tmp_path)
    _one_line(done, 2, str(path), "read-only")
    done = _run([*COMMANDS["status"], "--db", path], tmp_path)
    _one_line(done, 4, str(path), "cannot be written")


def test_a_daemon_on_a_store_it_cannot_write_says_so_before_anything(store, tmp_path):
    path = tmp_path / "s.sqlite"
    shutil.copyfile(store, path)
    path.chmod(0o444)
    done = _run(["daemon", "--db", path, "--control", "tcp://127.0.0.1:*"], tmp_path)
    _one_line(done, 4, f"{path}: cannot be written: permission denied")
    assert not (tmp_path / "s.sqlite.logs").exists()


def test_a_daemon_whose_log_folder_is_not_its_own_says_so(store, tmp_path):
    path = tmp_path / "s.sqlite"
    shutil.copyfile(store, path)
    logs = tmp_path / "s.sqlite.logs"
    logs.mkdir(mode=0o500)  # as another user's 0700 folder is to this one
    done = _run(["daemon", "--db", path, "--control", "tcp://127.0.0.1:*"], tmp_path)
    _one_line(done, 2, f"{logs / 'daemon.log'}: the daemon's log cannot be written "
              "(Permission denied)")
