"""hilbench's algorithm-track metrics equal the ``neurobench`` package's (2.3.0) on the
reference model: the packaged ASC graph, run as an snnTorch network by NeuroBench's own
``Benchmark`` (hooks on the Linear and spiking layers, batch 1) and by hilbench's reference.

The snnTorch network is the graph itself: each ``Linear`` with the graph's weights, a per-neuron
input scale dt/tau_syn * w_in, and an ``snn.Synaptic`` with alpha = 1 - dt/tau_syn,
beta = 1 - dt/tau_mem, the graph's thresholds, reset to zero at once — NIR's forward-Euler
CubaLIF (snnTorch's own NIR importer cannot be used: it fixes dt at 1e-4 s).

Footprint is left out on purpose: NeuroBench counts the torch module's parameters and buffers,
and an snnTorch layer keeps other buffers (alpha, beta, threshold, graded_spikes_factor, the
reset mechanism) than a NIR CubaLIF has arrays, so the two describe different representations
of the same model; docs-notes/nir.md gives both figures.
"""

from __future__ import annotations

import numpy as np
import pytest

SAMPLES = 6  # NeuroBench deep-copies each layer per step: about 2 s a sample


@pytest.mark.slow
def test_hilbench_metrics_equal_neurobenchs_on_the_reference_model():
    # imported here, not at collection: torch costs every collecting worker about 3 s
    pytest.importorskip("nir")
    torch = pytest.importorskip("torch")
    pytest.importorskip("snntorch")
    pytest.importorskip("neurobench")
    from neurobench.benchmarks import Benchmark
    from neurobench.metrics.static import ConnectionSparsity
    from neurobench.metrics.workload import ActivationSparsity, MembraneUpdates, SynapticOperations
    from neurobench.models import SNNTorchModel

    from hilbench.complexity import algorithm_metrics
    from hilbench.nir.reference import run_reference
    from hilbench.workloads.asc.nir.graph import packaged_graph, packaged_test_spikes
    from tests.complexity.snntorch_graph import GraphAsSnnTorch

    asc, samples = packaged_graph(), packaged_test_spikes()
    pick = np.concatenate([np.flatnonzero(samples.labels == 3)[:SAMPLES // 2],
                           np.flatnonzero(samples.labels != 3)[:SAMPLES - SAMPLES // 2]])
    rasters = samples.rasters[pick].astype(np.float32)
    pairs = [("fc1", "lif1"), ("fc2", "lif2"), ("fc3", "lif3"), ("fc_out", "lif_out")]
    net = GraphAsSnnTorch(asc.graph, asc.dt, pairs)
    data = torch.utils.data.TensorDataset(torch.as_tensor(rasters),
                                          torch.as_tensor(samples.labels[pick]))
    loader = torch.utils.data.DataLoader(data, batch_size=1, shuffle=False)
    bench = Benchmark(SNNTorchModel(net), loader, [], [],
                      [[ConnectionSparsity], [ActivationSparsity, SynapticOperations,
                                              MembraneUpdates]])
    nb = bench.run(quiet=True)

    run = run_reference(asc.graph, rasters, asc.dt)
    ours = algorithm_metrics(asc.graph, run.activity)
    ops = ours.synaptic_operations
    assert ops.effective_acs > 0 and ops.effective_macs > 0  # both kinds occur
    assert nb["ConnectionSparsity"] == round(ours.connection_sparsity, 4)
    assert nb["ActivationSparsity"] == pytest.approx(ours.activation_sparsity, rel=1e-12)
    assert nb["SynapticOperations"] == {"Effective_MACs": ops.effective_macs,
                                        "Effective_ACs": ops.effective_acs, "Dense": ops.dense}
    assert nb["MembraneUpdates"] == ours.neuron_updates
