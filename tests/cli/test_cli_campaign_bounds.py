"""Campaigns refused before anything starts: files that are not text, and (below) campaigns
too large for the driver or the host. `hilbench run` and `campaign check` alike exit 2 and
name the file and what is wrong; no store is opened and no process started."""

from __future__ import annotations

import pytest

from tests.campaign_toml import agent, campaign, qubo
from tests.subprocesses import hilbench

pytestmark = pytest.mark.slow


def test_a_file_that_is_not_utf8_is_refused_with_the_byte_offset(tmp_path):
    text = campaign(agent(), qubo(), name="t").encode()
    bad = text + b"# caf\xe9\n"  # Latin-1, as an old editor saves it
    offset = bad.index(b"\xe9")
    path = tmp_path / "latin1.toml"
    path.write_bytes(bad)
    db = tmp_path / "never.sqlite"
    for args in (("run", path, "--db", db), ("campaign", "check", path)):
        proc = hilbench(*args)
        assert proc.returncode == 2, proc.stderr
        assert f"error: {path} is not UTF-8 text (TOML must be): byte {offset} (0xe9)" \
            in proc.stderr
        assert "Traceback" not in proc.stderr
    assert not db.exists()


def _refused_before_anything_starts(tmp_path, text: str, message: str) -> None:
    """`run` and `campaign check` both exit 2 with ``message``; `run` opened no store and
    started no process (spawned processes would have left their log folder)."""
    path = tmp_path / "big.toml"
    path.write_text(text)
    db = tmp_path / "never.sqlite"
    for args in (("run", path, "--db", db), ("campaign", "check", path)):
        proc = hilbench(*args, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert f"error: {path} {message}" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr and "MemoryError" not in proc.stderr
    assert not db.exists() and not list(tmp_path.glob("never.sqlite*"))


def test_a_qubo_of_ten_million_nodes_is_refused_by_the_drivers_declared_limit(tmp_path):
    text = campaign(agent(), qubo(nodes=[10, 10_000_000]), name="big")
    _refused_before_anything_starts(
        tmp_path, text,
        "[[qubo]] #1 nodes: 10000000 is too large: a 10000000² int8 matrix passes the "
        "driver's declared max_bytes",
    )


def test_a_qubo_no_host_can_hold_is_refused_for_a_remote_agent_too(tmp_path):
    """A remote agent's driver checks its own limits, but the orchestrator must still make
    the matrix: the host's memory refuses it."""
    text = campaign(agent(spawn=False, address="tcp://127.0.0.1:9"),
                    qubo(nodes=[10_000_000]), name="big")
    _refused_before_anything_starts(
        tmp_path, text, "[[qubo]] #1 nodes: a unit needs ~327.4 TiB, more than half of this "
        "host's",
    )


def test_a_hundred_million_repetitions_are_refused(tmp_path):
    text = campaign(agent(), qubo(), name="reps", repetitions=100_000_000)
    _refused_before_anything_starts(
        tmp_path, text,
        "[campaign] repetitions: 100000000 × 1 unit(s) = 100000000 runs; keeping track of them "
        "needs ~95.4 GiB, more than half of this host's",
    )


def test_a_driver_limit_per_solver_names_the_solver(tmp_path):
    """The CPU driver declares Tabu's limit (a dense float64 matrix in memory); SA at the same
    size is allowed."""
    import psutil

    too_many = int((psutil.virtual_memory().total / 2 / 8) ** 0.5) + 1
    text = campaign(agent(), qubo(nodes=[too_many], solvers=["sa", "tabu"]), name="tabu")
    _refused_before_anything_starts(
        tmp_path, text,
        f"[[qubo]] #1 nodes: {too_many} is too large: the driver declares max_nodes "
        f"{too_many - 1} for tabu (driver cpu of agent cpu0)",
    )


def test_check_lists_the_runs_and_the_campaigns_size(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(campaign(agent(), qubo(seeds=list(range(30)), timeouts_s=[0.5]), name="c",
                             repetitions=2))
    proc = hilbench("campaign", "check", path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1].startswith("  60 run(s), about 31 s (model: budgets 30 s + ~15 ms per run), a "
                               "unit needs up to")
    assert lines[2] == "  qubo/fixed_timeout/n=10/d=0.1/seed=0/sa/timeout=0.5/rep=0  (agent cpu0)"
    assert lines[-1] == "  … and 40 more (--all lists every run)"
    every = hilbench("campaign", "check", "--all", path)
    assert len(every.stdout.splitlines()) == 2 + 60
