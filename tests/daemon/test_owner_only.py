"""The daemon answers "a daemon runs here" to anyone who reaches it and tells more only to its
owner, root and its configured group (or a key holder); its socket and logs are owner-only
whatever the umask."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from hilbench.cli.daemon import fetch_status
from hilbench.daemon.control import ControlError, ControlServer, NotAllowed, request
from tests.other_user import NOBODY, as_user

GROUP = 54321  # a group no account has: only the peers a test puts in it are members


@pytest.fixture
def open_socket_dir():
    """A folder every user can reach, for a socket whose file mode lets everyone connect: what
    is left to keep them out is the rule on the peer's credentials."""
    folder = Path(tempfile.mkdtemp(prefix="hb-ctl-", dir="/tmp"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _status(address: str):
    return request(address, "status", timeout_s=5)


def _ping(address: str):
    return request(address, "ping", timeout_s=5)


def test_the_peer_the_kernel_names_decides_who_may_ask(open_socket_dir):
    server = ControlServer(f"ipc://{open_socket_dir / 'c.sock'}",
                           {"ping": lambda: "pong", "status": lambda: {"secret": "queue"}},
                           group=GROUP)
    server.start()
    try:
        os.chmod(open_socket_dir / "c.sock", 0o666)  # as if its mode were wrong
        address = server.endpoint
        assert _status(address) == {"secret": "queue"}  # the owner
        assert as_user(_ping, address) == "pong"  # a daemon runs
        with pytest.raises(NotAllowed, match="a daemon runs here; only its owner") as refused:
            as_user(_status, address)
        assert "secret" not in str(refused.value)
        member = {"secret": "queue"}
        assert as_user(_status, address, uid=65533, gid=GROUP) == member  # primary group
        assert as_user(_status, address, uid=65532, groups=(GROUP,)) == member  # supplementary
        with pytest.raises(ControlError, match="a daemon runs here"):
            as_user(_status, address, uid=65531, gid=65531, groups=(65530,))
    finally:
        server.close()


@pytest.mark.parametrize("insecure", [False, True])
def test_plaintext_tcp_answers_only_ping_unless_the_config_says_insecure(insecure):
    """Any local user can reach 127.0.0.1 and no peer can be named there."""
    server = ControlServer("tcp://127.0.0.1:*", {"ping": lambda: "pong", "status": lambda: 7},
                           insecure=insecure)
    server.start()
    try:
        assert request(server.endpoint, "ping") == "pong"
        if insecure:
            assert request(server.endpoint, "status") == 7
        else:
            with pytest.raises(ControlError, match="a daemon runs here"):
                request(server.endpoint, "status")
    finally:
        server.close()


def _modes(folder: Path) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()}


def test_the_daemon_under_umask_000_is_its_owners_or_its_groups(open_socket_dir, daemon_at):
    """Every user may reach the store's folder: the logs folder and the rule stop them."""
    db = open_socket_dir / "d.sqlite"
    logs = open_socket_dir / "d.sqlite.logs"
    d = daemon_at(db, umask=0).start()
    assert d.status()["daemon"]["state"] == "idle"
    address = f"ipc://{logs / 'control.sock'}"
    modes = _modes(logs)
    assert stat.S_IMODE(logs.stat().st_mode) == 0o700
    assert {n: oct(m) for n, m in modes.items() if m != 0o600} == {}, modes
    assert {"daemon.log", "worker.log", "control.sock"} <= set(modes)
    with pytest.raises(ControlError, match="is its owner's"):
        as_user(_status, address)
    d.stop()

    config = open_socket_dir / "daemon.toml"
    config.write_text('[daemon]\ngroup = "nogroup"\n')
    g = daemon_at(db, config=config, umask=0).start()
    st = logs.stat()
    assert (stat.S_IMODE(st.st_mode), st.st_gid) == (0o710, NOBODY)  # reach, not list
    sock = (logs / "control.sock").stat()
    assert (stat.S_IMODE(sock.st_mode), sock.st_gid) == (0o660, NOBODY)
    assert stat.S_IMODE((logs / "daemon.log").stat().st_mode) == 0o600
    member = as_user(fetch_status, db, address, None, None)  # nobody is in nogroup
    assert member["daemon"]["pid"] == g.proc.pid
    with pytest.raises(NotAllowed, match="is its owner's"):
        as_user(_status, address, uid=65533, gid=65533)
