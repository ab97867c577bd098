"""How values are laid out in the store: dicts as JSON text. Sample arrays are bytes laid out
by :mod:`hilbench.store.sample_blobs` (no Python object per sample, the same on every machine).
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

from hilbench.store.errors import StoreDamaged, StoreError


def to_json(value: Any, what: str) -> str:
    """Serialise a document field; ``what`` names it in the error (e.g. "params of run 3f2a…")."""
    try:
        return json.dumps(value, default=_json_default, allow_nan=True, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise StoreError(f"cannot store {what} as JSON: {exc}") from exc


def from_json(text: str) -> Any:
    """A stored JSON field; one a damaged store holds as something else is StoreDamaged."""
    try:
        return json.loads(text)
    except (ValueError, TypeError) as exc:
        raise StoreDamaged(f"a stored field is not JSON ({type(exc).__name__}: "
                           f"{str(exc)[:120]})") from None


def finite_or_none(value: float | None) -> float | None:
    """SQLite has no NaN (it would read back as NULL anyway); say so explicitly."""
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _json_default(obj: Any) -> Any:
    np = sys.modules.get("numpy")  # a numpy value means numpy is already imported
    if np is not None and isinstance(obj, np.generic):
        return obj.item()
    if np is not None and isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")
