"""Campaigns end to end through real agent processes, a real SQLite store and the CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psutil
import pytest

from hilbench.agent.runtime import AgentRuntime
from hilbench.orchestrator.bounds import bound_campaign
from hilbench.orchestrator.campaign import CampaignError, load_campaign, parse_campaign
from hilbench.orchestrator.procedure import expand_all
from hilbench.orchestrator.runner import CampaignRunner
from hilbench.power.rapl import probe_rapl
from hilbench.store import Store
from tests.agent_thread import serving
from tests.campaign_toml import (
    TEST_TIMING_ATTEMPTS,
    agent,
    campaign,
    keysight,
    qubo,
    write_campaign,
)
from tests.figures import measured
from tests.subprocesses import hilbench, hilbench_command, start_campaign, unit_runs, wait_for_run


def small(
    timeout_s: float, agent_table: str | None = None, seeds: Sequence[int] = (0,), **keys: Any
) -> str:
    """Four QUBO units per seed (10 and 25 nodes, SA and Tabu) of ``timeout_s`` on agent cpu0,
    spawned unless ``agent_table`` says otherwise; ``keys`` go into ``[campaign]``."""
    sweep = qubo(nodes=[10, 25], seeds=seeds, solvers=["sa", "tabu"], timeouts_s=[timeout_s])
    return campaign(agent_table or agent(), sweep, name="small", **keys)


@pytest.mark.slow
def test_campaign_runs_every_unit_through_a_real_agent(tmp_path):
    db = tmp_path / "r.sqlite"
    proc = hilbench("run", str(write_campaign(tmp_path, small(0.01))), "--db", str(db))
    assert proc.returncode == 0, proc.stderr  # README exit-code table, row 0
    # This machine decides whether the agent can read RAPL; the test does not assume it.
    rapl, rapl_reason = probe_rapl()
    with Store(db) as store:
        runs = unit_runs(store)
        assert len(runs) == 4 and all(r["status"] == "success" for r in runs)
        for run in runs:
            metrics = {m["name"]: m for m in store.metrics(run["uid"])}
            # n=10 and 25 at 10 % density are easy: the exact optimum is always found (a run
            # that overran on a loaded machine keeps it out of the figures, in its meta).
            assert measured(metrics["bks_gap"]) == 0
            assert metrics["requested_s"]["value"] == 0.01
            assert metrics["actual_s"]["value"] > 0
            assert metrics["feasible"]["value"] == 1.0
            assert metrics["overrun"]["meta"]["tolerance_s"] == 0.5e-3
            if rapl is None:  # power is absent with the reason, never a number
                assert metrics["avg_power_w"]["value"] is None
                assert metrics["avg_power_w"]["meta"]["reason"] == rapl_reason
            else:
                assert metrics["avg_power_w"]["value"] > 0
            phases = store.phases(run["uid"])
            assert [p["name"] for p in phases] == ["load", "solve"]
            assert all("cpu0" in p["clock_offsets"] for p in phases)
    # the table's headings (a row with unverified attempts widens 'feasible', and at 80
    # columns 'gap mean' then wraps onto two lines)
    assert "gap" in proc.stdout and "mean" in proc.stdout and "feasible" in proc.stdout
    assert "4 run(s) completed" in proc.stdout
    # stdout is not a terminal here: one line per finished run, also kept beside the store.
    per_run = [line for line in proc.stdout.splitlines() if " run " in line and "bks_gap=" in line]
    assert len(per_run) == 4 and all(" success; " in line for line in per_run)
    log_file = db.with_name("r.sqlite.logs") / "small.log"
    assert sum(" success; " in line for line in log_file.read_text().splitlines()) == 4
    assert [p.name for p in log_file.parent.glob("spawn-*")] == []  # clean stop: no spawn logs
    assert oct(db.stat().st_mode & 0o777) == "0o600"
    assert oct(log_file.parent.stat().st_mode & 0o777) == "0o700"
    unreadable = f"power source rapl of agent cpu0 could not be read: {rapl_reason}"
    assert (unreadable in " ".join(proc.stdout.split())) == (rapl is None)  # notes wrap


@pytest.mark.slow
def test_runs_that_fail_exit_1_and_the_campaign_goes_on(tmp_path):
    """README exit-code table, row 1: some runs failed, the others ran. The agent (a real
    runtime on loopback) claims a cost its returned state does not have: each run fails."""
    from tests.procedures.test_qubo_checks import TamperingDriver

    runtime = AgentRuntime(TamperingDriver("wrong_cost", str(tmp_path / "no-powercap")),
                           "tamper", bind="tcp://127.0.0.1:*")
    db = tmp_path / "one.sqlite"
    with serving(runtime):
        text = small(0.01, agent(driver="tampering", spawn=False, address=runtime.endpoint))
        proc = hilbench("run", str(write_campaign(tmp_path, text)), "--db", str(db))
    assert proc.returncode == 1, proc.stderr
    assert "failed" in proc.stderr
    with Store(db) as store:
        runs = unit_runs(store)
        assert len(runs) == 4  # every unit was tried
        assert all(r["status"] == "fail" and "claimed cost" in r["reason"] for r in runs)
        assert [c["status"] for c in store.campaigns()] == ["fail"]
    assert "4 failed" in proc.stdout


@pytest.mark.slow
def test_silent_instrument_at_start_exits_3_and_the_campaign_row_has_a_status(tmp_path):
    """An instrument that accepts the connection and never answers: nothing runs, exit 3, the
    campaign row says "abort" and the agent hilbench started is stopped."""
    from hilbench.sim import SimulatedMeter

    db = tmp_path / "silent.sqlite"
    with SimulatedMeter() as meter:
        meter.stall()
        meter_table = keysight(meter.resource, settings={"range": 10.0, "timeout_s": 1.0})
        text = small(0.01) + meter_table
        proc = hilbench("run", str(write_campaign(tmp_path, text)), "--db", str(db))
        meter.resume()
    assert proc.returncode == 3, proc.stderr
    assert "instrument dmm" in proc.stderr
    with Store(db) as store:
        assert unit_runs(store) == []
        assert [c["status"] for c in store.campaigns()] == ["abort"]


@pytest.mark.slow
def test_the_same_campaign_twice_at_once_is_refused(tmp_path):
    """A second `hilbench run` of a campaign still running against the same store would take
    its open runs for a dead orchestrator's; it is refused (exit 2) and names the holder."""
    path = write_campaign(tmp_path, small(1.0, seeds=range(3)))  # 12 s: still running when
    db = tmp_path / "twice.sqlite"  # the second one starts, however loaded the machine
    first = start_campaign(path, db, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_run(db, first, status=None, timeout_s=60)
        second = hilbench("run", str(path), "--db", str(db))
    finally:
        first.terminate()
        first.wait(30)
    assert second.returncode == 2, second.stderr
    assert "already running" in second.stderr and f"pid {first.pid}" in second.stderr


@pytest.mark.slow
def test_killing_the_agent_names_agent_and_run_and_keeps_completed_runs(tmp_path):
    text = small(1.0, seeds=range(4))
    db = tmp_path / "k.sqlite"
    proc = start_campaign(write_campaign(tmp_path, text), db)
    try:
        wait_for_run(db, proc)
        agents = [
            p for p in psutil.Process(proc.pid).children(recursive=True) if "agent" in p.cmdline()
        ]
        assert len(agents) == 1
        os.kill(agents[0].pid, signal.SIGKILL)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 3, err
    assert "agent cpu0 was lost during run" in err
    with Store(db) as store:
        runs = unit_runs(store)
        done = [r for r in runs if r["status"] == "success"]
        failed = [r for r in runs if r["status"] == "fail"]
        assert done, "completed runs must remain in the store"
        assert len(failed) == 1 and "cpu0" in failed[0]["reason"], [
            (r["unit_key"], r["reason"]) for r in failed]
        assert failed[0]["uid"][:8] in err
        assert store.campaigns()[0]["status"] == "abort"


@pytest.mark.serial  # asserts honest runs verified on time: alone (tests/alone.py)
@pytest.mark.slow
def test_interrupted_campaign_resumes_where_it_stopped(tmp_path):
    db = tmp_path / "res.sqlite"
    campaign = load_campaign(write_campaign(tmp_path, small(0.001)))
    runner = CampaignRunner(campaign, db)
    calls = []

    def interrupt_after_two(unit, status, run_uid):
        if status == "retried":  # an unverified attempt whose unit runs again: not done yet
            return
        calls.append(unit.key)
        if len(calls) == 2:
            raise KeyboardInterrupt

    runner.on_unit_done = interrupt_after_two
    with pytest.raises(KeyboardInterrupt):
        runner.run()
    again = CampaignRunner(campaign, db)
    outcome = again.run()
    assert outcome.skipped == 2 and outcome.completed == 2
    with Store(db) as store:
        keys = [r["unit_key"] for r in unit_runs(store) if r["status"] == "success"]
    assert sorted(keys) == sorted(str(u.key) for u in expand_all(campaign))


@pytest.mark.parametrize(
    "patch, message",
    [
        (
            {
                "qubo": [
                    {
                        "nodes": [10],
                        "densities": [0.1],
                        "seeds": [0],
                        "solvers": ["sa"],
                        "timeouts_s": [0.01],
                        "nodez": 1,
                    }
                ]
            },
            r"bad.toml \[\[qubo\]\] #1: unknown key 'nodez' \(did you mean 'nodes'\?\)",
        ),
        (
            {
                "qubo": [
                    {
                        "nodes": [10],
                        "densities": [1.5],
                        "seeds": [0],
                        "solvers": ["sa"],
                        "timeouts_s": [0.01],
                    }
                ]
            },
            r"bad.toml \[\[qubo\]\] #1 densities\[1\]: 1.5 must be <= 1",
        ),
        (
            {
                "qubo": [
                    {
                        "nodes": [10],
                        "densities": [0.1],
                        "seeds": [0],
                        "solvers": ["sa"],
                        "timeouts_s": [500],
                    }
                ]
            },
            r"bad.toml \[\[qubo\]\] #1 timeouts_s\[1\]: 500 must be <= 100",
        ),
        (
            {
                "qubo": [
                    {
                        "nodes": [10],
                        "densities": [0.1],
                        "seeds": [0],
                        "solvers": ["gurobi"],
                        "timeouts_s": [0.1],
                    }
                ]
            },
            "gurobi",
        ),
        (
            {
                "qubo": [
                    {
                        "agent": "nobody",
                        "nodes": [10],
                        "densities": [0.1],
                        "seeds": [0],
                        "solvers": ["sa"],
                        "timeouts_s": [0.1],
                    }
                ]
            },
            "nobody",
        ),
    ],
)
def test_bad_campaigns_are_refused_with_the_key_named(patch, message):
    base = {"agents": [{"id": "a", "driver": "cpu", "spawn": True}]}
    with pytest.raises(CampaignError, match=message):
        # what `hilbench run` and `campaign check` do before anything starts (a solver is
        # checked against what the spawned agent's driver declares)
        bound_campaign(parse_campaign({**base, **patch}, "bad.toml"))


@pytest.mark.slow
def test_bad_campaign_file_exits_2_naming_the_file(tmp_path):
    path = write_campaign(tmp_path, "[campaign\nname=", "broken.toml")
    proc = hilbench("run", str(path), "--db", str(tmp_path / "x.sqlite"))
    assert proc.returncode == 2 and "broken.toml" in proc.stderr


@pytest.mark.slow
def test_unreachable_agent_exits_3(tmp_path):
    text = small(0.01, agent(spawn=False, address="tcp://127.0.0.1:9"))
    proc = hilbench("run", str(write_campaign(tmp_path, text)), "--db", str(tmp_path / "u.sqlite"))
    assert proc.returncode == 3 and "tcp://127.0.0.1:9" in proc.stderr


def test_example_campaign_is_the_demo_campaign():
    root = Path(__file__).resolve().parents[2]
    example = root / "examples" / "qubo-cpu.toml"
    packaged = root / "hilbench" / "campaigns" / "demo.toml"
    assert example.read_text() == packaged.read_text()
    assert len(expand_all(load_campaign(example))) == 300  # 5 × 5 × 3 × 4


@pytest.mark.slow
def test_agent_that_dials_in_runs_the_campaign(tmp_path):
    from tests.ports import worker_port

    port = worker_port()
    text = small(0.001, agent(spawn=False, connects=True), listen=f"tcp://127.0.0.1:{port}")
    db = tmp_path / "dial.sqlite"
    run = start_campaign(write_campaign(tmp_path, text), db)
    dialling = subprocess.Popen(
        hilbench_command("agent", "--driver", "cpu", "--connect", f"tcp://127.0.0.1:{port}",
                         "--id", "cpu0"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _out, err = run.communicate(timeout=120)
    finally:
        dialling.terminate()
        dialling.wait(10)
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, err
    with Store(db) as store:
        runs = unit_runs(store)
    assert len(runs) == 4 and all(r["status"] == "success" for r in runs)
    assert runs[0]["agents"]["cpu0"]["agent_id"] == "cpu0"


def test_time_to_solution_campaign_reports_latency_per_gap(tmp_path):
    campaign = parse_campaign({
        "campaign": {"timing_attempts": TEST_TIMING_ATTEMPTS},
        "agents": [{"id": "cpu0", "driver": "cpu", "spawn": True}],
        "qubo": [{"scenario": "time_to_solution", "nodes": [25], "densities": [0.1],
                  "seeds": [0], "solvers": ["tabu"], "gaps": [0.1, 0.01], "max_time_s": 20}],
    }, "tts.toml")
    db = tmp_path / "tts.sqlite"
    outcome = CampaignRunner(campaign, db).run()
    assert outcome.completed == 1
    with Store(db) as store:
        run = unit_runs(store)[0]
        assert run["procedure"] == "qubo.time_to_solution"
        metrics = {m["name"]: m for m in store.metrics(run["uid"])}
    loose, tight = metrics["tts_s@0.1"], metrics["tts_s@0.01"]
    assert 0 < loose["value"] <= tight["value"] <= 20
    assert loose["meta"]["target_source"] == "exact"
    # No meter and no RAPL here: the energy to solution is absent, not invented.
    assert metrics["tts_energy_j@0.1"]["value"] is None


def test_spawned_agent_starts_with_the_campaigns_python(tmp_path):
    # Another environment's interpreter, named relative to the campaign file: a wrapper that
    # leaves a mark and runs this interpreter.
    env = tmp_path / "other-env" / "bin"
    env.mkdir(parents=True)
    mark = tmp_path / "used"
    wrapper = env / "python"
    wrapper.write_text(f'#!/bin/sh\necho "$@" > "{mark}"\nexec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    text = small(0.001, agent(python="other-env/bin/python"))
    campaign = load_campaign(write_campaign(tmp_path, text))
    assert campaign.agents[0].python == str(wrapper)
    outcome = CampaignRunner(campaign, tmp_path / "py.sqlite").run()
    assert outcome.completed == 4
    assert mark.read_text().startswith("-m hilbench agent --driver cpu")
