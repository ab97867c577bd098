"""The reference execution: NIR's CubaLIF stepped by forward Euler, checked by hand on one
neuron, each device convention on its own, and the packaged graph on the packaged samples."""

from __future__ import annotations

import numpy as np
import pytest

nir = pytest.importorskip("nir")

from hilbench.nir.graph import NirFileError  # noqa: E402
from hilbench.nir.reference import (  # noqa: E402
    NIR_SEMANTICS,
    Semantics,
    predicted_classes,
    run_reference,
)
from hilbench.workloads.asc.nir.graph import packaged_graph, packaged_test_spikes  # noqa: E402

DT = 0.01


def cuba(n, tau_syn, tau_mem, r, threshold, w_in=1.0):
    one = np.ones(n, np.float32)
    return nir.CubaLIF(tau_syn=tau_syn * one, tau_mem=tau_mem * one, r=r * one,
                       v_leak=0 * one, v_threshold=threshold * one, w_in=w_in * one)


def one_neuron(weight, threshold):
    """Input(1) → Linear → CubaLIF(tau_syn = tau_mem = 2 dt, r = 2) → Output."""
    nodes = {"in": nir.Input(input_type={"input": np.array([1])}),
             "fc": nir.Linear(weight=np.array([[weight]], np.float32)),
             "lif": cuba(1, 2 * DT, 2 * DT, 2.0, threshold),
             "out": nir.Output(output_type={"output": np.array([1])})}
    return nir.NIRGraph(nodes=nodes, edges=[("in", "fc"), ("fc", "lif"), ("lif", "out")])


def spikes(graph, raster, semantics=NIR_SEMANTICS, node="lif"):
    run = run_reference(graph, [np.asarray(raster, float).reshape(-1, 1)], DT, semantics)
    return run.activity[0].spikes[node][:, 0].tolist(), run.activity[0].membrane[node][:, 0]


def test_one_neuron_by_hand():
    # x = 1, 0, 0; weight 4; dt/tau = 1/2:
    # step 1: I = 0 + (4 - 0)/2 = 2, v = 0 + (0 + 2*2)/2 = 2 > 1.5: spike, v = v_reset = 0
    # step 2: I = 2 - 2/2 = 1, v = 0 + (2*1 - 0)/2 = 1: no spike
    # step 3: I = 1/2, v = 1 + (2*0.5 - 1)/2 = 1: no spike
    z, v = spikes(one_neuron(4.0, 1.5), [1, 0, 0])
    assert z == [1, 0, 0]
    assert v.tolist() == [0.0, 1.0, 1.0]


def test_threshold_is_strict_in_nir_and_inclusive_when_a_device_says_so():
    # v reaches exactly 2.0 at step 1 (as above); NIR fires only above the threshold
    assert spikes(one_neuron(4.0, 2.0), [1, 0])[0] == [0, 0]
    assert spikes(one_neuron(4.0, 2.0), [1, 0], Semantics(fire_at_threshold=True))[0] == [1, 0]


def test_reset_by_subtraction_keeps_the_rest():
    # step 1: v = 2 -> spike, v = 2 - 1.5 = 0.5; step 2: I = 1, v = 0.5 + (2 - 0.5)/2 = 1.25
    z, v = spikes(one_neuron(4.0, 1.5), [1, 0], Semantics(reset="subtract"))
    assert z == [1, 0] and v.tolist() == [0.5, 1.25]


def test_several_spikes_per_step_up_to_the_limit():
    # v = 2 with threshold 0.5 is 4 spikes' worth; the limit of 3 leaves v = 2 - 3 * 0.5
    semantics = Semantics(reset="subtract", max_spikes_output=3)
    z, v = spikes(one_neuron(4.0, 0.5), [1], semantics)
    assert z == [3] and v.tolist() == [0.5]
    # the output limit applies to neurons feeding the Output, the hidden one to the others
    hidden_only = Semantics(reset="subtract", max_spikes_hidden=3)
    assert spikes(one_neuron(4.0, 0.5), [1], hidden_only)[0] == [1]


def two_layers():
    nodes = {"in": nir.Input(input_type={"input": np.array([1])}),
             "fc1": nir.Linear(weight=np.array([[4.0]], np.float32)),
             "lif1": cuba(1, DT, DT, 1.0, 0.5),  # dt/tau = 1: follows its input at once
             "fc2": nir.Linear(weight=np.array([[4.0]], np.float32)),
             "lif2": cuba(1, DT, DT, 1.0, 0.5),
             "out": nir.Output(output_type={"output": np.array([1])})}
    edges = [("in", "fc1"), ("fc1", "lif1"), ("lif1", "fc2"), ("fc2", "lif2"), ("lif2", "out")]
    return nir.NIRGraph(nodes=nodes, edges=edges)


def test_a_device_delay_moves_spikes_one_step_per_layer():
    raster = [1, 0, 0]
    assert spikes(two_layers(), raster, node="lif2")[0] == [1, 0, 0]
    delayed = Semantics(spike_delay_steps=1)
    assert spikes(two_layers(), raster, delayed, node="lif1")[0] == [1, 0, 0]
    assert spikes(two_layers(), raster, delayed, node="lif2")[0] == [0, 1, 0]
    run = run_reference(two_layers(), [np.array(raster, float).reshape(-1, 1)], DT, delayed)
    assert run.activity[0].connection_inputs["fc2"][:, 0].tolist() == [0, 1, 0]


def test_ties_go_to_the_lowest_class():
    assert predicted_classes(np.array([[0, 0, 0], [1, 3, 3], [2, 1, 0]])).tolist() == [0, 1, 0]


def test_what_it_cannot_run_is_refused_naming_the_node():
    graph = one_neuron(1.0, 1.0)
    graph.nodes["lif"] = nir.LIF(tau=np.ones(1), r=np.ones(1), v_leak=np.zeros(1),
                                 v_threshold=np.ones(1))
    with pytest.raises(NirFileError, match="'lif' is a LIF"):
        run_reference(graph, [np.zeros((2, 1))], DT)
    loop = two_layers()
    loop.edges = [*loop.edges, ("lif2", "fc1")]
    with pytest.raises(NirFileError, match="cycle"):
        run_reference(loop, [np.zeros((2, 1))], DT)
    with pytest.raises(NirFileError, match=r"sample 1: input of shape \(2, 3\)"):
        run_reference(one_neuron(1.0, 1.0), [np.zeros((2, 1)), np.zeros((2, 3))], DT)
    dangling = one_neuron(1.0, 1.0)
    dangling.edges = [e for e in dangling.edges if e != ("fc", "lif")]
    with pytest.raises(NirFileError, match=r"\['lif'\] receive no input"):
        run_reference(dangling, [np.zeros((2, 1))], DT)
    fast = one_neuron(1.0, 1.0)
    fast.nodes["lif"].tau_syn[:] = DT / 2
    with pytest.raises(NirFileError, match="'lif': tau_syn below the time step"):
        run_reference(fast, [np.zeros((2, 1))], DT)


def test_the_packaged_graph_on_the_packaged_samples():
    asc, samples = packaged_graph(), packaged_test_spikes()
    assert samples.rasters.shape == (80, asc.steps_per_sample, asc.input_channels)
    assert sorted(np.bincount(samples.labels).tolist()) == [20, 20, 20, 20]
    run = run_reference(asc.graph, samples.rasters[:20], asc.dt)
    again = run_reference(asc.graph, samples.rasters[:20], asc.dt, record=False)
    assert run.counts.shape == (20, 4) and np.array_equal(run.counts, again.counts)
    assert np.array_equal(run.predicted, predicted_classes(run.counts))
    act = run.activity[0]
    assert sorted(act.spikes) == ["lif1", "lif2", "lif3", "lif_out"]
    assert act.connection_inputs["fc1"].shape == (100, 16)
    assert np.array_equal(act.connection_inputs["fc1"], samples.rasters[0])
    # what the output layer emitted is what was counted
    assert np.array_equal(act.spikes["lif_out"].sum(axis=0), run.counts[0])
    assert not again.activity[0].spikes  # nothing kept when not asked
