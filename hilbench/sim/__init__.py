"""The simulated bench: device power models and a SCPI bench meter that measures them."""

from hilbench.sim.meter import SimulatedMeter

__all__ = ["SimulatedMeter"]
