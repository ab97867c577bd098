"""The reference graph as an snnTorch network, for tests/complexity/test_neurobench_equality.py.

Its own module so that torch is imported by the one worker that runs the test, not by every
worker's collection (about 3 s of CPU each)."""

from __future__ import annotations

import numpy as np
import snntorch as snn
import torch


class InputScale(torch.nn.Module):
    def __init__(self, scale: np.ndarray) -> None:
        super().__init__()
        self.register_buffer("scale", torch.as_tensor(scale, dtype=torch.float32))

    def forward(self, x):
        return x * self.scale


class GraphAsSnnTorch(torch.nn.Module):
    """Linear → scale → Synaptic per (Linear, CubaLIF) pair of a chain graph."""

    def __init__(self, graph, dt: float, pairs) -> None:
        super().__init__()
        layers = []
        for fc, lif in pairs:
            w, n = graph.nodes[fc].weight, graph.nodes[lif]
            a_syn = (np.float32(dt) / n.tau_syn).astype(np.float64)
            a_mem = (np.float32(dt) / n.tau_mem).astype(np.float64)
            assert np.allclose(a_mem * n.r, 1) and not np.any(n.v_leak) and not np.any(n.v_reset)
            linear = torch.nn.Linear(w.shape[1], w.shape[0], bias=False)
            linear.weight.data = torch.as_tensor(w, dtype=torch.float32)
            layers += [linear, InputScale(a_syn * n.w_in),
                       snn.Synaptic(alpha=torch.as_tensor(1 - a_syn, dtype=torch.float32),
                                    beta=torch.as_tensor(1 - a_mem, dtype=torch.float32),
                                    threshold=torch.as_tensor(n.v_threshold, dtype=torch.float32),
                                    reset_mechanism="zero", reset_delay=False, init_hidden=True)]
        self.layers = torch.nn.Sequential(*layers)

    def reset(self) -> None:
        """SNNTorchModel calls this before each batch (snntorch.utils.reset looks only at a
        network's direct children, so it would miss these layers and carry state over)."""
        for layer in self.layers:
            if isinstance(layer, snn.Synaptic):
                layer.reset_mem()

    def forward(self, x):
        return self.layers(x), None
