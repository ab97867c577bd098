"""`hilbench xylo train` trains a tiny network for a few steps on the fixture's train split and
writes a network file that XyloSim runs; class = the output channel with the most spikes."""

from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from hilbench.cli import cli
from hilbench.workloads.asc import make_fixture
from hilbench_drivers.xylo.network import XyloNetwork
from hilbench_drivers.xylo.train import xylosim_predict


def test_train_a_tiny_network_for_a_few_steps(tmp_path):
    root = make_fixture(tmp_path / "fixture", clips_per_class_train=1, clips_per_class_test=1,
                        extra_unlisted_per_class=0)
    out = tmp_path / "net.npz"
    result = CliRunner().invoke(cli, [
        "xylo", "train", "--data", str(root), "--out", str(out), "--hidden", "8,8,8",
        "--steps", "3", "--limit-clips", "1", "--afe-cache", str(tmp_path / "afe"), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["steps"] == 3 and report["samples"] == 10 and report["hidden"] == [8, 8, 8]
    net = XyloNetwork.load(out)
    assert net.hidden == 8 + 8 + 8  # the three hidden layers; the readout is the 4 outputs
    assert net.outputs == 4 and net.info["steps"] == 3
    # what training reports as XyloSim accuracy is what XyloSim gives on those samples again
    assert 0.0 <= report["train_accuracy_xylosim"] <= 1.0
    predicted = xylosim_predict(net, np.zeros((2, 100, 16), np.uint8))
    assert predicted.shape == (2,)


def test_bad_hidden_sizes_are_a_usage_error(tmp_path):
    result = CliRunner().invoke(cli, ["xylo", "train", "--data", str(tmp_path), "--out",
                                      str(tmp_path / "n.npz"), "--hidden", "8,x"])
    assert result.exit_code == 2 and "--hidden" in result.output
