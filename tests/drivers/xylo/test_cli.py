"""`hilbench xylo inspect|probe` in the main environment (numpy only; no Rockpool, no samna)."""

from __future__ import annotations

import json
import subprocess
import sys

from click.testing import CliRunner

from hilbench.cli import cli
from tests.drivers.xylo.conftest import REPO

SHIPPED = REPO / "drivers" / "xylo" / "data" / "xylo-asc-fixture.npz"


def test_inspect_prints_the_shipped_networks_shape_and_identity():
    result = CliRunner().invoke(cli, ["xylo", "inspect", str(SHIPPED)])
    assert result.exit_code == 0, result.output
    info = json.loads(result.output)
    assert info["shape"] == {"inputs": 16, "hidden": 96, "outputs": 4}
    assert info["classes"] == ["airport", "street_traffic", "bus", "park"]
    assert len(info["sha256"]) == 64 and info["info"]["steps"] == 400


def test_inspect_refuses_a_file_that_is_not_a_network(tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    result = CliRunner().invoke(cli, ["xylo", "inspect", str(bad)])
    assert result.exit_code == 2 and "bad.npz: not a readable .npz" in result.output


def test_probe_without_samna_says_what_to_install_and_exits_3():
    run = subprocess.run([sys.executable, "-m", "hilbench", "xylo", "probe"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 3
    assert "samna" in run.stdout and "pip install samna" in run.stdout
    assert "USB devices:" in run.stdout


def test_bench_without_the_xylo_environment_is_a_message_not_a_traceback():
    run = subprocess.run([sys.executable, "-m", "hilbench", "bench", "xylo", "--samples", "1"],
                         capture_output=True, text=True, timeout=60)
    if run.returncode == 0:  # this interpreter has Rockpool: the benchmark ran
        assert "real time" in run.stdout.splitlines()[-1]
        return
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert "pip install 'hilbench[xylo]'" in run.stderr
