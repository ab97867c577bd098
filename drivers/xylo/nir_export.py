"""A Xylo Audio 2 network file written as a NIR graph (``nir`` 1.0.x), for the closed category:
one graph that every device runs and the CPU executes as the reference.

The graph is the network the chip runs — the quantised integer weights and bit-shift decays of
the ``.npz`` — in NIR's CubaLIF terms, layer by layer as the trainer built it (16 inputs → the
hidden layers of ``info["hidden"]`` → the readout). With ``d`` = ``dash_syn``, ``m`` =
``dash_mem`` and the network's time step ``dt``::

    tau_syn = dt * 2**d    w_in = 2**d - 1    (Xylo decays the current after adding the input)
    tau_mem = dt * 2**m    r    = 2**m        v_leak = bias * 2**m    v_threshold = threshold

so that NIR's equations, stepped by forward Euler at ``dt``, are the chip's update without its
integer rounding: ``I = (1 - 2**-d) (I + W x)``, ``v = (1 - 2**-m) v + I + bias``. What NIR 1.0
cannot say about the chip — a hidden neuron may fire up to 31 spikes in a step and is reset by
subtraction, and each layer's spikes reach the next layer one step later — is
:data:`XYLO_SEMANTICS`, used to attribute the difference between the NIR reference and XyloSim.

The input the graph expects (the AFE's spike counts per 10 ms, its settings, the audio scaling)
and the classes travel in the graph's ``hilbench`` metadata (:mod:`hilbench.nir.graph`).
"""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from hilbench.nir.graph import NirFileError, require_nir, with_hilbench_metadata, write_graph
from hilbench.nir.reference import Semantics
from hilbench_drivers.xylo.network import (
    MAX_INPUT_EVENTS_PER_STEP,
    SPEC_SCALARS,
    XyloNetwork,
)

GRAPH_FORMAT = "hilbench.nir.asc-snn"
GRAPH_FORMAT_VERSION = 1
MAX_HIDDEN_SPIKES_PER_STEP = 31  # XyloSim: a hidden neuron's spikes per step saturate at 31
XYLO_SEMANTICS = Semantics(reset="subtract", fire_at_threshold=True,
                           max_spikes_hidden=MAX_HIDDEN_SPIKES_PER_STEP, max_spikes_output=1,
                           spike_delay_steps=1)


def layer_slices(network: XyloNetwork) -> list[slice]:
    """The hidden neurons of each layer, from ``info["hidden"]``, checked against the weights:
    input weights only into the first layer, recurrent weights only from a layer to the next,
    output weights only from the last. Anything else has no feed-forward NIR form here."""
    sizes = network.info.get("hidden")
    if not isinstance(sizes, list) or not sizes or sum(int(s) for s in sizes) != network.hidden:
        raise NirFileError(f"info['hidden'] = {sizes!r} does not give the layer sizes of the "
                           f"{network.hidden} hidden neurons")
    bounds = np.cumsum([0, *map(int, sizes)])
    layers = [slice(int(a), int(b)) for a, b in pairwise(bounds)]
    allowed_rec = np.zeros((network.hidden, network.hidden), bool)
    for src, dst in pairwise(layers):
        allowed_rec[src, dst] = True
    spec = network.spec
    if spec["weights_in"].shape[2] != 1 or spec["weights_rec"].shape[2] != 1:
        raise NirFileError("the network uses Xylo's second synapse per neuron, which a NIR "
                           "CubaLIF (one synaptic current) cannot express")
    checks = (
        ("weights_in", spec["weights_in"][:, :, 0] != 0,
         np.arange(network.hidden)[None, :] < layers[0].stop),
        ("weights_rec", spec["weights_rec"][:, :, 0] != 0, allowed_rec),
        ("weights_out", spec["weights_out"] != 0,
         (np.arange(network.hidden) >= layers[-1].start)[:, None]),
    )
    for name, nonzero, allowed in checks:
        if np.any(nonzero & ~allowed):
            raise NirFileError(f"{name} connects neurons outside the layer-to-next-layer pattern "
                               f"of info['hidden'] = {sizes}; not a feed-forward network")
    if any(network.aliases):
        raise NirFileError("the network uses aliases (fan-out neurons), which the NIR export "
                           "does not express")
    return layers


def _neuron(nir: Any, network: XyloNetwork, dash_syn: np.ndarray, dash_mem: np.ndarray,
            bias: np.ndarray, threshold: np.ndarray) -> Any:
    dt = np.float32(network.dt)
    d = dash_syn.astype(np.int64)
    m = dash_mem.astype(np.int64)
    two_d, two_m = (2.0 ** d).astype(np.float32), (2.0 ** m).astype(np.float32)
    return nir.CubaLIF(
        tau_syn=dt * two_d, tau_mem=dt * two_m, r=two_m,
        v_leak=bias.astype(np.float32) * two_m,
        v_threshold=threshold.astype(np.float32),
        v_reset=np.zeros(threshold.shape, np.float32),
        w_in=two_d - np.float32(1.0),
    )


def graph_metadata(network: XyloNetwork) -> dict[str, Any]:
    """What a device or the reference needs besides the graph: the input, time step, classes."""
    return {
        "format": GRAPH_FORMAT, "version": GRAPH_FORMAT_VERSION, "task": "asc",
        "classes": list(network.classes), "dt": network.dt,
        "steps_per_sample": network.steps_per_sample,
        "readout": "class = the output neuron with the most spikes over the sample "
                   "(lowest index on a tie)",
        "discretisation": "forward Euler at dt (see hilbench.nir.reference)",
        "input": {
            "kind": "spike counts per time step and channel",
            "channels": network.inputs, "dt": network.dt,
            "max_per_step": MAX_INPUT_EVENTS_PER_STEP,
            "sample_rate": network.sample_rate, "sample_seconds": 1.0,
            "front_end": "Xylo Audio 2 analog front end as simulated by Rockpool's AFESim "
                         "(syns65300.afe_sim): each 1 s sample resampled to afe.fs, scaled to "
                         "afe.input_rms_v RMS, its events summed per dt and clipped to "
                         "max_per_step (hilbench_drivers.xylo.afe.HostFrontEnd)",
            "afe": network.afe.to_dict(),
        },
        "source": {"format": "hilbench.xylo.snn", "sha256": network.sha256,
                   "quantised": "int8 weights, bit-shift decays (Rockpool global_quantize)"},
    }


def export_graph(network: XyloNetwork) -> Any:
    """The ``nir.NIRGraph`` of a Xylo network (see the module docstring)."""
    nir = require_nir()
    layers = layer_slices(network)
    spec = network.spec
    shifts = {k: int(network.weight_shifts[k]) for k in SPEC_SCALARS}
    if any(shifts.values()):
        scale = {k: float(2 ** v) for k, v in shifts.items()}
    else:
        scale = dict.fromkeys(shifts, 1.0)
    nodes: dict[str, Any] = {"input": nir.Input(input_type={"input": np.array([network.inputs])})}
    edges: list[tuple[str, str]] = []
    previous = "input"
    for k, cut in enumerate(layers, start=1):
        if k == 1:
            weight = spec["weights_in"][:, cut, 0] * scale["weight_shift_in"]
        else:
            weight = spec["weights_rec"][layers[k - 2], cut, 0] * scale["weight_shift_rec"]
        nodes[f"fc{k}"] = nir.Linear(weight=np.ascontiguousarray(weight.T, dtype=np.float32))
        nodes[f"lif{k}"] = _neuron(nir, network, spec["dash_syn"][cut], spec["dash_mem"][cut],
                                   spec["bias"][cut], spec["threshold"][cut])
        edges += [(previous, f"fc{k}"), (f"fc{k}", f"lif{k}")]
        previous = f"lif{k}"
    weight = spec["weights_out"][layers[-1], :] * scale["weight_shift_out"]
    nodes["fc_out"] = nir.Linear(weight=np.ascontiguousarray(weight.T, dtype=np.float32))
    nodes["lif_out"] = _neuron(nir, network, spec["dash_syn_out"], spec["dash_mem_out"],
                               spec["bias_out"], spec["threshold_out"])
    nodes["output"] = nir.Output(output_type={"output": np.array([network.outputs])})
    edges += [(previous, "fc_out"), ("fc_out", "lif_out"), ("lif_out", "output")]
    return nir.NIRGraph(nodes=nodes, edges=edges,
                        metadata=with_hilbench_metadata(graph_metadata(network)))


def export_file(network_path: str | Path, out: str | Path) -> Path:
    """Read a Xylo network file and write its NIR graph to ``out``."""
    return write_graph(export_graph(XyloNetwork.load(network_path)), out)
