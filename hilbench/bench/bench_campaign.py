"""The campaign the core's daemon and store benchmarks drive: they measure the daemon, the
runner and the store, not a workload, so they take the first registered workload that offers a
bench fixture (``WorkloadPlugin.bench_fixture``) and wrap its tables in one spawned CPU agent and
the simulated bench meter.

A fixture is a ``"module:attribute"`` (a module will do) with:

- ``LABEL``: how the figures name its units (``"1 ms <LABEL>"``);
- ``tables(agent, units, timeout_s, sizes=None, instances=None)``: its campaign tables for
  about ``units`` fixed-timeout units on ``agent`` (each unit its own instance, or
  ``instances`` per size repeated) and the campaign's repetitions;
- ``write_run(writer, campaign_uid, index, t, rng)``: writes run ``index`` as its stored runs
  look, starting at ``t``; returns the run's uid and when the next run starts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from hilbench.contracts.registry import resolve, workloads

AGENT = {"id": "cpu0", "driver": "cpu", "spawn": True}
METER_SETTINGS = {"function": "current", "range": 10.0, "nplc": 0.02, "autozero": False,
                  "sample_interval_s": 0.001, "supply_voltage_v": 12.0}


@cache
def bench_fixture() -> Any:
    """The first registered workload's bench fixture (registry order)."""
    for workload in workloads().values():
        if workload.bench_fixture is not None:
            return resolve(workload.bench_fixture)
    raise RuntimeError("no installed workload offers a bench fixture (WorkloadPlugin."
                       "bench_fixture): the daemon and store benchmarks have nothing to run")


def campaign_data(name: str, units: int, timeout_s: float = 0.001, *,
                  sizes: Sequence[int] | None = None, instances: int | None = None,
                  meter: bool = True, noise_std_w: float | None = None) -> dict[str, Any]:
    """A campaign (as its TOML file reads) of about ``units`` units of ``timeout_s`` on a
    spawned CPU agent, read every millisecond by the simulated Keysight meter (``meter``)."""
    tables, repetitions = bench_fixture().tables(AGENT["id"], units, timeout_s, sizes, instances)
    # A bench times what runs cost; a wait for a busy host to settle before a unit's third
    # attempt is not part of that (the units it leaves unverified are counted apart).
    head: dict[str, Any] = {"name": name, "timing_retry_wait_s": 0}
    if repetitions > 1:
        head["repetitions"] = repetitions
    data: dict[str, Any] = {"campaign": head, "agents": [dict(AGENT)], **tables}
    if meter:
        instrument: dict[str, Any] = {"id": "dmm", "driver": "keysight34465a",
                                      "measures": AGENT["id"], "simulate": "simulated-cpu"}
        if noise_std_w is not None:
            instrument["noise_std_w"] = noise_std_w
        data["instruments"] = [{**instrument, "settings": dict(METER_SETTINGS)}]
    return data


def campaign_file(folder: Path, name: str, units: int, timeout_s: float = 0.001) -> Path:
    """:func:`campaign_data` written as ``folder/name.toml`` (what `queue add` is given)."""
    path = folder / f"{name}.toml"
    path.write_text(toml_text(campaign_data(name, units, timeout_s)))
    return path


def toml_text(data: dict[str, Any]) -> str:
    """A campaign's tables as TOML: top-level tables and arrays of tables whose values are
    numbers, strings, booleans and lists of them, with one level of sub-tables."""
    out: list[str] = []
    for name, body in data.items():
        for table in body if isinstance(body, list) else [body]:
            out.append(f"[[{name}]]" if isinstance(body, list) else f"[{name}]")
            subs = {k: v for k, v in table.items() if isinstance(v, dict)}
            out += [f"{k} = {_value(v)}" for k, v in table.items() if k not in subs]
            for sub, values in subs.items():
                out.append(f"\n[{name}.{sub}]")
                out += [f"{k} = {_value(v)}" for k, v in values.items()]
            out.append("")
    return "\n".join(out)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string: JSON's escapes are TOML's
    return repr(value)
