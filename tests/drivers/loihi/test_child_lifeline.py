"""The loihi driver's Lava child dies with a SIGKILLed agent, and so do the worker processes
it forks (as Lava's runtime does): first with a stand-in for the Lava interpreter that runs the
real runner's signal set-up and forks a worker (no Lava needed), then with real Lava."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from hilbench_drivers.loihi.child import RUNNER, group_members
from tests.orphans import alive, alive_after

STAND_IN_PYTHON = """#!{python}
# Stands in for the Lava environment's python: `python lava_runner.py JOB_DIR`.
import importlib.util, os, sys, time
spec = importlib.util.spec_from_file_location("lava_runner", sys.argv[1])
runner = importlib.util.module_from_spec(spec)
spec.loader.exec_module(runner)
runner.end_group_on_signal()          # what the real runner's main() does first
worker = os.fork()                    # a Lava worker: same group, no parent-death signal
if worker == 0:
    time.sleep(600)
    os._exit(0)
with open(os.path.join(sys.argv[2], "pids.tmp"), "w") as f:
    f.write(f"{{os.getpid()}} {{worker}}")
os.rename(os.path.join(sys.argv[2], "pids.tmp"), os.path.join(sys.argv[2], "pids"))
time.sleep(600)
"""

AGENT = """
import sys, threading
from pathlib import Path
from hilbench_drivers.loihi.child import run_child
run_child(sys.argv[1], Path(sys.argv[2]), {}, 600, 600, threading.Event())
"""


def test_lava_child_and_its_workers_die_with_a_sigkilled_agent(tmp_path: Path) -> None:
    python = tmp_path / "python"
    python.write_text(STAND_IN_PYTHON.format(python=sys.executable))
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    agent = subprocess.Popen([sys.executable, "-c", AGENT, str(python), str(job_dir)])
    pids: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while not (job_dir / "pids").exists():
            assert agent.poll() is None, "the agent stand-in ended early"
            assert time.monotonic() < deadline, "the Lava stand-in never started"
            time.sleep(0.01)
        pids = [int(p) for p in (job_dir / "pids").read_text().split()]
        assert str(RUNNER) in Path(f"/proc/{pids[0]}/cmdline").read_text().split("\0")
        assert alive(pids) == pids
        agent.kill()
        agent.wait(10)
        assert alive_after(pids, 2.0) == [], "the Lava child or its worker outlived the agent"
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        for pid in alive(pids):
            os.kill(pid, signal.SIGKILL)


AGENT_WITH_A_HANGING_LAVA = """
import sys, threading
from hilbench.workloads.qubo import generate_qubo
from hilbench_drivers.loihi import LoihiDriver
driver = LoihiDriver(lava_python=sys.argv[1], allow_inject="1", margin_s="600")
driver.load({"workload": "qubo", "nodes": 25, "density": 0.05, "seed": 0},
            [generate_qubo(25, 0.05, 0)])
driver.configure({"inject": "hang"})
driver.run({"workload": "qubo", "mode": "fixed_timeout", "solver": "lava", "timeout_s": 600,
            "seed": 0}, threading.Event())
"""


def _cmdline(process: psutil.Process) -> str:
    """A child's command line, or "" for one that ended (or is a zombie) while being listed:
    the agent's start-up children come and go (CI: psutil.ZombieProcess here)."""
    try:
        return " ".join(process.cmdline())
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return ""


@pytest.mark.slow
def test_real_lava_and_its_workers_die_with_a_sigkilled_agent(lava_python: str) -> None:
    """The same with the real runner and Lava's own worker processes (runtime up, hanging)."""
    agent = subprocess.Popen([sys.executable, "-c", AGENT_WITH_A_HANGING_LAVA, lava_python])
    group: int | None = None
    try:
        deadline = time.monotonic() + 120
        while group is None or len(group_members(group)) < 2:  # the runner and a Lava worker
            assert agent.poll() is None, "the agent stand-in ended early"
            assert time.monotonic() < deadline, "Lava's runtime never came up"
            runners = [c.pid for c in psutil.Process(agent.pid).children()
                       if str(RUNNER) in _cmdline(c)]
            group = runners[0] if runners else None  # the runner leads its process group
            time.sleep(0.1)
        agent.kill()
        agent.wait(10)
        deadline = time.monotonic() + 2.0
        while group_members(group) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert group_members(group) == [], "Lava processes outlived the agent by 2 s"
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
        if group is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
