"""A NIR graph onto Xylo Audio 2: the inverse of :mod:`hilbench_drivers.xylo.nir_export`.

Why not Rockpool's ``rockpool.nn.modules.from_nir`` (measured with Rockpool 2.8, nirtorch 2.6,
torch 2.13.0+cpu in a side environment; docs-notes/nir.md): without torch the name imports as a
stub that raises "Missing the `nir, nirtorch, torch` backend" when called, and torch would add
about 750 MB to ``.venv-xylo``. With torch it builds ``LIFTorch`` modules whose time step it
derives as ``min(tau_mem / (1 + r))`` — 8 ms for the packaged graph, whose step is 10 ms — and
goes through the float mapper and ``global_quantize`` again. On the packaged graph that still
lands on the same chip configuration (XyloSim output identical on all 80 samples), but only
because ``round(log2(tau / 8 ms))`` happens to equal ``log2(tau / 10 ms)`` for these time
constants. The graph already holds the Xylo network (integer weights, time constants that are
``dt`` times powers of two), so this maps it straight back to the specification that
``XyloSim.from_specification`` and the HDK take, exactly, without torch, and refuses what the
chip cannot run with the node and key named.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hilbench.nir.graph import NirFileError
from hilbench.workloads.asc.nir.graph import AscGraph
from hilbench_drivers.xylo.network import (
    MAX_HIDDEN_NEURONS,
    MAX_INPUT_CHANNELS,
    MAX_OUTPUT_NEURONS,
    AfeSettings,
    XyloNetwork,
)

MAX_DASH = 15  # 4-bit bit-shift decay fields


def _chain(graph: Any) -> list[tuple[str, str]]:
    """(Linear, CubaLIF) name pairs from the Input to the Output, or an error saying where the
    graph leaves that shape."""
    succ: dict[str, list[str]] = {}
    for src, dst in graph.edges:
        succ.setdefault(src, []).append(dst)
    kinds = {name: type(node).__name__ for name, node in graph.nodes.items()}
    inputs = [n for n, k in kinds.items() if k == "Input"]
    if len(inputs) != 1:
        raise NirFileError(f"Xylo takes a graph with one Input node, this has {len(inputs)}")
    pairs, here, seen = [], inputs[0], set()
    while kinds[here] != "Output":
        nxt = succ.get(here, [])
        if len(nxt) != 1:
            raise NirFileError(f"node {here!r} feeds {len(nxt)} nodes; Xylo maps a chain "
                               "Input → (Linear → CubaLIF)… → Output")
        linear = nxt[0]
        if kinds[linear] == "Output" and kinds[here] == "CubaLIF":
            break
        after = succ.get(linear, [])
        if kinds[linear] != "Linear" or len(after) != 1 or kinds[after[0]] != "CubaLIF":
            raise NirFileError(f"after node {here!r} comes {linear!r} ({kinds[linear]}); Xylo maps "
                               "a chain of Linear → CubaLIF pairs")
        if after[0] in seen:
            raise NirFileError(f"node {after[0]!r} closes a loop; Xylo maps a feed-forward chain")
        seen.add(after[0])
        pairs.append((linear, after[0]))
        here = after[0]
    if len(pairs) < 2:
        raise NirFileError("Xylo needs at least one hidden layer and a readout layer")
    return pairs


def _integers(name: str, key: str, values: Any, low: int, high: int) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    rounded = np.rint(a)
    if np.any(np.abs(a - rounded) > 1e-6) or rounded.min() < low or rounded.max() > high:
        raise NirFileError(f"node {name!r}: {key} must be integers in {low}..{high} for Xylo "
                           f"(got {a.min():g}..{a.max():g}); quantise the network first")
    return rounded.astype(np.int64)


def _dash(name: str, key: str, tau: Any, dt: float) -> np.ndarray:
    ratio = np.asarray(tau, dtype=np.float64) / dt
    dash = np.log2(np.maximum(ratio, 1e-12))
    rounded = np.rint(dash)
    if np.any(np.abs(dash - rounded) > 1e-4) or rounded.min() < 0 or rounded.max() > MAX_DASH:
        raise NirFileError(f"node {name!r}: {key} / dt must be a power of two 2**0..2**{MAX_DASH} "
                           f"(Xylo decays by bit shifts); got {ratio.min():g}..{ratio.max():g}")
    return rounded.astype(np.int64)


def _neuron(name: str, node: Any, dt: float) -> dict[str, np.ndarray]:
    d = _dash(name, "tau_syn", node.tau_syn, dt)
    m = _dash(name, "tau_mem", node.tau_mem, dt)
    checks = (("w_in", node.w_in, 2.0 ** d - 1, "2**d - 1 with d = log2(tau_syn/dt)"),
              ("r", node.r, 2.0 ** m, "2**m with m = log2(tau_mem/dt)"),
              ("v_reset", node.v_reset, np.zeros(d.shape), "0"))
    for key, got, want, rule in checks:
        if not np.allclose(np.asarray(got, dtype=np.float64), want, rtol=0, atol=1e-6):
            raise NirFileError(f"node {name!r}: {key} must be {rule} to run on Xylo")
    return {"dash_syn": d, "dash_mem": m,
            "bias": _integers(name, "v_leak / 2**m (bias)",
                              np.asarray(node.v_leak, dtype=np.float64) / 2.0 ** m,
                              -(2 ** 15), 2 ** 15 - 1),
            "threshold": _integers(name, "v_threshold", node.v_threshold, -(2 ** 15),
                                   2 ** 15 - 1)}


def import_graph(asc: AscGraph) -> XyloNetwork:
    """The Xylo Audio 2 network of an ASC NIR graph (checked: fits the chip, integer weights)."""
    graph, dt = asc.graph, asc.dt
    pairs = _chain(graph)
    weights = [_integers(lin, "weight", graph.nodes[lin].weight, -128, 127) for lin, _ in pairs]
    neurons = [_neuron(lif, graph.nodes[lif], dt) for _, lif in pairs]
    sizes = [w.shape[0] for w in weights]
    hidden, n_in, n_out = sum(sizes[:-1]), weights[0].shape[1], sizes[-1]
    for k in range(1, len(weights)):
        if weights[k].shape[1] != sizes[k - 1]:
            raise NirFileError(f"node {pairs[k][0]!r}: weight takes {weights[k].shape[1]} inputs, "
                               f"the layer before has {sizes[k - 1]} neurons")
    if n_in > MAX_INPUT_CHANNELS or hidden > MAX_HIDDEN_NEURONS or n_out > MAX_OUTPUT_NEURONS:
        raise NirFileError(f"{n_in} inputs, {hidden} hidden and {n_out} output neurons; Xylo "
                           f"Audio 2 has {MAX_INPUT_CHANNELS}, {MAX_HIDDEN_NEURONS} and "
                           f"{MAX_OUTPUT_NEURONS}")
    bounds = np.cumsum([0, *sizes[:-1]])
    w_in = np.zeros((n_in, hidden, 1), np.int64)
    w_rec = np.zeros((hidden, hidden, 1), np.int64)
    w_in[:, : sizes[0], 0] = weights[0].T
    for k in range(1, len(sizes) - 1):
        w_rec[bounds[k - 1]:bounds[k], bounds[k]:bounds[k + 1], 0] = weights[k].T
    w_out = weights[-1].T.copy()
    if len(sizes) > 1:
        padded = np.zeros((hidden, n_out), np.int64)
        padded[bounds[-2]:bounds[-1]] = w_out
        w_out = padded
    hid = {k: np.concatenate([n[k] for n in neurons[:-1]]) for k in neurons[0]}
    out = neurons[-1]
    spec = {"weights_in": w_in, "weights_rec": w_rec, "weights_out": w_out,
            "dash_mem": hid["dash_mem"], "dash_mem_out": out["dash_mem"],
            "dash_syn": hid["dash_syn"],
            # the second synaptic current has no weights (one CubaLIF current); as the mapper
            "dash_syn_2": np.zeros_like(hid["dash_syn"]),
            "dash_syn_out": out["dash_syn"], "threshold": hid["threshold"],
            "threshold_out": out["threshold"], "bias": hid["bias"], "bias_out": out["bias"]}
    meta_in = asc.meta["input"]
    try:
        afe = AfeSettings(**meta_in["afe"])
        sample_rate = int(meta_in["sample_rate"])
    except (KeyError, TypeError, ValueError) as exc:
        raise NirFileError(f"metadata 'hilbench.input' lacks the AFE settings Xylo's host front "
                           f"end needs ({exc!r})") from None
    return XyloNetwork(
        spec=spec,
        weight_shifts={"weight_shift_in": 0, "weight_shift_rec": 0, "weight_shift_out": 0},
        aliases=[[] for _ in range(hidden)], dt=dt, classes=asc.classes,
        sample_rate=sample_rate, afe=afe,
        info={"hidden": sizes[:-1], "nir_graph_sha256": asc.sha256},
    )
