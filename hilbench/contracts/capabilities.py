"""What a driver declares at the handshake (``welcome.capabilities``), decoded once per link,
and the settings its ``configure`` command takes."""

from __future__ import annotations

from typing import Annotated

import msgspec

from hilbench.contracts.asc import AscCapabilities
from hilbench.contracts.base import Contract, Detail, Name, Reply, Text
from hilbench.contracts.nir import NirCapabilities
from hilbench.contracts.qubo import QuboCapabilities


class Capabilities(Contract, omit_defaults=False, kw_only=True):
    """``workloads`` the driver serves; ``simulated`` (with ``simulation``, one line saying
    what) when the device itself is simulated; one map per workload; ``meter_link``: the
    driver reports its device's state to the simulated bench meter when ``configure`` gives it
    ``sim_meter``; ``marker``: the device drives a marker line around each timed stage that an
    instrument can record in its own sample stream (what, where), so windows may be cut by
    sample index (:mod:`hilbench.power.markers`)."""

    workloads: list[Name] = msgspec.field(default_factory=list)
    simulated: bool = False
    simulation: Text | None = None
    qubo: QuboCapabilities | None = None
    asc: AscCapabilities | None = None
    nir: NirCapabilities | None = None  # NIR graphs (the closed category)
    power: Detail | None = None
    meter_link: bool = False
    marker: Detail | None = None
    detail: Detail = msgspec.field(default_factory=dict)


class Settings(Contract, kw_only=True):
    """``configure``: device settings. Each driver may declare a subclass with its own keys
    (``Driver.settings``); ``sim_meter`` (``host:port``) links the device to the simulated bench
    meter, which then follows what the device does."""

    sim_meter: Annotated[str, msgspec.Meta(min_length=3, max_length=256)] | None = None


class ConfigureReply(Reply, kw_only=True):
    sim_meter: Annotated[str, msgspec.Meta(max_length=256)] | None = None  # the linked meter
    detail: Detail = msgspec.field(default_factory=dict)
