"""The system description file (``system.toml``): what a NeuroBench submission says about the
system under test that no measurement can tell — who built it, whether it can be bought, how its
power was measured, which configuration and software ran. The leaderboard rows and the report
read it; ``examples/system.toml`` is a commented template with every field.

Errors name the file and the key (``system.toml [power] category: …``), like campaign files.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

SPEC_VERSION = "NeuroBench system track v1.0"
AVAILABILITY = ("Available", "Preview", "RDI")
POWER_CATEGORIES = ("external analyzer tap", "on-board instrument", "wall power", "estimate")
CONFIGURATIONS = ("performance", "efficiency")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Software(_Strict):
    """One piece of the software stack (framework, SDK, compiler, firmware, hilbench)."""

    name: str = Field(min_length=1)
    version: str = Field(min_length=1)


class PowerMethod(_Strict):
    """How power was measured: the leaderboard's category and what the figure includes."""

    category: Literal[POWER_CATEGORIES] = Field(  # type: ignore[valid-type]
        description="external analyzer tap | on-board instrument | wall power | estimate "
        "(estimate: simulated systems only)")
    instrument: str = Field("", description="make and model of the meter, or the on-board sensor")
    included_domains: list[str] = Field(
        default_factory=list, description="power domains inside the figure (e.g. core, DRAM)")
    omitted_domains: list[str] = Field(
        default_factory=list, description="power domains left out, and so not in any figure")
    notes: str = ""


class SystemDescription(_Strict):
    """One system under test, as a submission describes it."""

    name: str = Field(min_length=1, description="the system's name on the leaderboard")
    organisation: str = Field(min_length=1)
    date: dt.date = Field(description="date of the submission (YYYY-MM-DD)")
    availability: Literal[AVAILABILITY] = Field(  # type: ignore[valid-type]
        description="Available (can be bought or used now) | Preview (within 180 days) | "
        "RDI (research, development or internal)")
    configuration: Literal[CONFIGURATIONS] = Field(  # type: ignore[valid-type]
        description="performance | efficiency: what the system was tuned for")
    architecture: str = Field(min_length=1, description="processor, memory, interconnect, board")
    algorithm: str = Field(min_length=1, description="model or solver and how it was mapped")
    description: str = ""
    contact: str = ""
    url: str = ""
    power: PowerMethod
    software: list[Software] = Field(default_factory=list)


class SystemFileError(ValueError):
    """A system description that cannot be used; the message names the file and the key."""


def load_system(path: Path) -> SystemDescription:
    """Read and check ``system.toml``; :class:`SystemFileError` names file and key."""
    from hilbench.bounded_parse import InputError, read_toml

    try:
        data = read_toml(path, "system file")
    except InputError as exc:  # unreadable, too large, not UTF-8, too deep, not TOML
        raise SystemFileError(str(exc)) from None
    system = data.get("system")
    if not isinstance(system, dict):
        raise SystemFileError(f"{path}: no [system] table (see examples/system.toml)")
    unknown = sorted(set(data) - {"system"})
    if unknown:
        raise SystemFileError(f"{path}: unknown table or key {unknown[0]!r} (only [system] "
                              "and its sub-tables)")
    try:
        return SystemDescription.model_validate(system)
    except ValidationError as exc:
        raise SystemFileError("; ".join(_message(path, e) for e in exc.errors())) from None


def _message(path: Path, error: dict) -> str:
    loc = [str(p) for p in error["loc"]]
    table = "[system]"
    if loc and loc[0] == "power":
        table, loc = "[system.power]", loc[1:]
    elif loc and loc[0] == "software":
        table = "[[system.software]]"
        if len(loc) > 1 and loc[1].isdigit():
            table += f" #{int(loc[1]) + 1}"
            loc = loc[2:]
        else:
            loc = loc[1:]
    key = ".".join(loc) or "(table)"
    if error["type"] == "extra_forbidden":
        return f"{path} {table}: unknown key {key!r}"
    if error["type"] == "missing":
        return f"{path} {table}: missing key {key!r}"
    return f"{path} {table} {key}: {error['msg']}"
