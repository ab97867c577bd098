"""The NeuroBench algorithm-track metrics (Yik et al., Nature Communications 16, 2025, Methods;
quoted in shared/reference/nb-algorithm-metrics.md) for a NIR graph and recorded activity.

Each definition follows the paper and, where the paper leaves a choice, the ``neurobench``
package 2.3.0 (tests/complexity/test_neurobench_equality.py checks equality on the packaged ASC
graph):

- **footprint**: bytes of the graph's parameters (every array of every node, at its stored
  dtype) plus its buffers: the state a neuron keeps between steps (CubaLIF: synaptic current
  and membrane; LIF: membrane), one value per neuron in the dtype of its threshold.
- **connection sparsity**: zero weights / all weights of the connection nodes (``Linear``,
  ``Affine``, convolutions; biases are not weights).
- **activation sparsity**: zero activations / all activations over the neuron nodes' outputs,
  every time step and sample (the graph's input is not an activation).
- **synaptic operations**, per sample: *dense* = every weight × every input each step; the
  *effective* ones skip zero weights and zero inputs, and count as ACs in a step whose inputs to
  that node are all in {-1, 0, 1} and as MACs otherwise (NeuroBench decides per layer and call;
  hilbench runs batch 1, so a call is one sample's step). Biases are not synaptic operations.
- **neuron updates** (NeuroBench's ``MembraneUpdates``), per sample: every neuron at the first
  step, then each neuron whose membrane changed from one step to the next.

The activity is whatever ran: :class:`hilbench.nir.reference.SampleActivity` from the
reference, or a device's own recording put in the same shape (node name → steps × neurons).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hilbench.nir.graph import NirFileError
from hilbench.nir.reference import SampleActivity

CONNECTION_NODES = ("Linear", "Affine", "Conv1d", "Conv2d")
NEURON_STATE = {"CubaLIF": 2, "LIF": 1, "IF": 1, "CubaLI": 2, "LI": 1, "I": 1}
_NOT_PARAMETERS = ("input_type", "output_type", "metadata")


@dataclass(frozen=True)
class SynapticOperations:
    """Per sample (the mean over the samples run)."""

    dense: float
    effective_macs: float
    effective_acs: float


@dataclass(frozen=True)
class AlgorithmMetrics:
    footprint_bytes: int
    connection_sparsity: float
    activation_sparsity: float
    synaptic_operations: SynapticOperations
    neuron_updates: float  # per sample
    samples: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _arrays(node: Any) -> list[np.ndarray]:
    found = []
    for key, value in vars(node).items():
        if key in _NOT_PARAMETERS or value is None or isinstance(value, str | bytes | dict):
            continue
        a = np.asarray(value)
        if a.dtype.kind in "biuf":
            found.append(a)
    return found


def footprint_bytes(graph: Any) -> int:
    """Parameters (all arrays of all nodes) plus neuron state buffers, in bytes."""
    total = 0
    for name, node in graph.nodes.items():
        kind = type(node).__name__
        if kind in ("Input", "Output"):
            continue
        if kind == "NIRGraph":
            raise NirFileError(f"node {name!r} is a sub-graph; flatten it before measuring")
        total += sum(a.nbytes for a in _arrays(node))
        if kind in NEURON_STATE:
            threshold = np.asarray(getattr(node, "v_threshold", getattr(node, "r", 0.0)))
            total += NEURON_STATE[kind] * threshold.size * threshold.dtype.itemsize
    return int(total)


def connection_weights(graph: Any) -> dict[str, np.ndarray]:
    return {name: np.asarray(node.weight) for name, node in graph.nodes.items()
            if type(node).__name__ in CONNECTION_NODES}


def connection_sparsity(graph: Any) -> float:
    weights = connection_weights(graph).values()
    total = sum(w.size for w in weights)
    if total == 0:
        raise NirFileError("the graph has no connection weights")
    return float(sum(int(np.count_nonzero(w == 0)) for w in weights) / total)


def activation_sparsity(activity: Sequence[SampleActivity]) -> float:
    zeros = total = 0
    for sample in activity:
        for spikes in sample.spikes.values():
            zeros += int(np.count_nonzero(spikes == 0))
            total += spikes.size
    if total == 0:
        raise ValueError("no activations recorded: run at least one sample")
    return zeros / total


def synaptic_operations(graph: Any, activity: Sequence[SampleActivity]) -> SynapticOperations:
    weights = connection_weights(graph)
    for name, w in weights.items():
        if w.ndim != 2:
            raise NirFileError(f"node {name!r}: synaptic operations are counted for dense "
                               f"(2-D) weights here, this one has shape {w.shape}")
    dense = macs = acs = 0
    fan_out = {name: np.count_nonzero(w != 0, axis=0) for name, w in weights.items()}
    for sample in activity:
        for name, w in weights.items():
            x = sample.connection_inputs.get(name)
            if x is None:
                raise ValueError(f"no inputs recorded for connection node {name!r}")
            x = np.asarray(x).reshape(len(x), -1)
            effective = (x != 0).astype(np.int64) @ fan_out[name]  # per step
            binary = np.all((x == 0) | (x == 1) | (x == -1), axis=1)
            acs += int(effective[binary].sum())
            macs += int(effective[~binary].sum())
            dense += w.size * len(x)
    n = len(activity)
    if n == 0:
        raise ValueError("no samples: synaptic operations are a mean per sample")
    return SynapticOperations(dense / n, macs / n, acs / n)


def neuron_updates(activity: Sequence[SampleActivity]) -> float:
    if not activity:
        raise ValueError("no samples: neuron updates are a mean per sample")
    total = 0
    for sample in activity:
        for mem in sample.membrane.values():
            mem = np.asarray(mem).reshape(len(mem), -1)
            if len(mem):
                total += mem.shape[1] + int(np.count_nonzero(np.diff(mem, axis=0)))
    return total / len(activity)


def algorithm_metrics(graph: Any, activity: Sequence[SampleActivity]) -> AlgorithmMetrics:
    """All of the above for one run: ``graph`` as run, ``activity`` one entry per sample run."""
    return AlgorithmMetrics(
        footprint_bytes=footprint_bytes(graph),
        connection_sparsity=connection_sparsity(graph),
        activation_sparsity=activation_sparsity(activity),
        synaptic_operations=synaptic_operations(graph, activity),
        neuron_updates=neuron_updates(activity),
        samples=len(activity),
    )
