"""Rockpool's Xylo Audio 2 cycle model without samna: the one work-around for a samna import.

``rockpool/devices/xylo/syns61201/power_cycles_model.py`` (Rockpool 2.8) imports ``samna`` at
module level only to name a type (``XyloA2Config = samna.xyloCore2.configuration.
XyloConfiguration``); ``cycles_model`` itself reads plain attributes of the configuration
(``input.weights``, ``reservoir.weights``, ``reservoir.neurons[i].alias_target``,
``readout.weights``, ``synapse2_enable``). Without the vendor's samna the package hides the
function behind a shim. We load that one file with a placeholder ``samna`` that exists only
while the file is imported (``sys.modules`` is restored at once), and hand it a configuration
view built from the network specification the way ``config_from_specification``
(``xylo_samna.py``) fills a real one. Where the real samna is installed, Rockpool's own import
is used unchanged.

Why not rely on it: the model estimates master-clock cycles per time step; the simulated
inference time is ``cycles / core clock`` and is labelled as a model estimate.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from hilbench_drivers.xylo import vendor
from hilbench_drivers.xylo.network import XyloNetwork

MODULE = "rockpool.devices.xylo.syns61201.power_cycles_model"


@dataclass
class _Neuron:
    alias_target: int | None = None


@dataclass
class _Weights:
    weights: np.ndarray


@dataclass
class _Reservoir:
    weights: np.ndarray
    neurons: list[_Neuron]


@dataclass
class ConfigView:
    """The attributes of a samna ``XyloConfiguration`` that ``cycles_model`` reads."""

    input: _Weights
    reservoir: _Reservoir
    readout: _Weights
    synapse2_enable: bool


def config_view(network: XyloNetwork) -> ConfigView:
    """What ``config_from_specification`` would set, for the attributes the model reads."""
    w_in = np.asarray(network.spec["weights_in"])
    w_rec = np.asarray(network.spec["weights_rec"])
    neurons = [_Neuron(int(a[0]) if len(a) else None) for a in network.aliases]
    neurons += [_Neuron() for _ in range(network.hidden - len(neurons))]
    return ConfigView(
        input=_Weights(w_in[:, :, 0]),
        reservoir=_Reservoir(w_rec[:, :, 0], neurons),
        readout=_Weights(np.asarray(network.spec["weights_out"])),
        synapse2_enable=w_in.shape[2] > 1,
    )


def _placeholder_samna() -> types.ModuleType:
    samna = types.ModuleType("samna")
    samna.__doc__ = "hilbench placeholder: only the type name power_cycles_model reads"
    configuration = types.SimpleNamespace(XyloConfiguration=object)
    samna.xyloCore2 = types.SimpleNamespace(configuration=configuration)  # type: ignore[attr-defined]
    return samna


def load_cycles_model() -> Callable[..., tuple[float, float]]:
    """Rockpool's ``cycles_model`` for Xylo Audio 2, with or without the real samna."""
    x = vendor.rockpool_xylo_a2()
    real = getattr(x, "cycles_model", None)
    if inspect.isfunction(real):  # the real samna is installed: Rockpool's own import worked
        return real
    spec = importlib.util.find_spec(MODULE)
    if spec is None or spec.loader is None:
        raise vendor.missing("rockpool", f"has no {MODULE}")
    saved = sys.modules.get("samna")
    sys.modules["samna"] = _placeholder_samna()
    try:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            sys.modules.pop("samna", None)
        else:
            sys.modules["samna"] = saved
    return module.cycles_model


def cycles_per_step(
    network: XyloNetwork, input_raster: np.ndarray, hidden_spikes: np.ndarray | float,
    output_raster: np.ndarray,
) -> float:
    """Mean master-clock cycles per time step for this sample's activity (Rockpool's model)."""
    model = load_cycles_model()
    cycles, _isyn2_ops = model(config_view(network), input_raster, hidden_spikes, output_raster)
    return float(cycles)


def describe() -> dict[str, Any]:
    return {"model": f"{MODULE}.cycles_model (Rockpool 2.8)",
            "note": "cycles per time step from spike probabilities; time = cycles / core clock"}
