"""What `hilbench run` says about earlier attempts, and every start and stop in the store:
real `hilbench` processes, real agents, a real store file."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from pathlib import Path

import pytest

from hilbench.orchestrator.resume import changed_keys
from hilbench.store import Store, StoreError
from tests.campaign_toml import agent, campaign, qubo, write_campaign
from tests.subprocesses import hilbench, hilbench_command, run_campaign, start_campaign, unit_runs


def _small(timeout_s: float = 0.001, seeds=(0, 1), **keys) -> str:
    return campaign(agent(), qubo(seeds=list(seeds), timeouts_s=[timeout_s]), name="small",
                    **keys)


def _campaigns(db: Path) -> list[dict]:
    with Store(db) as store:
        return store.campaigns()


def _runs(db: Path) -> list[dict]:
    with Store(db) as store:
        return unit_runs(store)


def _resume_line(path: Path, db: Path) -> str:
    """The resume hint as the command was invoked (here `python -m hilbench`)."""
    return "to resume: " + shlex.join(hilbench_command("run", path, "--db", db))


@pytest.mark.slow
def test_a_campaign_that_cannot_start_is_stored_with_its_reason(tmp_path):
    text = campaign(
        agent(spawn=False, address="tcp://127.0.0.1:9"),
        qubo(),
        name="unreachable",
        connect_timeout_s=0.5,
    )
    path, db = write_campaign(tmp_path, text), tmp_path / "u.sqlite"
    proc = run_campaign(path, db)
    assert proc.returncode == 3, proc.stderr
    assert _resume_line(path, db) in proc.stderr
    [row] = _campaigns(db)
    assert row["status"] == "abort" and row["n_runs"] == 0
    assert row["reason"].startswith("could not start: agent cpu0 at tcp://127.0.0.1:9")
    shown = hilbench("results", "--db", db)
    assert shown.returncode == 0, shown.stderr
    assert f"{row['uid'][:8]} unreachable: abort at" in shown.stdout
    assert "could not start: agent cpu0 at tcp://127.0.0.1:9" in shown.stdout
    # The same command again resumes that campaign (nothing was done) and says so.
    again = run_campaign(path, db)
    assert again.returncode == 3
    assert f"resuming campaign {row['uid'][:8]}: 0 of 1 unit(s) done" in again.stderr
    assert [c["uid"] for c in _campaigns(db)] == [row["uid"]]


@pytest.mark.slow
def test_finished_campaign_is_reported_and_not_run_again_unless_asked(tmp_path):
    path, db = write_campaign(tmp_path, _small()), tmp_path / "f.sqlite"
    first = run_campaign(path, db)
    assert first.returncode == 0, first.stderr
    [done] = _campaigns(db)
    assert f"new campaign {done['uid'][:8]}: 2 unit(s)" in first.stderr

    second = run_campaign(path, db)
    assert second.returncode == 0, second.stderr
    assert f"campaign {done['uid'][:8]} already finished (success, 2 unit(s)); nothing to do" \
        in second.stderr
    assert len(_runs(db)) == 2 and len(_campaigns(db)) == 1

    third = run_campaign(path, db, "--again")
    assert third.returncode == 0, third.stderr
    assert f"again after campaign {done['uid'][:8]}" in third.stderr
    assert len(_runs(db)) == 4 and len(_campaigns(db)) == 2

    # An edited file is a new campaign, and the message names what changed.
    path.write_text(_small(seeds=(0, 2), repetitions=2))
    fourth = run_campaign(path, db)
    assert fourth.returncode == 0, fourth.stderr
    newest = _campaigns(db)[-2]["uid"][:8]  # the --again campaign: the newest of this name
    assert (
        f"{path} changed since campaign {newest} (keys [campaign] repetitions, "
        "[[qubo]] #1 seeds)" in fourth.stderr
    )


@pytest.mark.slow
def test_resume_says_how_many_units_are_done(tmp_path):
    path, db = write_campaign(tmp_path, _small(0.4, seeds=range(4))), tmp_path / "r.sqlite"
    proc = start_campaign(path, db)
    try:
        deadline = time.monotonic() + 90
        while not [r for r in _runs_if_any(db) if r["status"] == "success"]:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.kill()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    done = {r["unit_key"] for r in _runs(db) if r["status"] == "success"}
    [row] = _campaigns(db)
    again = run_campaign(path, db)
    assert again.returncode == 0, again.stderr
    assert f"resuming campaign {row['uid'][:8]}: {len(done)} of 4 unit(s) done" in again.stderr
    successes = [r["unit_key"] for r in _runs(db) if r["status"] == "success"]
    assert sorted(successes) == sorted(set(successes)) and len(successes) == 4


@pytest.mark.slow
def test_a_kill_right_after_success_does_not_run_the_campaign_again(tmp_path):
    """The moment between the campaign marked success and the process gone (agents being
    stopped): a kill there used to make the same command run every unit again."""
    path, db = write_campaign(tmp_path, _small()), tmp_path / "k.sqlite"
    proc = start_campaign(path, db)
    try:
        deadline = time.monotonic() + 90
        while not [c for c in _campaigns_if_any(db) if c["status"] == "success"]:
            assert time.monotonic() < deadline
            if proc.poll() is not None:
                break
            time.sleep(0.005)
        proc.kill()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    runs_before = len(_runs(db))
    again = run_campaign(path, db)
    assert again.returncode == 0, again.stderr
    assert "already finished" in again.stderr
    assert len(_runs(db)) == runs_before == 2


def _sigcgt(pid: int) -> int:
    """The signals a process catches (from /proc), 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("SigCgt:"):
                return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


@pytest.mark.slow
@pytest.mark.parametrize("delay_s", [0.0, 0.3, 0.7])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_stop_signal_during_start_up_exits_128_plus_n_and_leaves_nothing_open(
    tmp_path, sig, delay_s
):
    """From the moment hilbench's code runs (it catches SIGTERM from then on; before, the
    interpreter itself is starting) a stop signal gives 130 or 143, never "Aborted!", a
    traceback, or a campaign or run without a status."""
    path, db = write_campaign(tmp_path, _small(0.5)), tmp_path / "s.sqlite"
    proc = subprocess.Popen(hilbench_command("run", path, "--db", db, "-q"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not _sigcgt(proc.pid) & (1 << (signal.SIGTERM - 1)):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.001)
        time.sleep(delay_s)
        os.kill(proc.pid, sig)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + sig, err
    assert "Traceback" not in err and "Aborted!" not in err
    if err == f"hilbench: interrupted by {sig.name}\n":  # before the command line was read
        assert not db.exists()
    else:
        assert _resume_line(path, db) in err
    for row in _campaigns_if_any(db):
        assert row["status"] == "abort" and row["reason"], row
    assert [r for r in _runs_if_any(db) if r["status"] == "incomplete"] == []


def _runs_if_any(db: Path) -> list[dict]:
    try:
        return _runs(db)
    except StoreError:  # not there yet, or being created
        return []


def _campaigns_if_any(db: Path) -> list[dict]:
    try:
        return _campaigns(db)
    except StoreError:
        return []


def test_changed_keys_are_named_as_the_file_names_them():
    before = {
        "name": "c", "repetitions": 1, "connect_timeout_s": 5.0,
        "agents": [{"id": "cpu0", "driver": "cpu", "key": "a.key"}],
        "tables": {"qubo": [{"nodes": [10], "seeds": [0]}, {"nodes": [25]}]},
        "config_hash": "x",
    }
    after = {
        "name": "c", "repetitions": 1, "connect_timeout_s": 60.0,
        "agents": [{"id": "cpu0", "driver": "loihi", "key": "b.key"}],
        "tables": {"qubo": [{"nodes": [10], "seeds": [0, 1]}], "asc": [{"split": "test"}]},
        "config_hash": "y",
    }
    assert changed_keys(before, after) == [
        "[[agents]] #1 driver", "[[asc]] #1 split", "[[qubo]] #1 seeds", "[[qubo]] #2 nodes",
    ]
