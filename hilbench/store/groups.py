"""Replicate groups: runs whose unit keys differ only in seed and repetition.

Every procedure writes unit keys as ``/``-separated segments with ``seed=…`` and ``rep=…``
among them (``qubo/fixed_timeout/n=100/d=0.05/seed=2/sa/timeout=0.01/rep=0``); blanking those
gives the group a summary averages over. The writer stores it per run (``runs.unit_group``), so
summaries group on an indexed column instead of calling Python for every row.
"""

from __future__ import annotations

import math
import re
import sqlite3

REPLICATE_KEYS = ("seed", "rep", "repetition")
_REPLICATE = re.compile(rf"^({'|'.join(REPLICATE_KEYS)})=.*$")


def replicate_key(unit_key: str | None) -> str:
    """The unit key with its replicate segments (``seed=3``, ``rep=1``) written as ``seed=*``."""
    if not unit_key:
        return ""
    return "/".join(_REPLICATE.sub(r"\1=*", part) for part in unit_key.split("/"))


class _StdError:
    """SQL aggregate: standard error of the mean (Welford's update, no cancellation)."""

    def __init__(self) -> None:
        self.n, self.mean, self.m2 = 0, 0.0, 0.0

    def step(self, value: float | None) -> None:
        if value is None:
            return
        self.n += 1
        delta = value - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (value - self.mean)

    def finalize(self) -> float | None:
        if self.n < 2:
            return None
        return math.sqrt(self.m2 / (self.n - 1) / self.n)


def install_functions(conn: sqlite3.Connection) -> None:
    """``replicate_key(unit_key)`` and the aggregate ``std_error(value)`` in SQL on ``conn``."""
    conn.create_function("replicate_key", 1, replicate_key, deterministic=True)
    conn.create_aggregate("std_error", 1, _StdError)
