"""The installed power instruments: found through the ``hilbench.instruments`` entry-point
group, by name, so that the core names no instrument driver."""

from __future__ import annotations

from typing import Any

from hilbench.entry_points import entry_points
from hilbench.power.source import InstrumentFault

ENTRY_POINT_GROUP = "hilbench.instruments"


def instrument_class(name: str) -> Any:
    """The instrument class registered as ``name``; InstrumentFault naming the installed ones
    when there is none."""
    matches = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
    if not matches:
        known = sorted(ep.name for ep in entry_points(group=ENTRY_POINT_GROUP))
        raise InstrumentFault(f"no instrument driver named {name!r} (installed: {known})")
    return matches[0].load()
