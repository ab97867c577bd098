"""The reference execution of a NIR graph on the CPU: numpy, one sample at a time (batch 1).

Why our own small executor and not a library (measured on nir 1.0.8, nirtorch 2.6, snnTorch
1.0.0, Norse 1.1.0, torch 2.13.0+cpu; docs-notes/nir.md has the details):

- snnTorch's ``import_from_nir`` fixes the time step at 1e-4 s inside the importer
  (``dt = 1e-4`` in ``snntorch/import_nir.py``), needs one threshold for a whole layer and
  resets to zero only; the ASC graph steps at 10 ms, so snnTorch would run it 100 times too
  slowly unless the graph's time constants were rewritten — a different graph.
- nirtorch wires a graph but maps no neuron (every neuron model comes from the caller).
- Norse's ``from_nir(graph, dt=...)`` runs the graph as NIR defines it (per-neuron parameters,
  forward Euler, reset to ``v_reset``) and agrees with this executor spike for spike on the
  packaged samples (tests/nir/test_norse_crosscheck.py). It cannot be an extra: it declares
  torchvision, whose PyPI build beside a CPU torch either fails to import or drags in a CUDA
  torch, so CI installs it ``--no-deps`` as a cross-check only.
- A device path and the orchestrator must be able to run the reference without torch (the
  default set-up installs none), so the reference itself is numpy.

Only the primitives the packaged ASC graph uses are executed: ``Input``, ``Output``, ``Linear``
and ``CubaLIF``, in a feed-forward graph (anything else is refused naming the node). The
discretisation is forward Euler at the graph's ``dt``::

    I += dt/tau_syn * (-I + w_in * x)
    v += dt/tau_mem * (v_leak - v + r * I)
    z  = v > v_threshold ;  v = v_reset where z       (NIR 1.0's CubaLIF)

A device may run the same graph under other neuron conventions (Xylo Audio 2: up to 31 spikes
per step in hidden neurons, reset by subtraction, a one-step delay per layer). :class:`Semantics`
states such conventions explicitly so that the *difference* between the NIR definition and a
device can be measured and attributed; the default is NIR's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hilbench.nir.graph import NirFileError

SUPPORTED = ("Input", "Output", "Linear", "CubaLIF")


@dataclass(frozen=True)
class Semantics:
    """How a neuron turns membrane into spikes. The default is NIR 1.0's CubaLIF."""

    reset: str = "value"  # "value": v = v_reset on a spike; "subtract": v -= n * v_threshold
    fire_at_threshold: bool = False  # NIR: v > v_threshold; True: v >= v_threshold
    max_spikes_hidden: int = 1  # spikes a neuron feeding another node may emit in one step
    max_spikes_output: int = 1  # spikes a neuron feeding the Output may emit in one step
    spike_delay_steps: int = 0  # steps before a neuron's spikes reach the next node

    def __post_init__(self) -> None:
        if self.reset not in ("value", "subtract"):
            raise ValueError(f"reset must be 'value' or 'subtract', got {self.reset!r}")
        if self.max_spikes_hidden < 1 or self.max_spikes_output < 1:
            raise ValueError("at most 0 spikes per step would silence the network")
        if self.spike_delay_steps < 0:
            raise ValueError("a spike cannot arrive before it is sent")

    def to_dict(self) -> dict[str, Any]:
        return dict(vars(self))


NIR_SEMANTICS = Semantics()


@dataclass
class SampleActivity:
    """What one sample did inside the graph, keyed by node name (for the complexity metrics).

    ``connection_inputs[node]``: (T, n_in) the values a connection node (``Linear``) received
    each step; ``spikes[node]``: (T, N) spikes a neuron node emitted; ``membrane[node]``: (T, N)
    its membrane potential after the step (after any reset)."""

    connection_inputs: dict[str, np.ndarray] = field(default_factory=dict)
    spikes: dict[str, np.ndarray] = field(default_factory=dict)
    membrane: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class ReferenceRun:
    """Output spike counts per sample and output neuron, the predicted class per sample (the
    output neuron with the most spikes; the lowest index on a tie), and what happened inside."""

    counts: np.ndarray  # (samples, outputs) int64
    predicted: np.ndarray  # (samples,) int64
    activity: list[SampleActivity]
    semantics: Semantics
    dt: float


def predicted_classes(counts: np.ndarray) -> np.ndarray:
    """Class per sample = output neuron with the most spikes, lowest index on ties (as Xylo)."""
    return np.argmax(np.asarray(counts), axis=1).astype(np.int64)


class _Neuron:
    def __init__(self, name: str, node: Any, dt: float) -> None:
        raw = {k: np.asarray(getattr(node, k)) for k in
               ("tau_syn", "tau_mem", "r", "v_leak", "v_threshold", "v_reset", "w_in")}
        for key in ("tau_syn", "tau_mem"):
            if np.any(raw[key] < np.asarray(dt, dtype=raw[key].dtype)):
                raise NirFileError(f"node {name!r}: {key} below the time step {dt} s makes "
                                   "forward Euler unstable")
        # dt / tau in the graph's own precision: a float32 tau of dt * 2**d then gives exactly
        # 2**-d (power-of-two scaling is exact), as a float64 one does
        self.a_syn = (np.asarray(dt, dtype=raw["tau_syn"].dtype) / raw["tau_syn"]).astype(float)
        self.a_mem = (np.asarray(dt, dtype=raw["tau_mem"].dtype) / raw["tau_mem"]).astype(float)
        p = {k: v.astype(np.float64) for k, v in raw.items()}
        self.p = p
        self.size = p["v_threshold"].size

    def step(self, x: np.ndarray, state: tuple[np.ndarray, np.ndarray], semantics: Semantics,
             limit: int) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        i, v = state
        p = self.p
        i = i + self.a_syn * (p["w_in"] * x - i)
        v = v + self.a_mem * (p["v_leak"] - v + p["r"] * i)
        thr = p["v_threshold"]
        fire = v >= thr if semantics.fire_at_threshold else v > thr
        if limit > 1:
            with np.errstate(divide="ignore", invalid="ignore"):
                n = np.where(fire, np.clip(np.floor(v / thr), 1, limit), 0.0)
        else:
            n = fire.astype(np.float64)
        v = v - n * thr if semantics.reset == "subtract" else np.where(fire, p["v_reset"], v)
        return n, (i, v)


class ReferenceExecutor:
    """A checked, ordered plan for one graph; :meth:`run` executes samples through it."""

    def __init__(self, graph: Any, dt: float, semantics: Semantics = NIR_SEMANTICS) -> None:
        if not dt > 0:
            raise NirFileError(f"time step must be positive, got {dt}")
        self.dt = float(dt)
        self.semantics = semantics
        self.nodes = dict(graph.nodes)
        for name, node in self.nodes.items():
            kind = type(node).__name__
            if kind not in SUPPORTED:
                raise NirFileError(f"node {name!r} is a {kind}; the reference executor runs "
                                   f"{', '.join(SUPPORTED)} only")
        self.parents: dict[str, list[str]] = {name: [] for name in self.nodes}
        for src, dst in graph.edges:
            self.parents[dst].append(src)
        inputs = [n for n, node in self.nodes.items() if type(node).__name__ == "Input"]
        outputs = [n for n, node in self.nodes.items() if type(node).__name__ == "Output"]
        if len(inputs) != 1 or len(outputs) != 1:
            raise NirFileError(f"the graph needs one Input and one Output node, has "
                               f"{len(inputs)} and {len(outputs)}")
        self.input, self.output = inputs[0], outputs[0]
        orphans = sorted(n for n, p in self.parents.items() if not p and n != self.input)
        if orphans:
            raise NirFileError(f"nodes {orphans} receive no input; every node but the Input "
                               "needs an edge into it")
        self.order = _topological(self.nodes, graph.edges)
        self.neurons = {n: _Neuron(n, node, self.dt) for n, node in self.nodes.items()
                        if type(node).__name__ == "CubaLIF"}
        feeds_output = {src for src, dst in graph.edges if dst == self.output}
        self.limit = {n: semantics.max_spikes_output if n in feeds_output
                      else semantics.max_spikes_hidden for n in self.neurons}
        self.weights = {n: np.asarray(node.weight, dtype=np.float64)
                        for n, node in self.nodes.items() if type(node).__name__ == "Linear"}
        self.input_size = int(np.prod(self.nodes[self.input].input_type["input"]))

    def run(self, rasters: Iterable[np.ndarray], record: bool = True) -> ReferenceRun:
        counts, activity = [], []
        for k, raster in enumerate(rasters):
            out, act = self.run_sample(np.asarray(raster, dtype=np.float64), record, k)
            counts.append(out.sum(axis=0))
            activity.append(act)
        counts_arr = np.rint(np.asarray(counts)).astype(np.int64).reshape(len(counts), -1)
        return ReferenceRun(counts_arr, predicted_classes(counts_arr), activity,
                            self.semantics, self.dt)

    # complexity: the executor's time loop: one pass over the graph per step, as NIR defines it
    def run_sample(self, raster: np.ndarray, record: bool = True,  # noqa: C901
                   index: int = 0) -> tuple[np.ndarray, SampleActivity]:
        if raster.ndim != 2 or raster.shape[1] != self.input_size:
            raise NirFileError(f"sample {index}: input of shape {raster.shape}; the graph takes "
                               f"(steps, {self.input_size})")
        steps = raster.shape[0]
        delay = self.semantics.spike_delay_steps
        state = {n: (np.zeros(u.size), np.zeros(u.size)) for n, u in self.neurons.items()}
        pending = {n: [np.zeros(u.size)] * delay for n, u in self.neurons.items()}
        act = SampleActivity()
        if record:
            act.connection_inputs = {n: np.zeros((steps, w.shape[1]))
                                     for n, w in self.weights.items()}
            act.spikes = {n: np.zeros((steps, u.size)) for n, u in self.neurons.items()}
            act.membrane = {n: np.zeros((steps, u.size)) for n, u in self.neurons.items()}
        output = []
        for t in range(steps):
            value: dict[str, np.ndarray] = {self.input: raster[t]}
            sent: dict[str, np.ndarray] = {}  # what a neuron's successors see this step
            for name in self.order:
                if name == self.input:
                    continue
                x = sum(sent.get(p, value[p]) for p in self.parents[name])
                if name in self.weights:
                    if record:
                        act.connection_inputs[name][t] = x
                    value[name] = self.weights[name] @ x
                elif name in self.neurons:
                    z, state[name] = self.neurons[name].step(x, state[name], self.semantics,
                                                             self.limit[name])
                    value[name] = z
                    if delay:
                        pending[name].append(z)
                        sent[name] = pending[name].pop(0)
                    if record:
                        act.spikes[name][t] = z
                        act.membrane[name][t] = state[name][1]
                else:  # Output: the spikes of the step, undelayed
                    value[name] = sum(value[p] for p in self.parents[name])
            output.append(value[self.output])
        return np.asarray(output), act


def run_reference(graph: Any, rasters: Sequence[np.ndarray] | np.ndarray, dt: float,
                  semantics: Semantics = NIR_SEMANTICS, record: bool = True) -> ReferenceRun:
    """Run input rasters (samples, steps, channels) through ``graph``: spike counts per output
    neuron, predicted classes, and (``record``) each sample's activity for the metrics."""
    return ReferenceExecutor(graph, dt, semantics).run(rasters, record=record)


def _topological(nodes: dict[str, Any], edges: Sequence[tuple[str, str]]) -> list[str]:
    incoming = {n: 0 for n in nodes}
    for src, dst in edges:
        if src not in nodes or dst not in nodes:
            raise NirFileError(f"edge ({src!r}, {dst!r}) names a node the graph lacks")
        incoming[dst] += 1
    ready = sorted(n for n, k in incoming.items() if k == 0)
    order: list[str] = []
    while ready:
        name = ready.pop(0)
        order.append(name)
        for src, dst in edges:
            if src == name:
                incoming[dst] -= 1
                if incoming[dst] == 0:
                    ready.append(dst)
    if len(order) != len(nodes):
        loop = sorted(n for n, k in incoming.items() if k > 0)
        raise NirFileError(f"the graph has a cycle through {loop}; the reference executor runs "
                           "feed-forward graphs only")
    return order
