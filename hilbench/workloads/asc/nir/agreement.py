"""A device's predictions against the reference execution of the same graph on the same inputs,
and the algorithm-track metrics of what was run.

A device may follow neuron conventions other than NIR 1.0's (Xylo Audio 2: up to 31 spikes per
step in hidden neurons, reset by subtraction, a one-step delay per layer); it declares them
(``nir.semantics`` in its capabilities) and its classes are checked against the reference run
under those conventions, so what remains is its arithmetic (quantisation). The agreement with
NIR 1.0's own definition is kept beside it, so the size of the convention gap stays visible.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hilbench.complexity.energy import EnergyModel, ModelledEnergy, modelled_energy
from hilbench.complexity.metrics import AlgorithmMetrics, algorithm_metrics
from hilbench.nir.graph import NirFileError
from hilbench.nir.reference import NIR_SEMANTICS, Semantics, run_reference
from hilbench.workloads.asc.nir.graph import AscGraph

MIN_AGREEMENT = 0.99  # the bound: classes agree on >= 99 % of the samples run


@dataclass(frozen=True)
class ReferenceCheck:
    samples: int
    agree: int  # under the device's declared conventions
    nir_agree: int  # under NIR 1.0's definition
    semantics: dict[str, Any]
    disagreeing: list[int]  # sample indices whose class differs (declared conventions)
    metrics: AlgorithmMetrics
    modelled: ModelledEnergy

    @property
    def fraction(self) -> float:
        return self.agree / self.samples

    @property
    def nir_fraction(self) -> float:
        return self.nir_agree / self.samples

    @property
    def passed(self) -> bool:
        return self.fraction >= MIN_AGREEMENT


def declared_semantics(fields: Mapping[str, Any] | None) -> Semantics:
    """The conventions a device declares (empty: NIR 1.0's); NirFileError naming a bad field."""
    try:
        return Semantics(**dict(fields or {}))
    except (TypeError, ValueError) as exc:
        raise NirFileError(f"the device's declared nir.semantics are unusable ({exc})") from None


def check_against_reference(asc: AscGraph, rasters: Sequence[np.ndarray], indices: Sequence[int],
                            predicted: Sequence[int], semantics: Mapping[str, Any] | None,
                            energy: EnergyModel | None = None) -> ReferenceCheck:
    """Run the reference on ``rasters`` (the inputs of the samples the device ran, in order)."""
    if not rasters or len(rasters) != len(predicted) or len(indices) != len(predicted):
        raise ValueError("one raster, index and prediction per sample run, at least one")
    nir_run = run_reference(asc.graph, rasters, asc.dt, NIR_SEMANTICS, record=True)
    conventions = declared_semantics(semantics)
    device_run = (nir_run if conventions == NIR_SEMANTICS
                  else run_reference(asc.graph, rasters, asc.dt, conventions, record=False))
    got = np.asarray(predicted, dtype=np.int64)
    same = device_run.predicted == got
    metrics = algorithm_metrics(asc.graph, nir_run.activity)
    return ReferenceCheck(
        samples=len(got), agree=int(same.sum()),
        nir_agree=int((nir_run.predicted == got).sum()), semantics=conventions.to_dict(),
        disagreeing=[int(indices[k]) for k in np.flatnonzero(~same)], metrics=metrics,
        modelled=modelled_energy(metrics.synaptic_operations, energy))
