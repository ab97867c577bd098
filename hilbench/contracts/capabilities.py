"""What a driver declares at the handshake (``welcome.capabilities``), decoded once per link,
and the settings its ``configure`` command takes.

:class:`Capabilities` has one optional map per registered workload (its key is the workload's
name, its type the plugin's ``capabilities`` Struct), so the Struct is built from the registry
(:mod:`hilbench.contracts.registry`) rather than written out here."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec

from hilbench.contracts.base import Contract, Detail, Name, Reply, Text
from hilbench.contracts.nir import NirCapabilities
from hilbench.contracts.registry import workloads

_DOC = """``workloads`` the driver serves; ``simulated`` (with ``simulation``, one line saying
    what) when the device itself is simulated; one map per workload; ``meter_link``: the
    driver reports its device's state to the simulated bench meter when ``configure`` gives it
    ``sim_meter``; ``marker``: the device drives a marker line around each timed stage that an
    instrument can record in its own sample stream (what, where), so windows may be cut by
    sample index (:mod:`hilbench.power.markers`)."""


def _capabilities_struct() -> type[Contract]:
    per_workload = [(name, w.capabilities | None, None)
                    for name, w in workloads().items() if w.capabilities is not None]
    fields: list[Any] = [
        ("workloads", list[Name], msgspec.field(default_factory=list)),
        ("simulated", bool, False),
        ("simulation", Text | None, None),
        *per_workload,
        ("nir", NirCapabilities | None, None),  # NIR graphs (the closed category)
        ("power", Detail | None, None),
        ("meter_link", bool, False),
        ("marker", Detail | None, None),
        ("detail", Detail, msgspec.field(default_factory=dict)),
    ]
    return msgspec.defstruct("Capabilities", fields, bases=(Contract,), module=__name__,
                             namespace={"__doc__": _DOC, "workload": _workload},
                             omit_defaults=False, kw_only=True)


def _workload(self: Any, name: str) -> Any:
    """The declared map of workload ``name`` (None: not declared, or no such workload)."""
    return getattr(self, name, None) if name in workloads() else None


Capabilities: Any = _capabilities_struct()


def capabilities_wire(caps: Any) -> dict[str, Any]:
    """``caps`` as the map the handshake sends: a plugin workload's key is left out when the
    driver does not declare it (a peer without that plugin would refuse the key); the core's
    keys stay, null included, as every protocol version sent them."""
    wire = msgspec.to_builtins(caps)
    if wire.get("marker", 0) is None:  # added in issue 35: sent only when declared
        del wire["marker"]
    for name, w in workloads().items():
        if wire.get(name, 0) is None and not w.always_on_wire:
            del wire[name]
    return wire


class Settings(Contract, kw_only=True):
    """``configure``: device settings. Each driver may declare a subclass with its own keys
    (``Driver.settings``); ``sim_meter`` (``host:port``) links the device to the simulated bench
    meter, which then follows what the device does."""

    sim_meter: Annotated[str, msgspec.Meta(min_length=3, max_length=256)] | None = None


class ConfigureReply(Reply, kw_only=True):
    sim_meter: Annotated[str, msgspec.Meta(max_length=256)] | None = None  # the linked meter
    detail: Detail = msgspec.field(default_factory=dict)
