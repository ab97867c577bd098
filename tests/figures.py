"""Reading a stored figure the way a test checks it: the value a run measured, even where the
run overran its timeout and the figure is therefore kept out of every summary."""

from __future__ import annotations

from typing import Any


def measured(metric: dict[str, Any]) -> float | None:
    """The metric's value, or for an overrun run (stored without a value so that no table files
    it under the nominal timeout) the value it measured, kept in its meta."""
    meta = metric.get("meta") or {}
    if metric["value"] is None and meta.get("excluded") == "overrun":
        return meta["measured"]
    return metric["value"]
