"""Instrument conformance: what every power-source plugin must do, checked against a counterpart.

Call :func:`check_instrument` (or :func:`assert_conformant` in a test) with a factory that
builds the source (unconfigured, as a campaign does) against a simulated or emulated
counterpart, and optionally a *stimulus* that makes the measured device do something during
the acquisition (change state, toggle its marker pin) and says how many marker edges it made.
The checks follow :class:`hilbench.power.source.PowerSource`'s contract:

- life cycle: ``arm`` before ``configure`` is refused with ``PowerSourceError``; configure →
  arm → start → read … → stop works twice in a row (re-arming); ``read`` after ``stop`` is
  empty; ``close`` twice is harmless; use after ``close`` is refused;
- the samples: finite, time stamps strictly increasing across every batch, spaced as the
  declared ``time_resolution_s``, covering the acquisition from ``start`` to ``stop``
  without gaps;
- health: a clean run reports no problem;
- declarations: accuracy stated (a relative or absolute part > 0); a unit that becomes watts;
  the simulated flag honest (set, with a one-line description, exactly when the counterpart
  is simulated);
- markers (a :class:`~hilbench.power.markers.MarkerSource` with marker channels configured):
  sample period and marker latency declared, edges only on declared channels, in order, inside
  the samples, and as many as the stimulus made.

Third-party instrument authors run the same function against their own simulator.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hilbench.clock import now
from hilbench.power.align import window_coverage
from hilbench.power.markers import MarkerEdges, MarkerSource
from hilbench.power.source import PowerSource, PowerSourceError, SampleBatch

Stimulus = Callable[[], "int | None"]


@dataclass
class ConformanceReport:
    """Each check by name: None when it passed, else what was wrong."""

    instrument: str = ""
    checks: dict[str, str | None] = field(default_factory=dict)
    samples: int = 0
    edges: int = 0

    def passed(self, name: str) -> None:
        self.checks.setdefault(name, None)

    def failed(self, name: str, why: str) -> None:
        if self.checks.get(name) is None:
            self.checks[name] = why

    def expect(self, name: str, ok: bool, why: str) -> None:
        if ok:
            self.passed(name)
        else:
            self.failed(name, why)

    @property
    def failures(self) -> dict[str, str]:
        return {k: v for k, v in self.checks.items() if v is not None}

    @property
    def ok(self) -> bool:
        return not self.failures


@dataclass
class _Run:
    batches: list[SampleBatch]
    edges: list[MarkerEdges]
    t_start: float
    t_stop: float
    expected_edges: int | None


def check_instrument(make_source: Callable[[], PowerSource], *, expect_simulated: bool,
                     acquire_s: float = 0.4, stimulus: Stimulus | None = None,
                     read_every_s: float = 0.05) -> ConformanceReport:
    """Run every check (see the module); the report names each failure."""
    report = ConformanceReport()
    source = make_source()
    try:
        _declarations(source, report, expect_simulated, before_configure=True)
        report.expect("arm before configure is refused", _refused(source.arm),
                      "arm() before configure() did not raise PowerSourceError")
        source.configure()
        report.instrument = source.info.name
        _declarations(source, report, expect_simulated, before_configure=False)
        first = _acquire(source, acquire_s, stimulus, read_every_s)
        _samples(source, first, report)
        _markers(source, first, report)
        report.expect("read after stop is empty", len(source.read()) == 0,
                      "read() after stop() returned samples")
        second = _acquire(source, min(acquire_s, 0.2), None, read_every_s)
        n = sum(len(b) for b in second.batches)
        report.expect("a second acquisition works", n > 0 and source.health().ok,
                      f"re-armed acquisition gave {n} samples, health {source.health()}")
    except PowerSourceError as exc:
        report.failed("life cycle", f"PowerSourceError: {exc}")
    finally:
        try:
            source.close()
            source.close()
            report.passed("close twice is harmless")
        except Exception as exc:  # the check reports it instead of raising
            report.failed("close twice is harmless", f"{type(exc).__name__}: {exc}")
    report.expect("use after close is refused", _refused(source.arm),
                  "arm() after close() did not raise PowerSourceError")
    return report


def assert_conformant(make_source: Callable[[], PowerSource], **kwargs: Any) -> ConformanceReport:
    """:func:`check_instrument`, raising AssertionError that lists every failed check."""
    report = check_instrument(make_source, **kwargs)
    if not report.ok:
        lines = [f"- {name}: {why}" for name, why in report.failures.items()]
        raise AssertionError(f"{report.instrument or 'instrument'} is not conformant:\n"
                             + "\n".join(lines))
    return report


def _refused(action: Callable[[], object]) -> bool:
    try:
        action()
    except PowerSourceError:
        return True
    except Exception:
        return False
    return False


def _declarations(source: PowerSource, report: ConformanceReport, expect_simulated: bool,
                  *, before_configure: bool) -> None:
    info = source.info
    report.expect("accuracy stated", info.accuracy_relative > 0 or info.accuracy_absolute > 0,
                  f"{info.name} states no accuracy (relative and absolute are 0)")
    report.expect("unit becomes watts",
                  info.unit == "W" or (info.unit == "A" and bool(info.supply_voltage_v)),
                  f"unit {info.unit!r} without a supply voltage cannot become watts")
    report.expect("time resolution declared", info.time_resolution_s > 0,
                  f"time_resolution_s is {info.time_resolution_s!r}")
    if _records_markers(source):
        report.expect("marker timing declared",
                      info.sample_period_s is not None and info.marker_latency_s is not None,
                      "a source recording markers must state sample_period_s and "
                      "marker_latency_s")
    if before_configure:
        return
    honest = info.simulated == expect_simulated and (not info.simulated or bool(info.simulation))
    report.expect("simulated flag honest", honest,
                  f"simulated={info.simulated!r} (simulation={info.simulation!r}) but the "
                  f"counterpart {'is' if expect_simulated else 'is not'} simulated")


def _records_markers(source: PowerSource) -> bool:
    """A marker source with at least one marker input configured."""
    return isinstance(source, MarkerSource) and bool(source.info.marker_channels)


def _acquire(source: PowerSource, acquire_s: float, stimulus: Stimulus | None,
             read_every_s: float) -> _Run:
    batches: list[SampleBatch] = []
    edges: list[MarkerEdges] = []
    source.arm()
    t_start = now()
    source.start()
    expected: int | None = None
    deadline = time.monotonic() + acquire_s
    stimulated = stimulus is None
    while time.monotonic() < deadline:
        time.sleep(read_every_s)
        batches.append(source.read())
        if _records_markers(source):
            edges.extend(source.markers())
        if not stimulated and time.monotonic() > deadline - acquire_s * 0.75:
            stimulated = True
            assert stimulus is not None
            expected = stimulus()
    t_stop = now()
    batches.append(source.stop())
    if _records_markers(source):
        edges.extend(source.markers())
    return _Run(batches, edges, t_start, t_stop, expected)


def _samples(source: PowerSource, run: _Run, report: ConformanceReport) -> None:
    kept = [b for b in run.batches if len(b)]
    report.samples = sum(len(b) for b in kept)
    if not kept:
        report.failed("samples arrive", "no samples in the acquisition")
        return
    report.passed("samples arrive")
    t = np.concatenate([b.t for b in kept])
    values = np.concatenate([b.values for b in kept])
    report.expect("values finite", bool(np.all(np.isfinite(values))),
                  f"{int(np.sum(~np.isfinite(values)))} non-finite values")
    report.expect("timestamps increase", bool(np.all(np.isfinite(t)) and np.all(np.diff(t) > 0)),
                  "time stamps are not finite and strictly increasing across batches")
    resolution = source.info.time_resolution_s
    if len(t) >= 3:
        spacing = float(np.median(np.diff(t)))
        report.expect("spacing as declared", math.isclose(spacing, resolution, rel_tol=0.01),
                      f"median spacing {spacing:.6g} s, declared {resolution:.6g} s")
    start_u = getattr(source, "t0_uncertainty_s", None) or 0.0
    slack = max(0.05, 3 * resolution) + start_u
    report.expect("samples cover the acquisition",
                  t[0] <= run.t_start + slack and t[-1] + resolution >= run.t_stop - slack
                  and (len(t) < 2 or window_coverage(t, float(t[0]), float(t[-1])) > 0.999),
                  f"samples span {t[0] - run.t_start:+.4f}..{t[-1] - run.t_stop:+.4f} s around "
                  f"start..stop (allowed ±{slack:.3f} s), coverage "
                  f"{window_coverage(t, float(t[0]), float(t[-1])) if len(t) > 1 else 0:.4f}")
    health = source.health()
    report.expect("clean run is healthy", health.ok, f"health after a clean run: {health}")


def _markers(source: PowerSource, run: _Run, report: ConformanceReport) -> None:
    if not _records_markers(source):
        return
    channels = set(source.info.marker_channels)
    stray = sorted({e.channel for e in run.edges} - channels)
    report.expect("markers on declared channels", not stray, f"edges on undeclared {stray}")
    total = 0
    for channel in channels:
        joined = MarkerEdges.concat(run.edges, channel)
        total += len(joined)
        inside = bool(np.all((joined.index >= 0) & (joined.index <= report.samples)))
        report.expect("markers in range", inside,
                      f"{channel}: edge indices {joined.index.tolist()[:8]} outside "
                      f"0..{report.samples}")
    report.edges = total
    if run.expected_edges is not None:
        report.expect("every marker edge recorded", total == run.expected_edges,
                      f"the stimulus made {run.expected_edges} edges, {total} were recorded")
