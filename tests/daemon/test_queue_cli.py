"""`hilbench queue` and `hilbench schedule` on a real store file, as a user types them (run in
this process by click's CliRunner, but for the schedule test that sets the server's zone)."""

from __future__ import annotations

import json
import os
import re
import sqlite3

import pytest

from hilbench.daemon.queue_db import QueueDB
from tests.daemon.conftest import qubo_campaign
from tests.subprocesses import hilbench, hilbench_here

pytestmark = pytest.mark.slow


def _ids(db):
    out = hilbench_here("queue", "list", "--db", db, "--json")
    assert out.returncode == 0, out.stderr
    return [i["id"] for i in json.loads(out.stdout)]


def test_add_snapshots_the_file_and_a_requeued_file_gets_a_new_id(tmp_path):
    db = tmp_path / "q.sqlite"
    path = qubo_campaign(tmp_path, "snap", 2)
    original = path.read_text()
    first = hilbench_here("queue", "add", path, "--db", db, "--trials", "3")
    assert first.returncode == 0 and "queued item 1: snap" in first.stdout
    path.write_text(original.replace("seeds = [0, 1]", "seeds = [7]"))
    assert hilbench_here("queue", "add", path, "--db", db).returncode == 0
    with QueueDB(db) as q:
        a, b = q.items()
    assert (a.id, b.id) == (1, 2)
    assert a.content == original and a.trials == 3  # editing the file changed nothing queued
    assert b.content != original and a.content_hash != b.content_hash


def test_priority_move_remove_and_history(tmp_path):
    db = tmp_path / "q.sqlite"
    path = qubo_campaign(tmp_path, "order", 1)
    for priority in ("0", "0", "5"):
        added = hilbench_here("queue", "add", path, "--db", db, "--priority", priority)
        assert added.returncode == 0, added.stderr
    assert _ids(db) == [3, 1, 2]
    assert hilbench_here("queue", "move", "2", "--before", "3", "--db", db).returncode == 0
    assert _ids(db) == [2, 3, 1]
    assert hilbench_here("queue", "remove", "3", "--db", db).returncode == 0
    assert _ids(db) == [2, 1]
    hist = json.loads(hilbench_here("queue", "history", "--db", db, "--json").stdout)
    assert [(h["id"], h["exit_status"]) for h in hist] == [(3, "removed")]
    gone = hilbench_here("queue", "remove", "3", "--db", db)
    assert gone.returncode == 2 and "not in the queue (in the history)" in gone.stderr


def test_a_bad_campaign_is_refused_naming_file_and_key(tmp_path):
    db = tmp_path / "q.sqlite"
    path = tmp_path / "bad.toml"
    path.write_text(qubo_campaign(tmp_path, "bad", 1).read_text().replace("nodes", "nodez"))
    out = hilbench_here("queue", "add", path, "--db", db)
    assert out.returncode == 2
    assert "bad.toml [[qubo]] #1: unknown key 'nodez'" in out.stderr


def test_schedule_add_list_remove_with_next_fires(tmp_path):
    db = tmp_path / "q.sqlite"
    path = qubo_campaign(tmp_path, "nightly", 1)
    server = {**os.environ, "TZ": "Asia/Tokyo"}  # the server's zone: JST, no summer time
    out = hilbench("schedule", "add", path, "--cron", "0 22 * * *", "--tz", "Europe/Berlin",
                   "--missed", "run-once", "--db", db, env=server)
    assert out.returncode == 0, out.stderr
    assert "schedule 1: nightly at '0 22 * * *' (Europe/Berlin), next fire" in out.stdout
    # 22:00 in Berlin is 06:00 (winter) or 05:00 (summer) in Tokyo, said with the zone
    assert re.search(r"next fire \d{4}-\d\d-\d\d 0[56]:00:00 JST;", out.stdout), out.stdout
    listed = hilbench("schedule", "list", "--db", db, env=server).stdout
    assert len(re.findall(r" 0[56]:00:00 JST", listed)) == 3, listed
    [row] = json.loads(hilbench("schedule", "list", "--db", db, "--json").stdout)
    assert row["missed"] == "run-once" and len(row["next"]) == 3
    assert all(b - a == 86400 or abs(b - a - 86400) == 3600  # a day, or a day across DST
               for a, b in zip(row["next"], row["next"][1:], strict=False))
    bad = hilbench("schedule", "add", path, "--cron", "0 25 * * *", "--db", db)
    assert bad.returncode == 2 and "cron expression '0 25 * * *'" in bad.stderr
    assert hilbench("schedule", "remove", "1", "--db", db).returncode == 0
    assert json.loads(hilbench("schedule", "list", "--db", db, "--json").stdout) == []


def test_an_item_goes_to_the_bench_whose_daemon_serves_its_agent(tmp_path):
    from tests.campaign_toml import agent, campaign, qubo, write_campaign

    db = tmp_path / "q.sqlite"
    with QueueDB(db) as q:  # the heartbeat rows two daemons write, with their config's serves
        q.beat("rig-7", host="rig7", pid=1, serves=["tcp://10.1.2.3:5555"])
        q.beat("rig-8", host="rig8", pid=1, serves=["tcp://10.1.2.4:5555"])
    path = write_campaign(tmp_path, campaign(
        agent(spawn=False, address="tcp://10.1.2.3:5555"), qubo(), name="remote"))
    added = hilbench_here("queue", "add", path, "--db", db)
    assert added.returncode == 0, added.stderr
    assert "bench rig-7" in added.stdout
    with QueueDB(db) as q:
        assert [i.bench for i in q.items()] == ["rig-7"]
        assert q.items("rig-8") == [] and q.claim("rig-8", 1e12) is None  # not the other's
        assert q.claim("rig-7", 1e12).bench == "rig-7"


def _before_the_queue_joined_the_schema(conn: sqlite3.Connection) -> None:
    """The store's version as it was when the daemon made and altered its own tables (schema
    6: revision 0007 brings those tables, whatever their shape, to the newest)."""
    conn.execute("UPDATE alembic_version SET version_num = '0006'")
    conn.execute("PRAGMA user_version = 6")


def test_the_history_counts_the_starts_of_a_store_made_before_they_were_counted(tmp_path):
    db = tmp_path / "q.sqlite"
    path = qubo_campaign(tmp_path, "counted", 1)
    assert hilbench_here("queue", "add", path, "--db", db).returncode == 0
    conn = sqlite3.connect(db)  # the queue table as the first release made it
    conn.execute("ALTER TABLE daemon_queue DROP COLUMN starts")
    _before_the_queue_joined_the_schema(conn)
    conn.commit()
    conn.close()
    with QueueDB(db) as q:
        [item] = q.items()
        assert item.starts == 0
        q.set_campaign(item.id, "c1")  # started, killed, started again
        q.set_campaign(item.id, "c1")
        q.finish(item.id, "completed", "done", [])
    [row] = json.loads(hilbench_here("queue", "history", "--db", db, "--json").stdout)
    assert row["starts"] == 2
    shown = hilbench_here("queue", "history", "--db", db).stdout
    assert "0 run(s) in 2 start(s)" in shown


def test_a_store_made_before_outcomes_were_kept_gains_them_in_place(tmp_path):
    db = tmp_path / "q.sqlite"
    path = qubo_campaign(tmp_path, "older", 1)
    assert hilbench_here("queue", "add", path, "--db", db).returncode == 0
    conn = sqlite3.connect(db)  # the queue's tables as a store before issue 32 has them
    conn.execute("ALTER TABLE daemon_queue DROP COLUMN outcome")
    conn.execute("ALTER TABLE daemon_history DROP COLUMN outcome")
    _before_the_queue_joined_the_schema(conn)
    conn.commit()
    conn.close()
    with QueueDB(db) as q:
        [item] = q.items()
        assert item.outcome is None and item.content == path.read_text()
        q.requeue(item.id, attempts=0, not_before=1e12, message="waiting for the disk",
                  outcome="store unwritable")
        assert q.release_waits("store unwritable") == 1 and q.items()[0].not_before == 0
        q.finish(item.id, "failed", "3 run(s) failed; first failure: MemoryError", [],
                 "completed with failed runs")
    shown = hilbench_here("queue", "history", "--db", db).stdout
    assert "(completed with failed runs)  3 run(s) failed; first failure: MemoryError" in shown
