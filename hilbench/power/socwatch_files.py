"""Intel SoC Watch's files: read its summary and trace and turn their package and DRAM power
into samples on the orchestrator timeline. Running SoC Watch is :mod:`hilbench.power.socwatch`.

Where the format comes from. Intel documents the command line in "Intel SoC Watch User's Guide"
(Linux/Android v2.6.1, 2018) and "Intel SoC Watch Command-line Tool Options" (oneAPI 2023.1):
``-f/--feature`` (here ``power``), ``-t/--time`` seconds, ``-s/--startdelay`` seconds,
``-n/--interval`` sampling interval in ms, ``-r/--result int`` (also write the time-series
"trace"), ``-o/--output`` a path prefix. A collection writes the summary ``<prefix>.csv`` and,
with ``-r int``, ``<prefix>_trace.csv``. The file layouts below follow public scripts and notes
that read real SoC Watch 2020-2024 output (NeuroBench-era energy harnesses, SOF CI scripts,
trace splitters):

* Summary: a free-text header, then titled tables separated by blank lines. Power tables are
  titled ``Package Power Summary: Average Rate and Total`` / ``DRAM Power Summary: …``, have a
  header row with ``Average Rate (mW)`` and ``Total (mJ)``, a row of dashes, and rows such as
  ``CPU/Package_0 , Power , 38500.00 , 38500.00`` (fields padded with spaces).
* Trace: a free-text header, then sections: a title line ``<Metric> - <Component>`` (for example
  ``Core C-State (OS) - CPU/Package_0/Core_3``), a header line beginning ``Sample #`` with
  ``Continuous Time (usec)`` and ``Duration (ms)``, then one row per sample. ``Continuous Time``
  is the *end* of each sample interval measured from the start of collection (a public trace
  has sample 1 at 313443.20 usec with duration 313.44 ms), so the interval is
  ``[end - duration, end]``.

What was uncertain, and how the parser copes: the exact power section titles in the trace
(``Package Power - CPU/Package_0`` is assumed; any title whose metric mentions "power" and whose
component is ``CPU/Package_N`` or ``DRAM[/DRAM]_N`` is taken), whether power columns hold power
(mW) or energy per sample (mJ) — the unit in the column header decides, energy being divided by
the duration — and the DRAM component name. Titles with a ``: qualifier`` suffix are used only
when no unqualified section exists for that component. A file that does not parse fails with
the file name and line number; a file without package or DRAM power fails saying so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hilbench.power.source import PowerSourceError, SampleBatch

_TIME_UNITS_S = {
    "usec": 1e-6,
    "us": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "msec": 1e-3,
    "sec": 1.0,
    "s": 1.0,
}
_POWER_UNITS_W = {"w": 1.0, "mw": 1e-3, "uw": 1e-6, "µw": 1e-6}
_ENERGY_UNITS_J = {"j": 1.0, "mj": 1e-3, "uj": 1e-6, "µj": 1e-6}
_PACKAGE = re.compile(r"^CPU/Package_(\d+)$", re.IGNORECASE)
_DRAM = re.compile(r"^DRAM(?:/DRAM)?(?:_(\d+))?$", re.IGNORECASE)
_UNIT = re.compile(r"\(([^)]+)\)\s*$")
_JOIN_TOLERANCE_S = 1e-4  # consecutive samples closer than this count as contiguous
_COVER_TOLERANCE_S = 1e-3  # a resampled domain may start / end this much inside the grid


class SocWatchError(PowerSourceError):
    """SoC Watch could not run, or its output could not be read; the message says where."""


def component_domain(component: str) -> str | None:
    """``CPU/Package_1`` → ``package-1``, ``DRAM/DRAM_0`` → ``dram-0``; None for anything else."""
    component = component.strip()
    if match := _PACKAGE.match(component):
        return f"package-{match.group(1)}"
    if match := _DRAM.match(component):
        return f"dram-{match.group(1) or 0}"
    return None


# --- reading files ----------------------------------------------------------------------------


def _read_lines(path: Path) -> list[str]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SocWatchError(f"cannot read SoC Watch file {path}: {exc.strerror or exc}") from exc
    encoding = "utf-16" if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig"
    try:
        return raw.decode(encoding).splitlines()
    except UnicodeDecodeError as exc:
        raise SocWatchError(
            f"{path}: not a SoC Watch CSV (undecodable byte at offset {exc.start})"
        ) from None


def _fields(line: str) -> list[str]:
    values = [f.strip() for f in line.split(",")]
    while values and values[-1] == "":
        values.pop()
    return values


def _unit_of(column: str) -> str | None:
    match = _UNIT.search(column)
    return match.group(1).strip().lower() if match else None


def _number(path: Path, lineno: int, text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise SocWatchError(f"{path}:{lineno}: {what} is {text!r}, not a number") from None


@dataclass(frozen=True)
class SocWatchSeries:
    """Average power per sample interval; times in seconds from the start of collection."""

    domain: str
    section: str  # the section title it came from
    t_start_s: np.ndarray
    t_end_s: np.ndarray
    watts: np.ndarray

    @property
    def joules(self) -> float:
        return float(np.sum(self.watts * (self.t_end_s - self.t_start_s)))


@dataclass(frozen=True)
class SocWatchTrace:
    """The package / DRAM power series of one ``*_trace.csv``, in the file's time base."""

    path: Path
    series: dict[str, SocWatchSeries]
    ignored_sections: tuple[str, ...] = field(default=())

    @property
    def domains(self) -> tuple[str, ...]:
        return tuple(self.series)


def _is_header(line: str) -> bool:
    return line.lstrip().lower().startswith("sample #")


def _split_title(title: str) -> tuple[str, str, str]:
    """``Package Power - CPU/Package_0 : Rate`` → (metric, component, qualifier)."""
    metric, _, rest = title.partition(" - ")
    component, _, qualifier = rest.partition(" : ")
    return metric.strip(), component.strip(), qualifier.strip()


def _power_columns(columns: list[str], where: str) -> tuple[int, int | None, int]:
    """The section's time, duration (if any) and first power or energy column."""
    time_col = dur_col = value_col = None
    for index, column in enumerate(columns):
        lowered, unit = column.lower(), _unit_of(column)
        if lowered.startswith("continuous time") and unit in _TIME_UNITS_S:
            time_col = index
        elif lowered.startswith("duration") and unit in _TIME_UNITS_S:
            dur_col = index
        elif value_col is None and unit in {**_POWER_UNITS_W, **_ENERGY_UNITS_J}:
            value_col = index
    if time_col is None:
        raise SocWatchError(f"{where} has no 'Continuous Time (<unit>)' column: {columns}")
    if value_col is None:
        raise SocWatchError(f"{where} has no power (W/mW) or energy (J/mJ) column: {columns}")
    return time_col, dur_col, value_col


def _section_rows(
    path: Path, title: str, columns: list[str], rows: list[tuple[int, str]],
    cols: tuple[int, int | None, int],
) -> tuple[list[float], list[float], list[float]]:
    """Each row's end time (s), duration (s; none without a duration column) and raw value."""
    time_col, dur_col, value_col = cols
    time_scale = _TIME_UNITS_S[_unit_of(columns[time_col]) or ""]
    dur_scale = _TIME_UNITS_S[_unit_of(columns[dur_col]) or ""] if dur_col is not None else 0.0
    ends: list[float] = []
    durations: list[float] = []
    values: list[float] = []
    for lineno, line in rows:
        values_here = _fields(line)
        if len(values_here) != len(columns):
            raise SocWatchError(
                f"{path}:{lineno}: section {title!r} expects {len(columns)} values "
                f"({', '.join(columns)}), found {len(values_here)}: {line.strip()!r}"
            )
        ends.append(_number(path, lineno, values_here[time_col], columns[time_col]) * time_scale)
        if dur_col is not None:
            durations.append(
                _number(path, lineno, values_here[dur_col], columns[dur_col]) * dur_scale
            )
        values.append(_number(path, lineno, values_here[value_col], columns[value_col]))
        if len(ends) > 1 and ends[-1] <= ends[-2]:
            raise SocWatchError(
                f"{path}:{lineno}: time goes backwards in section {title!r} "
                f"({ends[-2]:.6f} s then {ends[-1]:.6f} s)"
            )
    return ends, durations, values


def _parse_power_section(
    path: Path, title: str, header_lineno: int, header: str, rows: list[tuple[int, str]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    columns = _fields(header)
    cols = _power_columns(columns, f"{path}:{header_lineno}: section {title!r}")
    if not rows:
        raise SocWatchError(f"{path}:{header_lineno}: section {title!r} has no samples")
    ends, durations, values = _section_rows(path, title, columns, rows, cols)
    t_end = np.asarray(ends)
    if cols[1] is not None:
        t_start = t_end - np.asarray(durations)
    else:  # without durations, each interval runs from the previous sample (or collection start)
        t_start = np.concatenate([[0.0], t_end[:-1]])
    span = t_end - t_start
    if np.any(span <= 0):
        bad = rows[int(np.argmax(span <= 0))][0]
        raise SocWatchError(f"{path}:{bad}: sample in section {title!r} has no duration")
    raw = np.asarray(values)
    value_unit = _unit_of(columns[cols[2]]) or ""
    if value_unit in _POWER_UNITS_W:
        watts = raw * _POWER_UNITS_W[value_unit]
    else:
        watts = raw * _ENERGY_UNITS_J[value_unit] / span
    return t_start, t_end, watts


def parse_trace_csv(path: str | Path) -> SocWatchTrace:
    """Package and DRAM power per sample from a SoC Watch ``*_trace.csv`` (``-r int``)."""
    path = Path(path)
    lines = _read_lines(path)
    sections_seen: list[str] = []
    found: dict[str, tuple[bool, SocWatchSeries]] = {}
    ignored: list[str] = []
    i = 0
    while i < len(lines):
        if not (lines[i].strip() and i + 1 < len(lines) and _is_header(lines[i + 1])):
            i += 1
            continue
        title, header, header_lineno = lines[i].strip(), lines[i + 1], i + 2
        i += 2
        rows: list[tuple[int, str]] = []
        while i < len(lines) and lines[i].strip():
            if i + 1 < len(lines) and _is_header(lines[i + 1]):
                break  # the next section's title
            rows.append((i + 1, lines[i]))
            i += 1
        sections_seen.append(title)
        metric, component, qualifier = _split_title(title)
        domain = component_domain(component)
        if domain is None or "power" not in metric.lower():
            continue
        t_start, t_end, watts = _parse_power_section(path, title, header_lineno, header, rows)
        series = SocWatchSeries(domain, title, t_start, t_end, watts)
        previous = found.get(domain)
        if previous is None or (previous[0] and not qualifier):
            if previous is not None:
                ignored.append(previous[1].section)
            found[domain] = (bool(qualifier), series)
        else:
            ignored.append(title)

    if not sections_seen:
        raise SocWatchError(
            f"{path}: no SoC Watch trace sections (a title line followed by a 'Sample #' header); "
            "is this the summary CSV? The trace is written as <name>_trace.csv with '-r int'"
        )
    if not found:
        shown = "; ".join(sections_seen[:5]) + ("; …" if len(sections_seen) > 5 else "")
        raise SocWatchError(
            f"{path}: no package or DRAM power section (sections: {shown}); collect with '-f power'"
        )
    ordered = dict(sorted(((d, s) for d, (_, s) in found.items()), key=lambda kv: _order(kv[0])))
    return SocWatchTrace(path=path, series=ordered, ignored_sections=tuple(ignored))


def _order(domain: str) -> tuple[int, str]:
    return (0 if domain.startswith("package-") else 1, domain)


@dataclass(frozen=True)
class SocWatchSummary:
    """Average power (W) and total energy (J) per domain from a SoC Watch summary CSV."""

    path: Path
    average_w: dict[str, float]
    total_j: dict[str, float]


def _summary_rows(path: Path, lines: list[str], i: int, title: str, columns: list[str],
                  avg: tuple[Any, Any], tot: tuple[Any, Any], average: dict[str, float],
                  total: dict[str, float]) -> int:
    """Read one summary table's rows from line index ``i`` into ``average`` (W) and ``total``
    (J) per domain; the index after the table."""
    (avg_col, avg_unit), (tot_col, tot_unit) = avg, tot
    while i < len(lines) and lines[i].strip():
        lineno, values = i + 1, _fields(lines[i])
        i += 1
        if values and set(values[0]) <= {"-"}:
            continue  # the row of dashes under the header
        if len(values) != len(columns):
            raise SocWatchError(
                f"{path}:{lineno}: table {title!r} expects {len(columns)} values "
                f"({', '.join(columns)}), found {len(values)}: {lines[lineno - 1].strip()!r}"
            )
        domain = component_domain(values[0])
        if domain is None:
            continue
        average[domain] = (
            _number(path, lineno, values[avg_col], columns[avg_col]) * _POWER_UNITS_W[avg_unit]
        )
        if tot_col is not None and tot_unit in _ENERGY_UNITS_J:
            total[domain] = (
                _number(path, lineno, values[tot_col], columns[tot_col])
                * _ENERGY_UNITS_J[tot_unit]
            )
    return i


def parse_summary_csv(path: str | Path) -> SocWatchSummary:
    """Average package / DRAM power from the ``… Power Summary: Average Rate and Total`` tables."""
    path = Path(path)
    lines = _read_lines(path)
    average: dict[str, float] = {}
    total: dict[str, float] = {}
    i = 0
    while i < len(lines):
        if "power summary" not in lines[i].lower():
            i += 1
            continue
        title, i = lines[i].strip(), i + 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i >= len(lines):
            break
        header_lineno, columns = i + 1, _fields(lines[i])
        i += 1
        avg_col = next((k for k, c in enumerate(columns) if c.lower().startswith("average")), None)
        tot_col = next((k for k, c in enumerate(columns) if c.lower().startswith("total")), None)
        avg_unit = _unit_of(columns[avg_col]) if avg_col is not None else None
        tot_unit = _unit_of(columns[tot_col]) if tot_col is not None else None
        if avg_unit not in _POWER_UNITS_W:
            raise SocWatchError(
                f"{path}:{header_lineno}: table {title!r} has no 'Average Rate (mW|W)' column: "
                f"{columns}"
            )
        i = _summary_rows(path, lines, i, title, columns, (avg_col, avg_unit), (tot_col, tot_unit),
                          average, total)
    if not average:
        raise SocWatchError(
            f"{path}: no package or DRAM row in a '… Power Summary: Average Rate and Total' "
            "table; collect with '-f power'"
        )
    order = sorted(average, key=_order)
    return SocWatchSummary(
        path=path,
        average_w={d: average[d] for d in order},
        total_j={d: total[d] for d in order if d in total},
    )


# --- onto the orchestrator timeline -----------------------------------------------------------


def domain_timelines(trace: SocWatchTrace, collection_start: float) -> dict[str, SampleBatch]:
    """Each domain's samples at their interval starts (each covers ``[t, t + interval]``, like
    a meter reading), shifted onto the orchestrator clock.

    ``collection_start`` is the orchestrator-clock time at which SoC Watch started collecting
    (time zero of the file).
    """
    return {
        domain: SampleBatch(
            collection_start + s.t_start_s, np.array(s.watts, dtype=float)
        )
        for domain, s in trace.series.items()
    }


def _mean_power_over(series: SocWatchSeries, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Energy-preserving resampling of a piecewise-constant power series onto other intervals."""
    edges = np.concatenate([series.t_start_s[:1], series.t_end_s])
    # Durations are printed to 0.01 ms, so consecutive intervals meet only to that precision.
    if np.any(np.abs(series.t_start_s[1:] - series.t_end_s[:-1]) > _JOIN_TOLERANCE_S):
        raise SocWatchError(
            f"section {series.section!r} has gaps between samples; cannot resample it"
        )
    cumulative = np.concatenate(
        [[0.0], np.cumsum(series.watts * (series.t_end_s - series.t_start_s))]
    )
    if starts[0] < edges[0] - _COVER_TOLERANCE_S or ends[-1] > edges[-1] + _COVER_TOLERANCE_S:
        raise SocWatchError(
            f"section {series.section!r} covers {edges[0]:.6f}-{edges[-1]:.6f} s, not the "
            f"{starts[0]:.6f}-{ends[-1]:.6f} s of the reference domain"
        )
    return (np.interp(ends, edges, cumulative) - np.interp(starts, edges, cumulative)) / (
        ends - starts
    )


def to_timeline(
    trace: SocWatchTrace, collection_start: float, domains: Iterable[str] | None = None
) -> SampleBatch:
    """Summed power of ``domains`` (default: all package and DRAM domains) on the orchestrator
    clock, on the sample grid of the first domain; the others are resampled preserving energy."""
    chosen = list(domains) if domains is not None else list(trace.series)
    missing = [d for d in chosen if d not in trace.series]
    if missing or not chosen:
        raise SocWatchError(
            f"{trace.path}: domain(s) {missing or chosen} not in the trace "
            f"(it has {', '.join(trace.series)})"
        )
    grid = trace.series[chosen[0]]
    watts = np.array(grid.watts, dtype=float)
    for domain in chosen[1:]:
        watts += _mean_power_over(trace.series[domain], grid.t_start_s, grid.t_end_s)
    return SampleBatch(collection_start + grid.t_start_s, watts)
