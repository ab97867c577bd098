"""Every recorded figure computed again by the procedure's own analysis code and compared with
the recorded one: what ``hilbench replay --analysis-only`` prints and what ``hilbench audit
verify`` checks. The procedure says how it re-analyses a recorded run
(:attr:`hilbench.orchestrator.procedure.Procedure.reanalysis`); this module only dispatches and
compares."""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hilbench.cassette.runs import NotReanalysable, RecordedRun, Recording
from hilbench.confined_read import ConfinedFolder
from hilbench.documents import Metric
from hilbench.orchestrator.procedure import ProcedureError, load_procedure, procedure_names


@dataclass
class Comparison:
    """What re-analysing a recording found."""

    differences: list[str] = field(default_factory=list)  # one line each
    compared: int = 0  # figures recomputed and compared
    not_recomputed: dict[str, int] = field(default_factory=dict)  # procedure -> runs
    # (run uid, metric) -> (stored figure, recomputed figure)
    figures: dict[tuple[str, str], tuple[float | None, float | None]] = field(
        default_factory=dict)


def figure(value: float | None, meta: dict[str, Any] | None) -> float | None:
    """The value a metric stands for: an overrun's is kept in ``meta.measured``."""
    if value is not None:
        return float(value)
    measured = meta.get("measured") if isinstance(meta, dict) else None
    return float(measured) if isinstance(measured, (int, float)) else None


def _differs(stored: float | None, again: float | None, rel_tol: float) -> bool:
    if stored is None or again is None:
        return (stored is None) != (again is None)
    if rel_tol == 0.0:
        return stored != again
    return not math.isclose(stored, again, rel_tol=rel_tol, abs_tol=1e-15)


def reanalysis_of(procedure: str) -> Callable[..., dict[str, Metric] | None] | None:
    """The re-analysis function of a run's procedure (``asc.power`` → table ``asc``)."""
    table = procedure.partition(".")[0]
    if table not in procedure_names():
        return None
    try:
        plugin = load_procedure(table)
    except ProcedureError:
        return None
    if plugin.reanalysis is None:
        return None
    module, _, name = plugin.reanalysis.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def compare_run(recording: Recording, run: RecordedRun, out: Comparison,
                rel_tol: float = 0.0) -> None:
    """Recompute one successful run's metrics and add a line per figure that differs from the
    recorded one (value or uncertainty), is missing, or is new."""
    procedure = str(run.run.get("procedure", ""))
    function = reanalysis_of(procedure)
    again = None
    try:
        again = function(recording, run) if function is not None else None
    except NotReanalysable as exc:
        out.differences.append(f"{run.label()}: {exc}")
        return
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError) as exc:
        # the recorded documents are not what the analysis reads (a field missing or of
        # another type): the run cannot be re-analysed, which is a difference, said in a line
        out.differences.append(f"{run.label()}: cannot be re-analysed from the recording "
                               f"({type(exc).__name__}: {exc})")
        return
    if again is None:
        out.not_recomputed[procedure] = out.not_recomputed.get(procedure, 0) + 1
        return
    for name, stored in run.metrics.items():
        mine = again.get(name)  # stored: a metric document, its value checked for type
        if mine is None:
            out.differences.append(f"{run.label()}: metric {name} stored "
                                   f"{figure(stored.get('value'), stored.get('meta'))!r}, "
                                   "not recomputed")
            continue
        old = figure(stored.get("value"), stored.get("meta"))
        new = figure(mine.value, mine.meta)
        out.figures[(run.uid, name)] = (old, new)
        out.compared += 1
        if _differs(old, new, rel_tol):
            out.differences.append(f"{run.label()}: metric {name} stored {old!r}, "
                                   f"recomputed {new!r}")
            continue
        old_u = stored.get("uncertainty")
        new_u = mine.uncertainty if mine.value is not None else None
        if _differs(old_u, new_u, rel_tol):
            out.differences.append(f"{run.label()}: metric {name} uncertainty stored "
                                   f"{old_u!r}, recomputed {new_u!r}")
    for name in sorted(set(again) - set(run.metrics)):
        out.differences.append(f"{run.label()}: metric {name} recomputed "
                               f"{figure(again[name].value, again[name].meta)!r}, not stored")


def compare_recording(folder: str | Path | ConfinedFolder, rel_tol: float = 0.0) -> Comparison:
    """Check the sample files' sha256, then re-analyse every successful run of a cassette (or
    a bundle's ``data/``)."""
    recording = Recording(folder)
    out = Comparison(recording.cassette.check_hashes())
    for run in recording.runs.values():
        if run.status == "success":
            compare_run(recording, run, out, rel_tol)
    return out
