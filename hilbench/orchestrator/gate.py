"""One campaign gate: everything a campaign must pass before anything runs or is queued.

The file's size, encoding and nesting depth (the bounded reader), the schema of every table,
agent addresses and interpreters, installed drivers and procedures, each driver's solvers and
declared limits, and the bounds on counts, sizes and the memory a unit needs
(:func:`hilbench.orchestrator.bounds.bound_campaign`). `hilbench run`, `campaign check`,
`queue add`, `schedule add` (at add time and again at each fire), the daemon's worker and
`replay` all call it, so a campaign one refuses is refused by all, with the same lines.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hilbench.orchestrator.bounds import CampaignBounds, bound_campaign
from hilbench.orchestrator.campaign import Campaign, parse_campaign, read_campaign_file
from hilbench.orchestrator.campaign_errors import CampaignError

CampaignRefused = CampaignError  # one line per problem, naming the file, table and key


@dataclass(frozen=True)
class Gated:
    """A campaign that passed the gate: the exact bytes checked, the campaign, its bounds."""

    raw: bytes
    campaign: Campaign
    bounds: CampaignBounds


def _bounded(raw: bytes, campaign: Campaign, trials: int | None) -> Gated:
    if trials is not None:
        # Every unit `trials` times, stored as repetitions; tables check the 5 % rule.
        campaign = dataclasses.replace(campaign, repetitions=trials)
    return Gated(raw, campaign, bound_campaign(campaign))


def gate_file(path: str | Path, trials: int | None = None) -> Gated:
    """Read and check a campaign file; :class:`CampaignRefused` says every problem."""
    raw, campaign = read_campaign_file(path)
    return _bounded(raw, campaign, trials)


def gate_snapshot(content: str, source_path: str, trials: int | None = None) -> Gated:
    """Check a campaign queued or scheduled earlier, as its file was checked then: the
    installed drivers, the host's memory or the interpreters it names may have changed."""
    from hilbench.bounded_parse import InputError, toml_document

    raw = content.encode("utf-8")
    where = f"{source_path} (as queued)"
    try:
        data = toml_document(raw, where)
    except InputError as exc:
        raise CampaignRefused([str(exc)]) from None
    return gate_document(data, source_path, raw, trials)


def gate_document(data: dict[str, Any], source_path: str, raw: bytes = b"",
                  trials: int | None = None) -> Gated:
    """Check a campaign document already read within bounds (a cassette's recorded one)."""
    return _bounded(raw, parse_campaign(data, source_path), trials)
