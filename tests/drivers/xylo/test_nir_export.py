"""The Xylo ASC network as a NIR graph and back (numpy and nir only, no Rockpool): the packaged
graph is the export of the packaged network, the import gives the chip the very same network,
and what the chip cannot run is refused with the node and the key."""

from __future__ import annotations

import copy

import numpy as np
import pytest

pytest.importorskip("nir")

from hilbench.nir.graph import NirFileError, graph_hash, read_graph
from hilbench.workloads.asc.nir.graph import AscGraph, packaged_graph
from hilbench_drivers.xylo.network import XyloNetwork
from hilbench_drivers.xylo.nir_export import export_file, export_graph
from hilbench_drivers.xylo.nir_import import import_graph
from tests.drivers.xylo.conftest import REPO, tiny_network_parts

NETWORK = REPO / "drivers" / "xylo" / "data" / "xylo-asc-fixture.npz"


@pytest.fixture(scope="module")
def network():
    return XyloNetwork.load(NETWORK)


def test_the_packaged_graph_is_the_export_of_the_packaged_network(network, tmp_path):
    packaged = packaged_graph()
    assert graph_hash(export_graph(network)) == packaged.sha256
    written = export_file(NETWORK, tmp_path / "x.nir")
    assert graph_hash(read_graph(written)) == packaged.sha256
    assert packaged.meta["source"]["sha256"] == network.sha256


def test_the_graph_is_the_layers_the_trainer_built(network):
    graph = packaged_graph().graph
    assert [graph.nodes[n].weight.shape for n in ("fc1", "fc2", "fc3", "fc_out")] == [
        (32, 16), (32, 32), (32, 32), (4, 32)]
    # integer weights exactly as on the chip, time constants dt * 2**dash
    assert np.array_equal(graph.nodes["fc1"].weight, network.spec["weights_in"][:, :32, 0].T)
    lif = graph.nodes["lif1"]
    assert np.allclose(lif.tau_syn / network.dt, 2.0 ** network.spec["dash_syn"][:32])
    assert np.allclose(lif.w_in, 2.0 ** network.spec["dash_syn"][:32] - 1)


def test_importing_the_graph_gives_the_chip_the_same_network(network):
    back = import_graph(packaged_graph())
    assert back.sha256 == network.sha256
    assert back.info["nir_graph_sha256"] == packaged_graph().sha256


def test_a_network_without_layers_is_refused():
    with pytest.raises(NirFileError, match=r"info\['hidden'\]"):
        export_graph(tiny_network_parts())


def test_what_xylo_cannot_run_is_refused_naming_node_and_key():
    asc = packaged_graph()

    def refused(change, match):
        graph = copy.deepcopy(asc.graph)
        change(graph)
        with pytest.raises(NirFileError, match=match):
            import_graph(AscGraph.from_graph(graph))

    refused(lambda g: g.nodes["fc2"].weight.__setitem__((0, 0), 0.5),
            r"'fc2': weight must be integers in -128..127")
    refused(lambda g: g.nodes["fc2"].weight.__setitem__((0, 0), 300),
            r"'fc2': weight must be integers")
    refused(lambda g: g.nodes["lif2"].tau_syn.__setitem__(0, 0.03),
            r"'lif2': tau_syn / dt must be a power of two")
    refused(lambda g: g.nodes["lif_out"].v_reset.__setitem__(1, -5.0),
            r"'lif_out': v_reset must be 0")
    refused(lambda g: setattr(g, "edges", [*g.edges, ("lif1", "fc3")]),
            r"'lif1' feeds 2 nodes")
