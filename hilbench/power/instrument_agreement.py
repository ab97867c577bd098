"""Two (or more) instruments on one device: every power figure from each, and their E_n.

A campaign may attach several instruments to the same device (a DMM and a JS220, two DMMs on
one supply). The first instrument's figures stay the headline; each further instrument's
figure of the same window is stored beside it in the metric's meta with its 95 % expanded
uncertainty and the agreement score of ISO 13528, E_n = |x₁ − x₂| / √(U₁² + U₂²)
(:func:`hilbench.power.provenance.agreement`). E_n > 1 means the two disagree beyond what
both state: one of them is off (a calibration error, a wrong range, a miswired shunt), and the
figure is flagged by the instrument's name wherever it is shown.

What a metric's meta carries (:data:`META_KEY`)::

    "instruments": {"headline": "dmm0",
                    "others": [{"id": "dmm1", "value": …, "uncertainty": …,
                                "en": …, "flagged": …, "rule": …}],
                    "disagree": ["dmm1"]}

An instrument that gave no figure for a window carries ``"reason"`` instead of a value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hilbench.power.provenance import agreement

META_KEY = "instruments"

# A figure as the procedures pass it: (value, 95 % expanded uncertainty, meta).
Figure = tuple[float | None, float | None, Any]


def compare_figure(headline: Figure, other_id: str, other: Figure | None,
                   reason: str = "") -> dict[str, Any]:
    """One further instrument's figure beside the headline's, with their E_n."""
    if other is None or other[0] is None:
        return {"id": other_id, "value": None, "uncertainty": None,
                "reason": reason or f"instrument {other_id} gave no figure for this window"}
    value, uncertainty = float(other[0]), other[1]
    out: dict[str, Any] = {"id": other_id, "value": value, "uncertainty": uncertainty}
    if headline[0] is None:
        return {**out, "reason": "no headline figure to compare with"}
    found = agreement(float(headline[0]), headline[1], value, uncertainty)
    return {**out, **found.to_dict()}


def compare_instruments(headline_id: str, headline: Mapping[str, Figure],
                        others: Sequence[tuple[str, Mapping[str, Any] | None]]
                        ) -> dict[str, dict[str, Any]]:
    """For each headline figure name, the meta entry naming every further instrument's figure
    of the same windows and its E_n against the headline (``others``: each instrument's id and
    its figures by name, or ``{"reason": …}`` / None when it gave none)."""
    out: dict[str, dict[str, Any]] = {}
    for name, figure in headline.items():
        if name == "meta" or not isinstance(figure, tuple):
            continue
        entries = []
        for other_id, figures in others:
            figures = figures or {}
            reason = str(figures.get("reason") or "")
            entries.append(compare_figure(figure, other_id, figures.get(name), reason))
        out[name] = {"headline": headline_id, "others": entries,
                     "disagree": [e["id"] for e in entries if e.get("flagged")]}
    return out


def _plain(value: float, uncertainty: float | None) -> str:
    return f"{value:.4g}" + ("" if uncertainty is None else f" ± {uncertainty:.2g}")


def disagreement_text(metas: Sequence[Mapping[str, Any] | None],
                      fmt: Callable[[float, float | None], str] = _plain) -> str:
    """One line for a table cell from the meta of one figure over its runs: each further
    instrument's figure (``fmt``: value and uncertainty as the table prints them; over several
    runs their mean) and its worst E_n, ``DISAGREES`` by name above 1; empty when no second
    instrument measured it."""
    by_id: dict[str, list[dict[str, Any]]] = {}
    headline = ""
    for meta in metas:
        found = (meta or {}).get(META_KEY)
        if not isinstance(found, Mapping):
            continue
        headline = str(found.get("headline") or headline)
        for entry in found.get("others") or ():
            if isinstance(entry, Mapping) and entry.get("id"):
                by_id.setdefault(str(entry["id"]), []).append(dict(entry))
    parts = []
    for other_id, entries in sorted(by_id.items()):
        ens = [float(e["en"]) for e in entries if e.get("en") is not None]
        flagged = sum(bool(e.get("flagged")) for e in entries)
        values = [(float(e["value"]), e.get("uncertainty")) for e in entries
                  if e.get("value") is not None]
        shown = ""
        if values:
            mean = sum(v for v, _ in values) / len(values)
            stated = [float(u) for _, u in values if u is not None]
            shown = " " + fmt(mean, max(stated) if len(stated) == len(values) else None)
            shown += f" (mean of {len(values)} runs)" if len(values) > 1 else ""
        if flagged:
            parts.append(f"{other_id}{shown} DISAGREES with {headline}: E_n up to "
                         f"{max(ens):.2g} ({flagged}/{len(entries)} runs above 1)")
        elif ens:
            parts.append(f"{other_id}{shown} agrees with {headline}: E_n ≤ {max(ens):.2g}")
        else:
            reason = next((str(e["reason"]) for e in entries if e.get("reason")), "")
            parts.append(f"{other_id}: no E_n" + (f" ({reason})" if reason else ""))
    return "; ".join(parts)


def disagreeing_instruments(metas: Sequence[Mapping[str, Any] | None]) -> list[str]:
    """The further instruments whose figure disagrees (E_n > 1) with the headline in any run."""
    found: set[str] = set()
    for meta in metas:
        entry = (meta or {}).get(META_KEY)
        if isinstance(entry, Mapping):
            found.update(str(i) for i in entry.get("disagree") or ())
    return sorted(found)
