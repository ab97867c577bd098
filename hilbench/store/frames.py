"""pandas views of a store, for notebooks; pandas is imported only when a frame is asked for.

Parameter columns are prefixed ``param.`` and agent info is left out, so a frame can be grouped
by the parameters that define a workload. Metric units are in ``frame.attrs["units"]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hilbench.store.reader import Store

if TYPE_CHECKING:
    import pandas as pd

RUN_COLUMNS = (
    "uid",
    "campaign_uid",
    "unit_key",
    "procedure",
    "status",
    "reason",
    "wall_time",
    "t_start",
    "t_stop",
    "duration_s",
)


def runs_frame(path: str | Path | None = None, campaign_uid: str | None = None) -> pd.DataFrame:
    """One row per run: identity, status, timing, and one ``param.<name>`` column per parameter."""
    pd = _pandas()
    with Store(path) as store:
        runs = store.runs(campaign_uid)
    return pd.DataFrame([_run_row(run) for run in runs], columns=_columns(runs))


def metrics_frame(path: str | Path | None = None, campaign_uid: str | None = None) -> pd.DataFrame:
    """One row per run with its params and one column per metric (plus ``<name>.uncertainty``)."""
    pd = _pandas()
    with Store(path) as store:
        runs = store.runs(campaign_uid)
        wanted = {run["uid"] for run in runs}
        metrics = [m for m in store.metrics() if m["run_uid"] in wanted]
    rows = {run["uid"]: _run_row(run) for run in runs}
    names: list[str] = []
    units: dict[str, str] = {}
    for metric in metrics:
        name = metric["name"]
        if name not in units:
            names.append(name)
            units[name] = metric["unit"]
        rows[metric["run_uid"]][name] = metric["value"]
        rows[metric["run_uid"]][f"{name}.uncertainty"] = metric["uncertainty"]
    metric_columns = [c for name in names for c in (name, f"{name}.uncertainty")]
    frame = pd.DataFrame(list(rows.values()), columns=_columns(runs) + metric_columns)
    frame[metric_columns] = frame[metric_columns].astype("float64")
    frame.attrs["units"] = units
    return frame


def samples_frame(path: str | Path | None, run_uid: str, source: str | None = None) -> pd.DataFrame:
    """Every stored sample of a run (or of one source): columns t, value, source, unit, phase_uid.

    The label columns are categoricals built from per-batch codes, so an hour of 1 kHz samples
    costs a few bytes per row rather than a Python string per row.
    """
    pd = _pandas()
    t_parts: list[np.ndarray] = []
    value_parts: list[np.ndarray] = []
    labels: dict[str, _Labels] = {"source": _Labels(), "unit": _Labels(), "phase_uid": _Labels()}
    with Store(path) as store:
        sources = [source] if source else [s["source"] for s in store.sample_sources(run_uid)]
        for name in dict.fromkeys(sources):
            for batch in store.sample_batches(run_uid, name):
                n = batch["t"].size
                t_parts.append(batch["t"])
                value_parts.append(batch["values"])
                for column, label in labels.items():
                    label.add(batch[column], n)
    empty = np.empty(0, dtype=np.float64)
    columns: dict[str, Any] = {
        "t": np.concatenate(t_parts) if t_parts else empty,
        "value": np.concatenate(value_parts) if value_parts else empty,
    }
    for column, label in labels.items():
        columns[column] = label.categorical(pd)
    return pd.DataFrame(columns)


class _Labels:
    """Categorical codes for one label column, accumulated batch by batch."""

    def __init__(self) -> None:
        self.categories: dict[Any, int] = {}
        self.codes: list[np.ndarray] = []

    def add(self, label: Any, n: int) -> None:
        # -1 is pandas' code for a missing value (samples outside any phase)
        code = -1 if label is None else self.categories.setdefault(label, len(self.categories))
        self.codes.append(np.full(n, code, dtype=np.int32))

    def categorical(self, pd: Any) -> Any:
        codes = np.concatenate(self.codes) if self.codes else np.empty(0, dtype=np.int32)
        return pd.Categorical.from_codes(codes, categories=list(self.categories))


def _run_row(run: dict[str, Any]) -> dict[str, Any]:
    row = {column: run[column] for column in RUN_COLUMNS}
    for key, value in run["params"].items():
        row[f"param.{key}"] = value
    return row


def _columns(runs: list[dict[str, Any]]) -> list[str]:
    params = dict.fromkeys(f"param.{key}" for run in runs for key in run["params"])
    return [*RUN_COLUMNS, *params]


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as exc:
        raise ImportError(
            "pandas is needed for store DataFrames; install it with: pip install 'hilbench[pandas]'"
        ) from exc
    return pandas
