"""ASC model files are read by the reader their `format` names (entry points), so the
procedures carry an int8 CNN and a Xylo network alike."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hilbench.workloads.asc import packaged_model_path
from hilbench.workloads.asc.model_files import load_model_file, model_format, readers
from hilbench.workloads.asc.quant import QuantisedModel
from hilbench_drivers.xylo.network import XyloNetwork
from tests.drivers.xylo.conftest import tiny_network_parts


def test_each_format_gets_its_reader(tmp_path):
    assert {"hilbench.asc.int8-cnn", "hilbench.xylo.snn"} <= set(readers())
    cnn = load_model_file(packaged_model_path())
    assert isinstance(cnn, QuantisedModel) and cnn.sample_rate == 16000
    net_path = tiny_network_parts().save(tmp_path / "net.npz")
    assert model_format(net_path) == "hilbench.xylo.snn"
    net = load_model_file(net_path)
    assert isinstance(net, XyloNetwork) and net.sample_rate == 16000
    assert net.metadata()["format"] == "hilbench.xylo.snn" and net.arrays()


def test_unknown_or_missing_format_names_the_file(tmp_path):
    odd = tmp_path / "odd.npz"
    np.savez(odd, meta=np.array(json.dumps({"format": "someone.else"})))
    with pytest.raises(ValueError, match=r"odd\.npz: model format 'someone\.else' has no reader"):
        load_model_file(odd)
    bare = tmp_path / "bare.npz"
    np.savez(bare, w=np.zeros(3))
    with pytest.raises(ValueError, match=r"bare\.npz: no 'meta'"):
        load_model_file(bare)
