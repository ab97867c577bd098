"""NeuroBench's algorithm-track complexity metrics for a NIR graph and the activity recorded on
the samples a run actually processed (:mod:`hilbench.complexity.metrics`), and the energy that
operation counts imply under a stated per-operation energy model, labelled modelled
(:mod:`hilbench.complexity.energy`)."""

from hilbench.complexity.energy import EnergyModel, ModelledEnergy, modelled_energy
from hilbench.complexity.metrics import AlgorithmMetrics, SynapticOperations, algorithm_metrics

__all__ = ["AlgorithmMetrics", "EnergyModel", "ModelledEnergy", "SynapticOperations",
           "algorithm_metrics", "modelled_energy"]
