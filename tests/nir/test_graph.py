"""NIR graph files: the content hash names a graph however it was stored, and a file handed in
is checked before and while it is parsed, with one line naming the file on every refusal."""

from __future__ import annotations

import copy
import os

import numpy as np
import pytest

nir = pytest.importorskip("nir")

from hilbench.nir.graph import (  # noqa: E402
    MAX_GRAPH_BYTES,
    NirFileError,
    graph_hash,
    hilbench_metadata,
    read_graph,
    with_hilbench_metadata,
    write_graph,
)
from hilbench.workloads.asc.nir.graph import AscGraph, packaged_graph_path  # noqa: E402

# The packaged ASC graph's identity. Stored runs of the closed category carry it, so a change of
# the graph or of the hash function must show up here, not in a database months later.
PACKAGED_HASH = "d1120d3ed08e21d4e95ccea71bab93526b8c71dac523eb6edf2efda44fc7601d"


@pytest.fixture(scope="module")
def graph():
    return read_graph(packaged_graph_path())


def test_the_packaged_graph_has_its_pinned_hash(graph):
    assert graph_hash(graph) == PACKAGED_HASH


def test_the_hash_is_of_the_graph_not_of_the_hdf5_bytes(graph, tmp_path):
    files = {}
    for compression in ("gzip", "lzf", None):
        path = write_graph(graph, tmp_path / f"g-{compression}.nir", compression=compression)
        files[compression] = path.read_bytes()
    assert len(set(files.values())) == 3  # three different files ...
    for compression in files:  # ... one graph
        assert graph_hash(read_graph(tmp_path / f"g-{compression}.nir")) == PACKAGED_HASH


def test_order_of_nodes_and_edges_does_not_change_the_hash(graph):
    shuffled = nir.NIRGraph(nodes=dict(reversed(list(graph.nodes.items()))),
                            edges=list(reversed(graph.edges)), metadata=dict(graph.metadata))
    assert graph_hash(shuffled) == PACKAGED_HASH


def test_any_change_of_content_changes_the_hash(graph):
    weight = copy.deepcopy(graph)
    weight.nodes["fc2"].weight[3, 4] += 1
    threshold = copy.deepcopy(graph)
    threshold.nodes["lif_out"].v_threshold[0] += 1
    meta = copy.deepcopy(graph)
    changed = hilbench_metadata(meta)
    changed["input"]["max_per_step"] = 14
    meta.metadata = with_hilbench_metadata(changed)
    edges = copy.deepcopy(graph)
    edges.edges = [e for e in edges.edges if e != ("lif3", "fc_out")] + [("lif2", "fc_out")]
    dtype = copy.deepcopy(graph)
    dtype.nodes["fc1"].weight = dtype.nodes["fc1"].weight.astype(np.float64)
    hashes = {graph_hash(g) for g in (weight, threshold, meta, edges, dtype)}
    assert PACKAGED_HASH not in hashes and len(hashes) == 5


def test_metadata_states_the_pre_processing(graph):
    asc = AscGraph.from_graph(graph)
    assert asc.dt == 0.01 and asc.steps_per_sample == 100 and asc.input_channels == 16
    assert asc.classes == ("airport", "street_traffic", "bus", "park")
    assert "AFESim" in asc.pre_processing and "at most 15 per step" in asc.pre_processing
    assert asc.meta["input"]["afe"]["fs"] == 110_000


@pytest.mark.parametrize("case", ["text", "truncated", "foreign-hdf5", "directory", "symlink",
                                  "missing", "too-large"])
def test_a_bad_file_is_one_line_naming_it(case, tmp_path):
    path = tmp_path / f"{case}.nir"
    real = packaged_graph_path().read_bytes()
    if case == "text":
        path.write_text("not a graph\n")
    elif case == "truncated":
        path.write_bytes(real[: len(real) // 3])
    elif case == "foreign-hdf5":
        import h5py

        with h5py.File(path, "w") as f:
            f.create_dataset("weights", data=np.ones(3))
    elif case == "directory":
        path.mkdir()
    elif case == "symlink":
        os.symlink(packaged_graph_path(), path)
    elif case == "too-large":
        with open(path, "wb") as fh:
            fh.write(real[:8])
            fh.truncate(MAX_GRAPH_BYTES + 1)
    with pytest.raises(NirFileError) as err:
        read_graph(path)
    message = str(err.value)
    assert str(path) in message and "\n" not in message and "Traceback" not in message


def test_metadata_that_is_not_json_or_incomplete_is_named(graph):
    bad = copy.deepcopy(graph)
    bad.metadata = {"hilbench": "{not json"}
    with pytest.raises(NirFileError, match="not JSON"):
        hilbench_metadata(bad, "g.nir")
    meta = hilbench_metadata(graph)
    del meta["input"]["front_end"]
    bad.metadata = with_hilbench_metadata(meta)
    with pytest.raises(NirFileError, match=r"g\.nir.*front_end"):
        AscGraph.from_graph(bad, "g.nir")
    meta = hilbench_metadata(graph)
    meta["format"] = "somebody.else"
    bad.metadata = with_hilbench_metadata(meta)
    with pytest.raises(NirFileError, match=r"expected 'hilbench\.nir\.asc-snn'"):
        AscGraph.from_graph(bad, "g.nir")
