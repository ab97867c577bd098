"""The algorithm-track metrics and the modelled energy on a 3-layer toy network whose every value
is worked out by hand below (the definitions: hilbench/complexity/metrics.py)."""

from __future__ import annotations

import numpy as np
import pytest

nir = pytest.importorskip("nir")

from hilbench.complexity import EnergyModel, algorithm_metrics, modelled_energy  # noqa: E402
from hilbench.complexity.energy import measured_to_modelled  # noqa: E402
from hilbench.complexity.metrics import (  # noqa: E402
    connection_sparsity,
    footprint_bytes,
    synaptic_operations,
)
from hilbench.nir.reference import SampleActivity, run_reference  # noqa: E402

W1 = np.array([[1, 0], [0, 2], [3, -1]], np.float32)  # 2 zeros of 6; fan-out per input: 2, 2
W2 = np.array([[1, 0, 0], [0, 0, 1]], np.float32)  # 4 zeros of 6; fan-out: 1, 0, 1
W3 = np.array([[0, 1], [1, 1]], np.float32)  # 1 zero of 4; fan-out: 1, 2


def cuba(n):
    one = np.ones(n, np.float32)
    return nir.CubaLIF(tau_syn=0.02 * one, tau_mem=0.02 * one, r=2 * one, v_leak=0 * one,
                       v_threshold=one, w_in=one)


def toy_graph():
    nodes = {"in": nir.Input(input_type={"input": np.array([2])}),
             "fc1": nir.Linear(weight=W1), "lif1": cuba(3),
             "fc2": nir.Linear(weight=W2), "lif2": cuba(2),
             "fc3": nir.Linear(weight=W3), "lif3": cuba(2),
             "out": nir.Output(output_type={"output": np.array([2])})}
    edges = [("in", "fc1"), ("fc1", "lif1"), ("lif1", "fc2"), ("fc2", "lif2"),
             ("lif2", "fc3"), ("fc3", "lif3"), ("lif3", "out")]
    return nir.NIRGraph(nodes=nodes, edges=edges)


def toy_activity():
    """Two samples of two steps. A: input [1, 0] then [2, 1]; B: silence."""
    a = SampleActivity(
        connection_inputs={"fc1": np.array([[1, 0], [2, 1]]),
                           "fc2": np.array([[1, 0, 1], [0, 0, 0]]),
                           "fc3": np.array([[1, 0], [0, 0]])},
        spikes={"lif1": np.array([[1, 0, 1], [0, 0, 0]]), "lif2": np.array([[1, 0], [0, 0]]),
                "lif3": np.array([[0, 1], [0, 0]])},
        membrane={"lif1": np.array([[0, 0, 0], [0.5, 0, 0.2]]),
                  "lif2": np.array([[0, 0.3], [0.1, 0.3]]),
                  "lif3": np.array([[0.7, 0], [0.7, 0]])})
    b = SampleActivity(
        connection_inputs={"fc1": np.zeros((2, 2)), "fc2": np.zeros((2, 3)),
                           "fc3": np.zeros((2, 2))},
        spikes={"lif1": np.zeros((2, 3)), "lif2": np.zeros((2, 2)), "lif3": np.zeros((2, 2))},
        membrane={"lif1": np.zeros((2, 3)), "lif2": np.zeros((2, 2)), "lif3": np.zeros((2, 2))})
    return [a, b]


def test_the_toy_network_by_hand():
    m = algorithm_metrics(toy_graph(), toy_activity())
    # weights: 16 float32 = 64 B; CubaLIF: 7 arrays of 7 neurons in float32 = 196 B;
    # state: current and membrane of 7 neurons = 56 B
    assert m.footprint_bytes == 64 + 196 + 56
    assert m.connection_sparsity == 7 / 16
    # 28 activations (7 neurons x 2 steps x 2 samples), 4 of them spikes (A at its first step)
    assert m.activation_sparsity == pytest.approx(24 / 28)
    # dense: 16 weights x 2 steps per sample. A: fc1 [1, 0] -> 2 ACs, fc1 [2, 1] -> 4 MACs
    # (a 2 is not binary), fc2 [1, 0, 1] -> 1 + 1 ACs, fc3 [1, 0] -> 1 AC; B: none
    ops = m.synaptic_operations
    assert (ops.dense, ops.effective_macs, ops.effective_acs) == (32, 4 / 2, 5 / 2)
    # updates: every neuron at the first step (7 per sample), then the changed membranes of A:
    # lif1 2, lif2 1, lif3 0 -> (7 + 3 + 7) / 2
    assert m.neuron_updates == 17 / 2
    assert m.samples == 2
    assert m.to_dict()["synaptic_operations"]["dense"] == 32


def test_modelled_energy_is_ops_times_the_45nm_figures_and_says_modelled():
    ops = algorithm_metrics(toy_graph(), toy_activity()).synaptic_operations
    e = modelled_energy(ops)
    assert e.energy_j == pytest.approx(2 * 4.6e-12 + 2.5 * 0.9e-12)  # 11.45 pJ
    assert e.label == "modelled" and "45 nm" in e.model.source
    assert e.to_dict()["label"] == "modelled"
    own = modelled_energy(ops, EnergyModel(e_mac_j=1e-12, e_ac_j=0.0, source="our 22 nm"))
    assert own.energy_j == pytest.approx(2e-12) and own.to_dict()["source"] == "our 22 nm"
    assert measured_to_modelled(22.9e-12, e) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="must be >= 0"):
        EnergyModel(e_mac_j=-1.0)


def test_a_spike_count_above_one_is_a_mac_input_and_still_one_activation():
    graph = toy_graph()
    act = toy_activity()[:1]
    act[0].connection_inputs["fc2"] = np.array([[2, 0, 0], [0, 0, 0]])  # a neuron fired twice
    act[0].spikes["lif1"] = np.array([[2, 0, 0], [0, 0, 0]])
    ops = synaptic_operations(graph, act)
    assert (ops.effective_macs, ops.effective_acs) == (4 + 1, 2 + 1)
    assert algorithm_metrics(graph, act).activation_sparsity == pytest.approx(11 / 14)


def test_metrics_of_a_reference_run_use_what_ran():
    graph = toy_graph()
    rasters = np.array([[[3, 0], [0, 0], [0, 1]], [[0, 0], [0, 0], [0, 0]]], float)
    run = run_reference(graph, rasters, 0.01)
    m = algorithm_metrics(graph, run.activity)
    assert m.samples == 2 and m.synaptic_operations.dense == 16 * 3
    # only the first step's input of 3 is not binary: 2 MACs on fc1's column 0, over 2 samples
    assert m.synaptic_operations.effective_macs == 2 / 2
    assert m.synaptic_operations.effective_acs > 0  # the spikes downstream, all binary
    assert footprint_bytes(graph) == 316 and connection_sparsity(graph) == 7 / 16


def test_nothing_run_is_an_error_not_a_zero():
    with pytest.raises(ValueError, match="no samples"):
        synaptic_operations(toy_graph(), [])
    with pytest.raises(ValueError, match="no activations"):
        algorithm_metrics(toy_graph(), [SampleActivity()])
