"""What hilbench creates on disk and where it listens: every file and folder that holds results,
logs or keys is owner-only even under umask 000; a new store is announced; a path that cannot
be a store is refused before anything is created; an agent listens on IPv6 loopback."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hilbench.cli import cli
from hilbench.store import Store, StoreWriter
from tests.campaign_toml import agent, campaign, qubo, write_campaign
from tests.subprocesses import announced_agent, hilbench, unit_runs


def _modes(root: Path) -> dict[str, int]:
    """Mode bits of every file and folder below ``root``, by path relative to it."""
    found = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            found[str(path.relative_to(root))] = stat.S_IMODE(path.stat().st_mode)
    return found


@pytest.mark.slow
def test_everything_hilbench_creates_is_owner_only_under_umask_000(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    db = work / "s.sqlite"
    ok = write_campaign(tmp_path, campaign(agent(), qubo(), name="fine"))
    done = hilbench("run", ok, "--db", db, "--record", work / "cassette", "-q", umask=0)
    assert done.returncode == 0, done.stderr
    # A spawned process that fails keeps its log beside the store.
    broken = write_campaign(
        tmp_path, campaign(agent(python="/bin/false"), qubo(), name="broken"), "b.toml"
    )
    assert hilbench("run", broken, "--db", db, "-q", umask=0).returncode == 3
    made = hilbench("keys", "generate", "orch", "--out", work / "new" / "keys", umask=0)
    assert made.returncode == 0, made.stderr
    with announced_agent("--driver", "cpu", "--bind", "tcp://127.0.0.1:*",
                         "--log-file", str(work / "agent.log")):
        pass
    matrix = hilbench("qubo", "generate", "--nodes", "10", "--density", "0.1", "--seed", "0",
                      "--out", work / "q.npy", umask=0)
    assert matrix.returncode == 0, matrix.stderr
    damaged = work / "copy.sqlite"
    damaged.write_bytes(db.read_bytes()[: db.stat().st_size // 2])
    salvaged = hilbench("store", "salvage", damaged, "--out", work / "saved.sqlite", umask=0)
    assert salvaged.returncode == 0, salvaged.stderr
    damaged.unlink()  # a copy made by this test

    old = os.umask(0)
    try:  # in this process: the write-ahead files of an open store, a model, the target cache
        with StoreWriter(work / "open.sqlite"):
            wal = {name: stat.S_IMODE((work / name).stat().st_mode)
                   for name in ("open.sqlite-wal", "open.sqlite-shm")}
        from hilbench.workloads.asc.model_files import write_model_npz
        from hilbench.workloads.qubo.target_cache import TargetCache

        write_model_npz(work / "models" / "m.npz", {"format": "x"}, {"w": np.zeros(2)})
        TargetCache(work / "cache" / "hilbench" / "t.json").put("k", {"cost": -1})
    finally:
        os.umask(old)

    modes = _modes(work) | wal
    expected = {
        "s.sqlite", "s.sqlite.logs", "s.sqlite.logs/fine.log", "s.sqlite.logs/broken.log",
        "cassette", "cassette/manifest.json", "cassette/documents.jsonl",
        "cassette/samples.jsonl", "cassette/samples", "new", "new/keys", "new/keys/orch.key",
        "new/keys/orch.key_secret",
        "agent.log", "saved.sqlite", "open.sqlite", "open.sqlite-wal", "open.sqlite-shm",
        "models", "models/m.npz", "cache", "cache/hilbench", "cache/hilbench/t.json", "q.npy",
    }
    assert expected <= set(modes), sorted(set(modes))
    assert any(name.startswith("s.sqlite.logs/spawn-") for name in modes)
    assert any(name.startswith("s.sqlite.logs/campaign-") for name in modes)  # the lock files
    # A public key is meant to be copied to the other side; everything else is the owner's.
    wide = {n: oct(m) for n, m in modes.items() if m & 0o077 and not n.endswith(".key")}
    assert wide == {}
    assert modes["new/keys/orch.key"] == 0o644


@pytest.mark.slow
def test_a_new_store_is_announced_on_stdout_once(tmp_path):
    path = write_campaign(tmp_path, campaign(agent(), qubo(), name="one"))
    db = tmp_path / "s.sqlite"
    first = hilbench("run", path, "--db", db, "-q")
    assert first.returncode == 0, first.stderr
    assert f"new store {db}" in first.stdout.splitlines()[0]
    second = hilbench("run", path, "--db", db, "-q", "--no-resume")
    assert second.returncode == 0 and "new store" not in second.stdout


def test_a_store_in_a_folder_that_does_not_exist_is_refused(tmp_path):
    path = write_campaign(tmp_path, campaign(agent(), qubo()))
    db = tmp_path / "no" / "such" / "s.sqlite"
    done = CliRunner().invoke(cli, ["run", str(path), "--db", str(db), "-q"])
    assert done.exit_code == 2
    assert f"folder {tmp_path / 'no' / 'such'} does not exist" in done.output
    assert not (tmp_path / "no").exists()


def test_a_file_that_is_not_a_store_is_refused_and_nothing_is_left_beside_it(tmp_path):
    path = write_campaign(tmp_path, campaign(agent(), qubo()))
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    other = tmp_path / "other.sqlite"
    other_conn = sqlite3.connect(other)
    other_conn.execute("CREATE TABLE t (x)")
    other_conn.close()
    before = sorted(p.name for p in tmp_path.iterdir())
    for target, words in ((notes, "not a SQLite database"), (other, "not a hilbench store")):
        done = CliRunner().invoke(
            cli, ["run", str(path), "--db", str(target), "--record", str(tmp_path / "r.jsonl")]
        )
        assert done.exit_code == 2 and words in done.output, done.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert notes.read_text() == "my notes\n"


@pytest.mark.slow
def test_an_agent_on_ipv6_loopback_serves_a_campaign(tmp_path):
    """The protocol counts [::1] as loopback; an agent binds it and a campaign reaches it."""
    db = tmp_path / "s.sqlite"
    with announced_agent("--driver", "cpu", "--bind", "tcp://[::1]:*") as (_proc, endpoint):
        assert endpoint.startswith("tcp://[::1]:")
        text = campaign(agent(spawn=False, address=endpoint), qubo(seeds=[0, 1]), name="v6")
        done = hilbench("run", write_campaign(tmp_path, text), "--db", db, "-q")
    assert done.returncode == 0, done.stderr
    with Store(db) as store:
        runs = unit_runs(store)
    assert len(runs) == 2 and all(r["status"] == "success" for r in runs)
