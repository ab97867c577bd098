"""What running a campaign file does with the store's earlier attempts, said before it starts.

One decision, made under the campaign's lock and shared by `hilbench run` and the daemon:
resume the newest unfinished attempt of the same campaign (same configuration hash), say that
it already finished (and do nothing unless asked to run it again), or start a new campaign,
naming the keys that changed since the newest campaign of the same name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from hilbench.documents import new_uid
from hilbench.orchestrator.campaign import PACING_KEYS
from hilbench.store import Store

Action = Literal["new", "resume", "finished"]

# Left out of the comparison, as they are of the configuration hash: waiting times and keys.
_NOT_COMPARED = {*PACING_KEYS, "config_hash"}


@dataclass(frozen=True)
class ResumePlan:
    """What a run of the campaign will do. ``earlier`` is the stored campaign the decision
    refers to (the one resumed, the finished one, or the one the file changed since)."""

    action: Action
    campaign_uid: str
    total: int
    done: frozenset[str] = frozenset()
    earlier: Mapping[str, Any] | None = None
    changed: tuple[str, ...] = ()
    again: bool = False  # a new campaign although an earlier attempt exists (--again)

    def message(self, source: str) -> str:
        """One line for the person who started it."""
        uid = self.campaign_uid[:8]
        if self.action == "resume":
            return f"resuming campaign {uid}: {len(self.done)} of {self.total} unit(s) done"
        if self.action == "finished":
            assert self.earlier is not None
            return (
                f"campaign {uid} already finished ({self.earlier['status']}, "
                f"{self.total} unit(s)); nothing to do (--again runs it again as a new campaign)"
            )
        if self.earlier is None:
            return f"new campaign {uid}: {self.total} unit(s)"
        earlier = self.earlier["uid"][:8]
        if self.again:
            return f"new campaign {uid}: {self.total} unit(s), again after campaign {earlier}"
        keys = ", ".join(self.changed) or "none of the compared keys"
        left = ""
        if self.earlier.get("status") not in ("success", "fail"):
            left = f"; campaign {earlier} stays unfinished (its file as it was resumes it)"
        return (
            f"new campaign {uid}: {source} changed since campaign {earlier} (keys {keys}){left}"
        )


def plan_resume(
    store_path: Path,
    config: Mapping[str, Any],
    unit_keys: Iterable[str],
    *,
    again: bool = False,
) -> ResumePlan:
    """Decide what running a campaign with ``config`` (its ``config_dict`` plus
    ``config_hash``) does against the store at ``store_path``. Call it while holding the
    campaign's lock, so that no other process changes the answer meanwhile."""
    listed = list(unit_keys)
    keys, total = set(listed), len(listed)
    if not store_path.exists():
        return ResumePlan("new", new_uid(), total)
    with Store(store_path) as store:
        rows = sorted(
            store.campaigns(), key=lambda c: (c.get("wall_start") or 0), reverse=True
        )
        wanted = config["config_hash"]
        same = next((r for r in rows if (r.get("config") or {}).get("config_hash") == wanted),
                    None)
        if same is not None and again:
            return ResumePlan("new", new_uid(), total, earlier=same, again=True)
        if same is not None:
            if same["status"] == "success":
                return ResumePlan("finished", same["uid"], total, earlier=same)
            done = frozenset(store.completed_unit_keys(same["uid"]) & keys)
            return ResumePlan("resume", same["uid"], total, done, earlier=same)
    named = next((r for r in rows if r.get("name") == config.get("name")), None)
    if named is None:
        return ResumePlan("new", new_uid(), total)
    changed = changed_keys(named.get("config") or {}, config)
    return ResumePlan("new", new_uid(), total, earlier=named, changed=tuple(changed))


def changed_keys(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The keys, as a campaign file names them, whose values differ between two stored
    configurations (``[campaign] repetitions``, ``[[qubo]] #1 nodes``, ``[[agents]] #2``)."""
    flat_before, flat_after = _flatten(before), _flatten(after)
    names = sorted(set(flat_before) | set(flat_after), key=_order)
    return [n for n in names if flat_before.get(n, _MISSING) != flat_after.get(n, _MISSING)]


_MISSING = object()


def _flatten_tables(tables: Mapping[str, Any]) -> dict[str, Any]:
    """Each workload table's keys as ``[[name]] #i key`` (an empty list as ``[[name]]``)."""
    out: dict[str, Any] = {}
    for table, entries in tables.items():
        for i, entry in enumerate(entries or []):
            for sub, v in (entry or {}).items():
                out[f"[[{table}]] #{i + 1} {sub}"] = v
        if not entries:
            out[f"[[{table}]]"] = []
    return out


def _flatten(config: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        if key in _NOT_COMPARED:
            continue
        if key in ("agents", "instruments") and isinstance(value, list):
            for i, entry in enumerate(value):
                for sub, v in (entry or {}).items():
                    if key == "agents" and sub == "key":
                        continue
                    out[f"[[{key}]] #{i + 1} {sub}"] = v
        elif key == "tables" and isinstance(value, Mapping):
            out.update(_flatten_tables(value))
        else:
            out[f"[campaign] {key}"] = value
    return out


def _order(name: str) -> tuple[int, str]:
    return (0 if name.startswith("[campaign]") else 1, name)
