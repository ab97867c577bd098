"""Power model of the simulated Xylo Audio 2 (the NeuroBench ASC baseline's published figures).

Idle 0.351 mW with the network configured and ready, 0.692 mW while the SNN core computes
(DESIGN.md, reference baselines; measured there by the HDK's on-board monitor over 10 s
streams). The simulated bench meter reads this model in place of that monitor, at a 1.2 V
supply, so a simulated Xylo campaign exercises the same alignment and metrics; every figure from
it is labelled simulated (category "estimate", simulated systems only).
"""

from __future__ import annotations

from hilbench.sim.power_model import DevicePowerModel

XYLO_AUDIO_2 = DevicePowerModel(
    name="xylo-audio-2",
    state_watts={"idle": 0.000351, "inference": 0.000692},
    supply_v=1.2,
)
