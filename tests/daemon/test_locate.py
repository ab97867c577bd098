"""`hilbench status` finds a store file's daemon without SQLAlchemy, and agrees with the queue."""

from __future__ import annotations

import time

from hilbench.daemon.locate import daemon_row
from hilbench.daemon.queue_db import QueueDB


def test_the_light_lookup_reads_the_heartbeat_the_queue_wrote(tmp_path):
    db = tmp_path / "d.sqlite"
    assert daemon_row(db) is None  # no file: the full path decides (and says so)
    assert daemon_row("postgresql://lab/hb") is None
    (tmp_path / "other.sqlite").write_bytes(b"")
    assert daemon_row(tmp_path / "other.sqlite") is None  # no table: the full path decides
    with QueueDB(db) as q:
        assert daemon_row(db) == {} == q.daemon_info()
        q.beat("a", host="h1", pid=11, control="tcp://127.0.0.1:5650", state="idle")
        time.sleep(0.01)
        q.beat("b", host="h2", pid=22, control="tcp://127.0.0.1:5651", state="idle")
        for bench in (None, "a", "b"):
            full = q.daemon_info(bench)
            light = daemon_row(db, bench)
            assert light == {k: full[k] for k in light}, bench
            assert light["control"] == full["control"]
        assert daemon_row(db)["bench"] == "b"  # the daemon seen last
        assert daemon_row(db, "c") == {}
