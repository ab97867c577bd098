"""How a campaign's time and power were measured, in sentences, from what its runs stored:
the instrument's identity and settings, the windows power was averaged over, streams, the time
resolution of the readings, clock offsets and the meter's measured sample interval.

Each workload describes its own runs (its plugin's ``methodology``, in the registry's order);
the instruments are described here. Every statement names where it comes from in the store,
so a reader can check it with ``hilbench results --run``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hilbench.contracts.registry import resolve, workloads

if TYPE_CHECKING:
    from hilbench.report.campaign_data import CampaignData


def instrument_settings(config: dict[str, Any]) -> list[str]:
    """One line per instrument of the campaign: id, driver, what it measures, its settings."""
    lines = []
    for inst in config.get("instruments") or []:
        settings = ", ".join(f"{k} = {v}" for k, v in sorted((inst.get("settings") or {}).items()))
        where = inst.get("resource") or (
            f"SIMULATED bench meter, power model {inst['simulate']}" if inst.get("simulate")
            else "internal source")
        lines.append(f"instrument {inst['id']} ({inst.get('driver')}, {where}) measures agent "
                     f"{inst.get('measures')}; settings: {settings or 'driver defaults'}")
    return lines


def seconds_text(s: float) -> str:
    """``12.3 µs``, ``4.56 ms``, ``7.89 s``: a duration in the unit that reads best."""
    return f"{s * 1e6:.3g} µs" if s < 1e-3 else f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def campaign_methodology(data: CampaignData, config: dict[str, Any]) -> list[str]:
    """Everything the campaign's runs say about how they were measured."""
    lines = instrument_settings(config)
    for workload in workloads().values():
        if workload.methodology is not None:
            lines += resolve(workload.methodology)(data)
    return lines
