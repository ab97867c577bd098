"""What a driver declares about NIR graphs (the closed category), in its capabilities and its
``declared_limits()``: whether it runs them, why not, and under which neuron conventions its
outputs are to be compared with the reference execution."""

from __future__ import annotations

import msgspec

from hilbench.contracts.base import Contract, Detail, Text


class NirCapabilities(Contract, omit_defaults=False, kw_only=True):
    """``runs``: the device can load a NIR graph; ``reason``: why not, or what it maps the graph
    to; ``executor``: what runs the graph; ``semantics``: the fields of
    ``hilbench.nir.reference.Semantics`` this device's neurons follow (empty: NIR 1.0's);
    ``quantisation``: what the device rounds, one line."""

    runs: bool
    reason: Text | None = None
    executor: Text | None = None
    semantics: Detail = msgspec.field(default_factory=dict)
    quantisation: Text | None = None
