"""`hilbench store check` reads through the write-ahead log before judging: a store stopped
by a full disk keeps its last commits in `-wal`, and those are not damage."""

from __future__ import annotations

import re
import struct

from hilbench.store import Store, StoreWriter
from hilbench.store.wal import FRAME_HEADER, WAL_HEADER, _checksum, read_wal
from tests.orchestrator.test_storage_faults import _campaign, small_disk  # noqa: F401
from tests.subprocesses import hilbench


def _counts(stdout: str) -> dict[str, int]:
    return {table: int(n) for n, table in re.findall(r"(\d+) (\w+)", stdout.split("(", 1)[1])}


def test_a_store_stopped_by_a_full_disk_is_intact_through_its_wal(tmp_path, small_disk):  # noqa: F811
    db = small_disk / "s.sqlite"
    stopped = hilbench("run", _campaign(tmp_path), "--db", db, "-q")
    assert stopped.returncode == 4, stopped.stderr  # the disk is full
    wal = read_wal(db.with_name("s.sqlite-wal"))
    assert wal is not None and wal.frames > 0  # commits still in the log, not the main file
    checked = hilbench("store", "check", "--db", db)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    note, verdict = checked.stdout.splitlines()
    assert note.startswith(f"note: read through {db}-wal: {wal.frames} committed page(s)")
    assert verdict.startswith(f"{db}: intact")
    with Store(db) as store:
        runs = len(store.runs())
    assert runs > 0 and _counts(verdict)["runs"] == runs  # every run the store holds


def test_a_frame_cut_short_after_the_last_commit_is_left_out_as_sqlite_does(tmp_path):
    """The full disk cut the last frame: the commits before it count, nothing after."""
    db = tmp_path / "s.sqlite"
    with StoreWriter(db):
        pass
    log = db.with_name("s.sqlite-wal")
    page = 4096
    # a log of one commit frame (page 1 as it is), then half a frame
    header = struct.pack(">8I", 0x377F0682, 3007000, page, 0, 11, 22, 0, 0)
    c = _checksum(header[:24], "<", 0, 0)
    header = header[:24] + struct.pack(">2I", *c)
    first = db.read_bytes()[:page]
    c = _checksum(struct.pack(">2I", 1, 1), "<", *c)
    c = _checksum(first, "<", *c)
    frame = struct.pack(">6I", 1, 1, 11, 22, *c) + first
    log.write_bytes(header + frame + frame[: FRAME_HEADER + 100])
    wal = read_wal(log)
    assert wal is not None and wal.pages == {1: WAL_HEADER + FRAME_HEADER} and wal.db_pages == 1
    log.write_bytes(header + frame[:-1] + b"\x01")  # the only frame's checksum fails
    assert read_wal(log) is None
