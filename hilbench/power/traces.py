"""Read power traces and phase tables captured by other software (a DMM logger, a script).

``S.csv`` (samples): a header, then ``time_s,watts`` or ``time_s,amps`` (amps are turned into
watts with the supply voltage the user gives). ``time_s`` is when each reading's integration
began, in seconds on the same clock as the phase table, strictly increasing.

``P.csv`` (phases): a header, then ``phase,start_s,end_s,inferences`` with ``phase`` ``idle``
or ``active``; an optional ``mean_execution_s`` column gives the device timers' mean
execution time for an active window. Extra columns are ignored. Blank lines and lines starting
with ``#`` are skipped in both files.

Every problem is reported as a :class:`TraceFormatError` naming the file and line.

Keysight BenchVue / PathWave BenchVue DMM exports are not read: their CSV layout could not be
confirmed from a published description, and guessing it would misread files silently.
Export ``time_s`` and the reading as two columns instead.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hilbench.power.estimators import PHASES, PhaseWindow


class TraceFormatError(ValueError):
    """A trace or phase file could not be used; the message names the file and line."""


@dataclass(frozen=True)
class PowerTrace:
    """Readings from a file, in watts, with where they came from."""

    t: np.ndarray
    watts: np.ndarray
    path: Path
    column: str  # "watts" or "amps"
    volts: float | None

    @property
    def interval_s(self) -> float:
        return float(np.median(np.diff(self.t)))

    @property
    def start(self) -> float:
        return float(self.t[0])

    @property
    def end(self) -> float:
        """End of the last reading's interval (its time plus one typical interval)."""
        return float(self.t[-1]) + self.interval_s


def _rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line number, cells) of non-blank, non-comment lines; the header comes first."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise TraceFormatError(f"{path}: not a UTF-8 text file ({exc.reason})") from None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        cells = next(csv.reader([line]))
        yield number, [c.strip() for c in cells]


def _header(path: Path, rows: Iterator[tuple[int, list[str]]]) -> tuple[int, dict[str, int]]:
    try:
        number, cells = next(rows)
    except StopIteration:
        raise TraceFormatError(f"{path}: file is empty (expected a header line)") from None
    return number, {name.lower(): i for i, name in enumerate(cells)}


def _number(path: Path, line: int, column: str, cells: list[str], index: int) -> float:
    if index >= len(cells) or cells[index] == "":
        raise TraceFormatError(f"{path} line {line}: no value in column {column!r}")
    text = cells[index]
    try:
        value = float(text)
    except ValueError:
        raise TraceFormatError(f"{path} line {line}: {column} {text!r} is not a number") from None
    if not math.isfinite(value):
        raise TraceFormatError(f"{path} line {line}: {column} {text!r} is not a finite number")
    return value


def _reading_column(path: Path, header_line: int, columns: dict[str, int],
                    volts: float | None) -> str:
    """``watts`` as is, or ``amps`` with a positive supply voltage to multiply by."""
    if "watts" in columns:
        if volts is not None:
            raise TraceFormatError(
                f"{path}: readings are already in watts; --volts applies to an 'amps' column only"
            )
        return "watts"
    if "amps" in columns:
        if volts is None:
            raise TraceFormatError(
                f"{path}: readings are in amps; give the supply voltage (--volts) to get watts"
            )
        if not (math.isfinite(volts) and volts > 0):
            raise TraceFormatError(f"supply voltage must be a positive number, got {volts} V")
        return "amps"
    raise TraceFormatError(
        f"{path} line {header_line}: need a 'watts' or 'amps' column "
        f"(found: {', '.join(columns)})"
    )


def read_samples_csv(path: str | Path, *, volts: float | None = None) -> PowerTrace:
    """Readings from ``path``; a ``watts`` column is used as is, an ``amps`` one needs ``volts``."""
    path = Path(path)
    rows = _rows(path)
    header_line, columns = _header(path, rows)
    if "time_s" not in columns:
        raise TraceFormatError(
            f"{path} line {header_line}: no 'time_s' column (found: {', '.join(columns)})"
        )
    column = _reading_column(path, header_line, columns, volts)
    t_index, v_index = columns["time_s"], columns[column]
    times: list[float] = []
    values: list[float] = []
    previous_line = header_line
    for line, cells in rows:
        t = _number(path, line, "time_s", cells, t_index)
        if times and t <= times[-1]:
            raise TraceFormatError(
                f"{path} line {line}: time_s {t:g} is not after {times[-1]:g} "
                f"(line {previous_line}); times must increase"
            )
        times.append(t)
        values.append(_number(path, line, column, cells, v_index))
        previous_line = line
    if len(times) < 2:
        raise TraceFormatError(f"{path}: {len(times)} reading(s); need at least two")
    watts = np.asarray(values, dtype=np.float64)
    if column == "amps":
        assert volts is not None
        watts = watts * volts
    return PowerTrace(
        t=np.asarray(times, dtype=np.float64), watts=watts, path=path, column=column, volts=volts
    )


def read_phases_csv(path: str | Path, trace: PowerTrace | None = None) -> list[PhaseWindow]:
    """Phase windows from ``path``: ``phase,start_s,end_s,inferences[,mean_execution_s]``.

    A window may reach past the readings (a log from other software often starts a little
    after the window opens): the analysis uses the readings that cover it and refuses only a
    window covered less than its minimum (``--min-coverage``). ``trace`` is accepted for
    callers that pass it and not used.
    """
    path = Path(path)
    rows = _rows(path)
    header_line, columns = _header(path, rows)
    missing = [c for c in ("phase", "start_s", "end_s", "inferences") if c not in columns]
    if missing:
        raise TraceFormatError(
            f"{path} line {header_line}: missing column(s) {', '.join(missing)} "
            f"(found: {', '.join(columns)})"
        )
    windows: list[PhaseWindow] = []
    for line, cells in rows:
        index = columns["phase"]
        phase = cells[index].lower() if index < len(cells) else ""
        if phase not in PHASES:
            raise TraceFormatError(
                f"{path} line {line}: phase {phase!r} is not one of {', '.join(PHASES)}"
            )
        start = _number(path, line, "start_s", cells, columns["start_s"])
        end = _number(path, line, "end_s", cells, columns["end_s"])
        if end <= start:
            raise TraceFormatError(
                f"{path} line {line}: end_s {end:g} is not after start_s {start:g}"
            )
        inferences = _inferences(path, line, cells, columns["inferences"])
        mean_exec = None
        if "mean_execution_s" in columns:
            index = columns["mean_execution_s"]
            if index < len(cells) and cells[index] != "":
                mean_exec = _number(path, line, "mean_execution_s", cells, index)
                if mean_exec <= 0:
                    raise TraceFormatError(
                        f"{path} line {line}: mean_execution_s {mean_exec:g} must be positive"
                    )
        windows.append(PhaseWindow(phase, start, end, inferences, mean_exec))
    if not windows:
        raise TraceFormatError(f"{path}: no phase windows after the header")
    return windows


def _inferences(path: Path, line: int, cells: list[str], index: int) -> int:
    if index >= len(cells) or cells[index] == "":
        return 0
    value = _number(path, line, "inferences", cells, index)
    if value < 0 or value != int(value):
        raise TraceFormatError(
            f"{path} line {line}: inferences {cells[index]!r} is not a whole number >= 0"
        )
    return int(value)
