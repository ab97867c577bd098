"""Energy per inference modelled from operation counts — an estimate, never a measurement.

The Neuromorphic Sequential Arena (IJCAI 2025, supplementary "Theoretical and Empirical
Computation of Energy Cost") estimates one inference as MACs × E_MAC + ACs × E_AC with the 45 nm
CMOS figures of Horowitz (ISSCC 2014): E_MAC = 4.6 pJ (32-bit float multiply-accumulate) and
E_AC = 0.9 pJ (32-bit float add). Those are the defaults here; a lab with figures for its own
process passes an :class:`EnergyModel` of its own, and its ``source`` travels with the result.
Every result says ``modelled`` so that no report can take it for a measured figure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hilbench.complexity.metrics import SynapticOperations

PJ = 1e-12
NSA_45NM = "Neuromorphic Sequential Arena (IJCAI 2025): Horowitz ISSCC 2014, 45 nm, 32-bit float"


@dataclass(frozen=True)
class EnergyModel:
    e_mac_j: float = 4.6 * PJ
    e_ac_j: float = 0.9 * PJ
    source: str = NSA_45NM

    def __post_init__(self) -> None:
        if not (self.e_mac_j >= 0 and self.e_ac_j >= 0):
            raise ValueError(f"energies per operation must be >= 0 J, got MAC {self.e_mac_j} "
                             f"and AC {self.e_ac_j}")


@dataclass(frozen=True)
class ModelledEnergy:
    """Energy per inference (one sample) from its effective synaptic operations."""

    energy_j: float
    mac_j: float
    ac_j: float
    model: EnergyModel
    label: str = "modelled"

    def to_dict(self) -> dict[str, Any]:
        return {"energy_j": self.energy_j, "mac_j": self.mac_j, "ac_j": self.ac_j,
                "e_mac_j": self.model.e_mac_j, "e_ac_j": self.model.e_ac_j,
                "source": self.model.source, "label": self.label}


def modelled_energy(ops: SynapticOperations, model: EnergyModel | None = None) -> ModelledEnergy:
    """MACs × E_MAC + ACs × E_AC for the effective operations of one inference."""
    model = model or EnergyModel()
    mac_j = ops.effective_macs * model.e_mac_j
    ac_j = ops.effective_acs * model.e_ac_j
    return ModelledEnergy(mac_j + ac_j, mac_j, ac_j, model)


def measured_to_modelled(measured_j: float, modelled: ModelledEnergy) -> float | None:
    """Measured ÷ modelled energy per inference (None when the model predicts 0 J)."""
    return measured_j / modelled.energy_j if modelled.energy_j > 0 else None
