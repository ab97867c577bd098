"""The Xylo network file: what the orchestrator reads with numpy alone and sends to the agent."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hilbench_drivers.xylo.network import NetworkFileError, XyloNetwork
from tests.drivers.xylo.conftest import tiny_network_parts


def test_round_trip_keeps_every_array_and_identity(tmp_path):
    net = tiny_network_parts()
    path = net.save(tmp_path / "net.npz")
    back = XyloNetwork.load(path)
    assert back.sha256 == net.sha256
    for name, array in net.arrays().items():
        np.testing.assert_array_equal(back.arrays()[name], array)
    assert back.classes == net.classes and back.dt == net.dt
    # the load message the procedure sends rebuilds the same network on the agent
    meta, arrays = net.metadata(), net.arrays()
    assert XyloNetwork.from_parts(meta, arrays).sha256 == net.sha256


def test_altered_array_is_refused_by_its_hash(tmp_path):
    net = tiny_network_parts()
    meta, arrays = net.metadata(), net.arrays()
    arrays["weights_out"] = arrays["weights_out"].copy()
    arrays["weights_out"][0, 0] += 1
    with pytest.raises(NetworkFileError, match="does not match"):
        XyloNetwork.from_parts(meta, arrays)


def test_limits_of_xylo_audio_2_are_enforced():
    net = tiny_network_parts()
    spec = dict(net.spec)
    spec["weights_out"] = np.zeros((net.hidden, 9), np.int64)  # 9 outputs > 8
    spec["threshold_out"] = np.zeros(9, np.int64)
    with pytest.raises(NetworkFileError, match="at most 8"):
        XyloNetwork(spec=spec, weight_shifts=net.weight_shifts, aliases=net.aliases, dt=0.01,
                    classes=net.classes, sample_rate=16000)
    spec = dict(net.spec)
    spec["weights_in"] = np.full((16, net.hidden, 1), 300)  # not int8
    with pytest.raises(NetworkFileError, match="outside int8"):
        XyloNetwork(spec=spec, weight_shifts=net.weight_shifts, aliases=net.aliases, dt=0.01,
                    classes=net.classes, sample_rate=16000)


def test_not_a_network_file_names_the_file(tmp_path):
    bad = tmp_path / "cnn.npz"
    np.savez(bad, meta=np.array(json.dumps({"format": "hilbench.asc.int8-cnn", "version": 1})))
    with pytest.raises(NetworkFileError, match=r"cnn\.npz: format is 'hilbench\.asc\.int8-cnn'"):
        XyloNetwork.load(bad)
    with pytest.raises(NetworkFileError, match="not found"):
        XyloNetwork.load(tmp_path / "missing.npz")
