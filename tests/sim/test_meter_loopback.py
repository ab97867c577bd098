"""The simulated meter has no authentication: it listens on loopback only."""

from __future__ import annotations

import subprocess
import sys

import pytest

from hilbench.orchestrator.instruments import POWER_MODELS
from hilbench.sim import SimulatedMeter


@pytest.mark.parametrize("host", ["0.0.0.0", "", "192.0.2.7"])
def test_the_simulated_meter_refuses_addresses_other_hosts_reach(host):
    with pytest.raises(ValueError, match="loopback only"):
        SimulatedMeter(POWER_MODELS["simulated-cpu"], host=host)


def test_sim_meter_command_says_so_with_exit_2():
    done = subprocess.run(
        [sys.executable, "-m", "hilbench", "sim-meter", "--host", "0.0.0.0"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2
    assert "loopback only" in done.stderr
