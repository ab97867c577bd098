"""One bench lock per machine that no other local user can redirect, fake or dodge: the same
folder for every user and session, checked before use; lock files never opened through a
symlink; the holder named as the kernel names it."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hilbench.orchestrator.campaign import load_campaign
from hilbench.orchestrator.lockfile import open_folder
from hilbench.orchestrator.locks import (
    LOCAL_HOST,
    SYSTEM_LOCK_DIR,
    BenchBusy,
    bench_lock,
    device_node,
    lock_dir,
    lock_path,
    resources,
)
from tests.campaign_toml import agent, campaign, qubo, write_campaign
from tests.other_user import NOBODY, as_user, holding_as_user
from tests.ports import worker_port
from tests.subprocesses import hilbench

HOST = socket.gethostname()


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A bench lock folder as hilbench makes one (root's, mode 1777) that every user can reach
    (pytest's own temporary folders are root's 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="hilbench-test-shared-locks-", dir="/tmp"))
    os.chmod(folder, 0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file of root's that a lock must never write through."""
    path = Path(tempfile.mkdtemp(prefix="hilbench-test-secret-", dir="/tmp")) / "secret"
    path.write_text("root's own data\n")
    os.chmod(path, 0o600)
    yield path
    shutil.rmtree(path.parent, ignore_errors=True)


def _unchanged(path: Path) -> bool:
    st = path.stat()
    return (path.read_text() == "root's own data\n" and stat.S_IMODE(st.st_mode) == 0o600
            and st.st_uid == 0)


def _spawned(tmp_path: Path, name: str) -> Path:
    return write_campaign(tmp_path, campaign(agent(), qubo(), name=name), f"{name}.toml")


def _free_port() -> int:
    return worker_port()


def _one_line_error(done) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


def test_every_user_and_session_locks_in_one_machine_folder(monkeypatch):
    monkeypatch.delenv("HILBENCH_LOCK_DIR")
    seen = set()
    for runtime in ("/run/user/0", "/tmp/another-session", None):
        if runtime is None:
            monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
        else:
            monkeypatch.setenv("XDG_RUNTIME_DIR", runtime)
        seen.add(lock_dir())
        seen.add(as_user(lock_dir, env={"XDG_RUNTIME_DIR": runtime}))
    assert seen == {SYSTEM_LOCK_DIR}


def test_another_user_in_another_session_is_refused_naming_the_first(tmp_path, monkeypatch):
    """The machine's own folder, no override: nobody (with its own XDG_RUNTIME_DIR) holds the
    bench; root's `hilbench run` from another session is refused naming nobody's campaign, and
    the other way round."""
    monkeypatch.delenv("HILBENCH_LOCK_DIR")
    os.close(open_folder(SYSTEM_LOCK_DIR, shared=True))  # root makes it, as the tmpfiles line
    # an agent address no other test or campaign on this machine uses: nothing else collides
    address = f"tcp://127.0.0.1:{_free_port()}"
    first = load_campaign(write_campaign(
        tmp_path, campaign(agent(spawn=False, address=address), qubo(), name="first"), "a.toml"))
    second = write_campaign(
        tmp_path, campaign(agent(spawn=False, address=address), qubo(), name="second"), "b.toml")
    nobody_session = {"HILBENCH_LOCK_DIR": None, "XDG_RUNTIME_DIR": "/run/user/65534"}
    with holding_as_user(bench_lock, first, env=nobody_session) as holder:
        done = hilbench("run", second, "--db", tmp_path / "s.sqlite", "-q",
                        env={**os.environ, "XDG_RUNTIME_DIR": "/run/user/0"})
        assert done.returncode == 2
        line = _one_line_error(done)
        assert f"agent at {address} is in use by pid {holder} on {HOST} (`" in line
        assert "campaign first)" in line and "campaign second not started" in line
    # root holds it now (in this process), and nobody's attempt from its session is refused
    with bench_lock(first), pytest.raises(BenchBusy) as refused:
        as_user(bench_lock, load_campaign(second), env=nobody_session)
    assert f"is in use by pid {os.getpid()} on {HOST}" in str(refused.value)
    assert "campaign first)" in str(refused.value)


def test_a_folder_premade_by_another_user_is_refused_and_nothing_is_written(
        tmp_path, monkeypatch, secret):
    """nobody made the folder first and put a symlink to a file of root's in place of every
    lock file: root's run writes nothing through them and says why, in one line."""
    folder = Path(tempfile.mkdtemp(prefix="hilbench-test-foreign-", dir="/tmp"))
    os.chmod(folder, 0o1777)
    locks = folder / "locks"
    path = _spawned(tmp_path, "mine")
    names = resources(load_campaign(path))

    def premake() -> None:
        locks.mkdir(mode=0o777)
        os.chmod(locks, 0o1777)
        for name in names:
            lock_path(name, locks).symlink_to(secret)

    with contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, folder, ignore_errors=True)
        as_user(premake)
        monkeypatch.setenv("HILBENCH_LOCK_DIR", str(locks))
        done = hilbench("run", path, "--db", tmp_path / "s.sqlite", "-q")
        assert done.returncode == 2
        line = _one_line_error(done)
        assert f"lock folder {locks} belongs to nobody (uid {NOBODY})" in line
        assert _unchanged(secret)
        assert sorted(p.name for p in locks.iterdir()) == [lock_path(LOCAL_HOST).name]


def test_a_symlink_in_place_of_a_lock_file_is_refused_naming_it(
        tmp_path, monkeypatch, shared_dir, secret):
    monkeypatch.setenv("HILBENCH_LOCK_DIR", str(shared_dir))
    planted = lock_path(LOCAL_HOST, shared_dir)
    as_user(planted.symlink_to, secret)
    done = hilbench("run", _spawned(tmp_path, "mine"), "--db", tmp_path / "s.sqlite", "-q")
    assert done.returncode == 2
    assert f"lock file {planted} is a symlink" in _one_line_error(done)
    assert _unchanged(secret) and planted.is_symlink()


@pytest.mark.parametrize("kind", ["fifo", "hard link", "large file"])
def test_a_lock_file_hilbench_did_not_make_is_refused_without_opening_it(
        tmp_path, monkeypatch, shared_dir, secret, kind):
    monkeypatch.setenv("HILBENCH_LOCK_DIR", str(shared_dir))
    planted = lock_path(LOCAL_HOST, shared_dir)
    if kind == "fifo":
        os.mkfifo(planted)  # opening it to read would hang
    elif kind == "hard link":
        os.link(secret, planted)  # root's own file under a lock file's name
    else:
        planted.write_bytes(b"x" * 100_000)
    with pytest.raises(BenchBusy, match=f"lock file {planted} "):
        bench_lock(load_campaign(_spawned(tmp_path, "mine")))
    assert _unchanged(secret)


def test_a_forged_lock_file_nobody_holds_is_taken_and_replaced(tmp_path, monkeypatch, shared_dir):
    monkeypatch.setenv("HILBENCH_LOCK_DIR", str(shared_dir))
    planted = lock_path(LOCAL_HOST, shared_dir)
    as_user(planted.write_text, "pid 1 on elsewhere (`hilbench run x.toml`, campaign forged)\n")
    with bench_lock(load_campaign(_spawned(tmp_path, "mine"))):
        st = planted.stat()
        assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o644)
        assert planted.read_text().startswith(f"pid {os.getpid()} on {HOST} (`")
    assert not planted.exists()  # released: removed, so the next holder writes its own


def test_a_holder_line_is_believed_only_when_the_kernel_agrees(tmp_path, monkeypatch, shared_dir):
    """nobody holds the lock and writes a line naming another pid and campaign: the refusal
    names nobody's real pid and user and labels the line as nobody's claim."""
    monkeypatch.setenv("HILBENCH_LOCK_DIR", str(shared_dir))
    planted = lock_path(LOCAL_HOST, shared_dir)
    forged = "pid 1 on elsewhere (`hilbench run x.toml`, campaign forged)"

    @contextlib.contextmanager
    def hold_and_forge() -> Iterator[None]:
        import fcntl

        fd = os.open(planted, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, (forged + "\n").encode())
        try:
            yield
        finally:
            os.close(fd)

    with holding_as_user(hold_and_forge) as holder, pytest.raises(BenchBusy) as refused:
        bench_lock(load_campaign(_spawned(tmp_path, "mine")))
    text = str(refused.value)
    assert text.startswith(f"{LOCAL_HOST} is in use by pid {holder} (nobody (uid {NOBODY}), `")
    assert f"its lock file, written by nobody (uid {NOBODY}), claims: {forged}" in text


def test_a_lock_taken_under_umask_077_refuses_another_user_by_name(
        tmp_path, monkeypatch, shared_dir):
    """Not EACCES: the lock file is readable by all whatever the holder's umask."""
    monkeypatch.setenv("HILBENCH_LOCK_DIR", str(shared_dir))
    mine = load_campaign(_spawned(tmp_path, "first"))
    theirs = load_campaign(_spawned(tmp_path, "second"))
    with holding_as_user(bench_lock, mine, uid=0, gid=0, umask=0o077) as holder:
        assert stat.S_IMODE(lock_path(LOCAL_HOST, shared_dir).stat().st_mode) == 0o644
        with pytest.raises(BenchBusy) as refused:
            as_user(bench_lock, theirs)
    assert f"is in use by pid {holder} on {HOST} (`" in str(refused.value)
    assert "campaign first)" in str(refused.value)


def test_a_serial_port_is_locked_on_its_device_node_as_pyserial_does(tmp_path):
    """pyserial's exclusive=True (and picocom, tio) flock the port's device node: a campaign
    whose instrument is on that port takes the same lock, so each refuses the other."""
    import serial

    from tests.campaign_toml import keysight

    controller, port = os.openpty()  # a real serial line: a pty's device node
    node = os.ttyname(port)
    meter = keysight(f"ASRL{node}::INSTR", settings={"range": 10.0})
    mine = load_campaign(write_campaign(tmp_path, campaign(agent(), qubo(), meter, name="port")))
    try:
        with serial.Serial(node, exclusive=True), pytest.raises(BenchBusy) as refused:
            bench_lock(mine)
        assert str(refused.value).startswith(
            f"instrument dmm's port {node} is in use by pid {os.getpid()} (")
        with bench_lock(mine), pytest.raises(serial.SerialException):
            serial.Serial(node, exclusive=True)
        serial.Serial(node, exclusive=True).close()  # released with the campaign's locks
    finally:
        os.close(port)
        os.close(controller)


def test_the_device_node_of_an_instrument_resource():
    assert device_node("ASRL/dev/ttyUSB0::INSTR") == "/dev/ttyUSB0"
    assert device_node("asrl/dev/serial/by-id/usb-STM::INSTR") == "/dev/serial/by-id/usb-STM"
    assert device_node("/dev/ttyACM0") == "/dev/ttyACM0"  # a port as pyserial takes it
    for elsewhere in ("TCPIP::10.0.0.7::5025::SOCKET", "USB0::0x2A8D::0x0101::MY1::INSTR",
                      "ASRL3::INSTR", "socket://10.0.0.7:5025"):
        assert device_node(elsewhere) is None


def test_a_user_who_cannot_make_the_folder_is_told_how_root_makes_it(tmp_path, monkeypatch):
    parent = Path(tempfile.mkdtemp(prefix="hilbench-test-parent-", dir="/tmp"))
    os.chmod(parent, 0o755)  # root's, not writable by nobody
    monkeypatch.setenv("HILBENCH_LOCK_DIR", str(parent / "locks"))
    try:
        with pytest.raises(BenchBusy) as refused:
            as_user(bench_lock, load_campaign(_spawned(tmp_path, "mine")))
    finally:
        shutil.rmtree(parent, ignore_errors=True)
    assert str(refused.value).startswith(
        f"lock folder {parent / 'locks'}: Permission denied; have root make it, mode 1777 "
        f"(`install -d -m 1777 {parent / 'locks'}`")


def test_a_long_command_line_still_leaves_the_campaign_named(tmp_path, monkeypatch, shared_dir):
    monkeypatch.setenv("HILBENCH_LOCK_DIR", str(shared_dir))
    monkeypatch.setattr(sys, "argv", ["hilbench", "run", *["a-long-argument" * 4] * 40])
    mine = load_campaign(_spawned(tmp_path, "first"))
    with holding_as_user(bench_lock, mine, uid=0, gid=0) as holder, \
            pytest.raises(BenchBusy) as refused:
        bench_lock(load_campaign(_spawned(tmp_path, "second")))
    assert f"in use by pid {holder} on {HOST} (`hilbench run a-long-argument" in str(refused.value)
    assert "…`, campaign first)" in str(refused.value)
