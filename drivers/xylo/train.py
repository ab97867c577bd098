"""Train a spiking ASC network that fits Xylo Audio 2, with Rockpool's Jax modules (no torch).

Like the NeuroBench baseline: host-simulated AFE spikes (16 channels) into a feed-forward
network of three hidden LIF layers whose neurons have several synaptic time constants, and
class = the output channel with the most spikes. Training uses surrogate gradients (LIFJax)
and a softmax cross-entropy over output spike counts; only weights are trained, the time
constants stay as set. The trained network goes through ``syns61201.mapper`` (which refuses
what does not fit the chip) and ``global_quantize``, is checked in ``XyloSim`` (bit-accurate),
and is saved as a :class:`~hilbench_drivers.xylo.network.XyloNetwork` file.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hilbench_drivers.xylo import vendor
from hilbench_drivers.xylo.afe import HostFrontEnd
from hilbench_drivers.xylo.network import AfeSettings, XyloNetwork

log = logging.getLogger(__name__)

TAU_SYN_S = (0.02, 0.04, 0.08)  # several synaptic time constants (each > dt), cycled per layer
TAU_MEM_S = 0.04


@dataclass
class TrainReport:
    samples: int
    steps: int
    final_loss: float
    train_accuracy_float: float
    train_accuracy_xylosim: float
    hidden: tuple[int, ...]
    seconds: float
    afe_cached: int
    out: str
    losses: list[float] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "losses"}


def build_network(hidden: Sequence[int], classes: int, dt: float, seed: int) -> Any:
    """Sequential(Linear, LIF) × (len(hidden) + 1), Rockpool Jax modules."""
    vendor.require("jax")
    from rockpool.nn.combinators import Sequential
    from rockpool.nn.modules import LIFJax, LinearJax

    sizes = [16, *hidden, classes]
    layers: list[Any] = []
    rng = np.random.default_rng(seed)
    for i in range(len(sizes) - 1):
        n_in, n_out = sizes[i], sizes[i + 1]
        weight = rng.normal(0.0, 1.0 / np.sqrt(n_in), (n_in, n_out))
        layers.append(LinearJax((n_in, n_out), weight=weight, has_bias=False))
        tau_syn = np.array([TAU_SYN_S[j % len(TAU_SYN_S)] for j in range(n_out)])
        layers.append(LIFJax(n_out, tau_syn=tau_syn, tau_mem=TAU_MEM_S, dt=dt))
    return Sequential(*layers)


def spikes_for(audio: np.ndarray, front_end: HostFrontEnd,
               progress: Callable[[int, int], None] | None = None) -> tuple[np.ndarray, int]:
    """AFE input rasters (N, T, 16) for N samples, and how many came from the cache."""
    rasters, cached = [], 0
    for i, sample in enumerate(audio):
        result = front_end.spikes(sample)
        rasters.append(result.raster)
        cached += result.cached
        if progress:
            progress(i + 1, len(audio))
    return np.stack(rasters).astype(np.float32), cached


def to_network(net: Any, classes: Sequence[str], dt: float, sample_rate: int,
               afe: AfeSettings, info: dict[str, Any]) -> XyloNetwork:
    """Map (design rules of Xylo Audio 2 enforced by Rockpool's mapper) and quantise."""
    x = vendor.rockpool_xylo_a2()
    from rockpool.transform.quantize_methods import global_quantize

    spec = x.mapper(net.as_graph(), weight_dtype="float", threshold_dtype="float",
                    dash_dtype="float")
    spec.update(global_quantize(**spec))
    arrays = {k: np.round(np.asarray(spec[k])).astype(np.int64)
              for k in ("weights_in", "weights_rec", "weights_out", "dash_mem", "dash_mem_out",
                        "dash_syn", "dash_syn_2", "dash_syn_out", "threshold", "threshold_out",
                        "bias", "bias_out")}
    return XyloNetwork(
        spec=arrays,
        weight_shifts={k: int(spec[k]) for k in
                       ("weight_shift_in", "weight_shift_rec", "weight_shift_out")},
        aliases=[[int(t) for t in a] for a in spec["aliases"]],
        dt=dt, classes=tuple(classes), sample_rate=sample_rate, afe=afe, info=info,
    )


def xylosim_predict(network: XyloNetwork, rasters: np.ndarray) -> np.ndarray:
    """Class per sample in XyloSim: the output channel with the most spikes (lowest on ties)."""
    x = vendor.rockpool_xylo_a2()
    sim = x.XyloSim.from_specification(**network.specification())
    out = []
    for raster in rasters:
        sim.reset_state()
        spikes, _, _ = sim.evolve(raster.astype(int))
        out.append(int(np.argmax(np.asarray(spikes).sum(axis=0)[: len(network.classes)])))
    return np.array(out)


def train_network(
    data_root: str | Path,
    out: str | Path,
    *,
    hidden: Sequence[int] = (63, 63, 63),
    steps: int = 300,
    learning_rate: float = 1e-2,
    limit: int | None = None,
    dt: float = 0.01,
    sample_rate: int = 16000,
    seed: int = 0,
    cache_dir: str | Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> TrainReport:
    """Train on the train split (``limit`` clips of ten 1 s samples), save the network file."""
    t0 = time.perf_counter()
    vendor.rockpool_xylo_a2()
    jax = vendor.require("jax")
    import jax.numpy as jnp
    from jax.example_libraries.optimizers import adam

    from hilbench.workloads.asc import load_split
    from hilbench.workloads.asc.dataset import CLASSES

    afe = AfeSettings()
    front_end = HostFrontEnd(afe, dt, sample_rate, cache_dir)
    split = load_split(data_root, "train", sample_rate=sample_rate, limit=limit)
    if len(split) == 0:
        raise ValueError(f"the train split of {data_root} is empty")
    rasters, cached = spikes_for(
        split.slices, front_end,
        (lambda i, n: progress("afe", i, n)) if progress else None)
    labels = np.asarray(split.labels, dtype=np.int32)
    net = build_network(hidden, len(CLASSES), dt, seed)
    params = net.parameters("weights")

    def loss_fn(p: Any, x: Any, y: Any) -> Any:
        model = net.reset_state().set_attributes(p)
        output, _, _ = model(x)
        counts = output.sum(axis=1) / 10.0  # spike counts as logits, tempered
        logp = counts - jax.scipy.special.logsumexp(counts, axis=1, keepdims=True)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1))

    value_and_grad = jax.jit(jax.value_and_grad(loss_fn))
    opt_init, opt_update, get_params = adam(learning_rate)
    opt_update = jax.jit(opt_update)  # one compilation, not one per operation and shape
    state = opt_init(params)
    rng = np.random.default_rng(seed)
    batch = min(32, len(labels))
    losses: list[float] = []
    for step in range(steps):
        pick = rng.choice(len(labels), size=batch, replace=False)
        loss, grads = value_and_grad(get_params(state), jnp.asarray(rasters[pick]),
                                     jnp.asarray(labels[pick]))
        state = opt_update(step, grads, state)
        losses.append(float(loss))
        if progress:
            progress("train", step + 1, steps)
    trained = net.set_attributes(get_params(state))

    def forward(p: Any, x: Any) -> Any:
        return net.reset_state().set_attributes(p)(x)[0]

    output = jax.jit(forward)(get_params(state), jnp.asarray(rasters))  # one compilation
    float_acc = float(np.mean(np.argmax(np.asarray(output).sum(axis=1), axis=1) == labels))
    info = {"trained_on": str(data_root), "train_samples": len(labels), "steps": steps,
            "hidden": list(hidden), "tau_syn_s": list(TAU_SYN_S), "tau_mem_s": TAU_MEM_S,
            "seed": seed, "learning_rate": learning_rate, "loss": losses[-1] if losses else None}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        network = to_network(trained, CLASSES, dt, sample_rate, afe, info)
    sim_acc = float(np.mean(xylosim_predict(network, rasters) == labels))
    network.info["train_accuracy_xylosim"] = sim_acc
    network.save(out)
    return TrainReport(
        samples=len(labels), steps=steps, final_loss=losses[-1] if losses else float("nan"),
        train_accuracy_float=float_acc, train_accuracy_xylosim=sim_acc, hidden=tuple(hidden),
        seconds=time.perf_counter() - t0, afe_cached=cached, out=str(out), losses=losses,
    )
