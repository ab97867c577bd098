"""Intel SoC Watch beside a phase: launch ``socwatch`` for the phase, stop it with Ctrl-C, and
offer its package and DRAM power as a :class:`~hilbench.power.source.PowerSource`.

The command line follows "Intel SoC Watch Command-line Tool Options" (oneAPI 2023.1):
``-f power``, ``-t`` seconds, ``-s`` start delay, ``-n`` interval in ms, ``-r int`` (also write
the time-series trace), ``-o`` a path prefix. Reading the files it writes is
:mod:`hilbench.power.socwatch_files`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from hilbench import clock
from hilbench.lifeline import start_child
from hilbench.power.socwatch_files import (
    SocWatchError,
    SocWatchTrace,
    parse_trace_csv,
    to_timeline,
)
from hilbench.power.source import (
    Health,
    SampleBatch,
    SourceInfo,
    check_settings,
)
from hilbench.private_files import private_dir


class SocWatchUnavailable(SocWatchError):
    """The ``socwatch`` program is not installed or not on PATH."""


# --- running socwatch -------------------------------------------------------------------------


@dataclass
class SocWatchRun:
    """One ``socwatch`` collection beside a phase: build the command, launch, stop, find files.

    SoC Watch needs its kernel driver and normally root; run the agent accordingly.
    """

    output_dir: Path
    duration_s: float
    name: str = "socwatch"
    features: tuple[str, ...] = ("power",)
    interval_ms: int | None = None
    start_delay_s: float = 0.0
    executable: str = "socwatch"
    _process: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    launched_at: float | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.output_dir = Path(self.output_dir)
        if self.duration_s <= 0:
            raise ValueError(f"SoC Watch duration must be positive, got {self.duration_s} s")
        if not self.features:
            raise ValueError("SoC Watch needs at least one feature (e.g. 'power')")

    @property
    def prefix(self) -> Path:
        return self.output_dir / self.name

    @property
    def trace_path(self) -> Path:
        return self.output_dir / f"{self.name}_trace.csv"

    @property
    def summary_path(self) -> Path:
        return self.output_dir / f"{self.name}.csv"

    def command(self) -> list[str]:
        """The command line: power features, a fixed duration, a trace, files under output_dir."""
        cmd = [self.executable]
        for feature in self.features:
            cmd += ["-f", feature]
        cmd += ["-t", _seconds(self.duration_s)]
        if self.start_delay_s > 0:
            cmd += ["-s", _seconds(self.start_delay_s)]
        if self.interval_ms is not None:
            cmd += ["-n", str(int(self.interval_ms))]
        cmd += ["-r", "int", "-o", str(self.prefix)]
        return cmd

    def resolve_executable(self) -> str:
        found = shutil.which(self.executable)
        if found is None:
            raise SocWatchUnavailable(
                f"'{self.executable}' was not found on PATH, so CPU power was not measured with "
                "SoC Watch. Install Intel SoC Watch (with oneAPI VTune it is in "
                "/opt/intel/oneapi/vtune/latest/socwatch/x64/), load its driver, and put it on "
                "PATH or pass executable='/full/path/to/socwatch'"
            )
        return found

    def start(self) -> float:
        """Launch; returns the orchestrator-clock time collection is taken to start (the launch
        time plus the start delay; SoC Watch's own start-up latency is not measured)."""
        if self._process is not None:
            raise SocWatchError("this SoC Watch run was already started")
        executable = self.resolve_executable()
        private_dir(self.output_dir, parents=True)
        self.launched_at = clock.now()
        self._process = start_child(  # a killed orchestrator leaves no collection running
            [executable, *self.command()[1:]],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        return self.launched_at + self.start_delay_s

    def wait(self, timeout_s: float | None = None) -> None:
        """Wait for the collection to end; a failed run raises with socwatch's own last words."""
        if self._process is None:
            raise SocWatchError("this SoC Watch run was never started")
        try:
            output, _ = self._process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            command = " ".join(self.command())
            raise SocWatchError(
                f"socwatch did not finish within {timeout_s} s (command: {command})"
            ) from None
        if self._process.returncode != 0:
            tail = output.decode(errors="replace").strip().splitlines()[-5:]
            raise SocWatchError(
                f"socwatch exited with status {self._process.returncode} "
                f"(command: {' '.join(self.command())}): {' | '.join(tail) or 'no output'}"
            )

    def stop(self, timeout_s: float = 30.0) -> None:
        """End early the way Ctrl-C does (SIGINT: socwatch then writes its files), and wait."""
        if self._process is not None and self._process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._process.pid, signal.SIGINT)
        self.wait(timeout_s)

    def kill(self) -> None:
        """Last resort when the collection hangs; no files are expected afterwards."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


class SocWatchPowerSource:
    """SoC Watch as a :class:`~hilbench.power.source.PowerSource`: samples arrive at ``stop``.

    SoC Watch writes its files only when the collection ends, so ``read`` returns nothing while
    acquiring; ``stop`` ends the collection, parses the trace and maps it onto the timeline.
    """

    def __init__(self, run: SocWatchRun, domains: Iterable[str] | None = None) -> None:
        self.run = run
        self.domains = tuple(domains) if domains is not None else None
        self.info = SourceInfo(
            name="socwatch",
            unit="W",
            time_resolution_s=(run.interval_ms or 100) / 1000.0,
            domains=self.domains or (),
        )
        self._health = Health()
        self._collection_start: float | None = None
        self.trace: SocWatchTrace | None = None

    @classmethod
    def from_config(
        cls, resource: str | None, settings: Mapping[str, Any], *, visa_library: str = ""
    ) -> SocWatchPowerSource:
        """Build from a campaign's ``[[instruments]]`` entry (``driver = "socwatch"``); SoC
        Watch runs on the orchestrator's machine, one collection per measured phase."""
        check_settings(
            "SoC Watch", settings,
            {"output_dir", "interval_ms", "domains", "executable", "max_window_s"},
        )
        if resource is not None:
            raise ValueError("SoC Watch runs on this machine; it takes no resource")
        # Named here, created at the first collection: building the source (which a campaign
        # check does to validate settings) leaves nothing behind.
        output_dir = settings.get("output_dir") or Path(
            tempfile.gettempdir(), f"hilbench-socwatch-{uuid.uuid4().hex[:12]}"
        )
        run = SocWatchRun(
            output_dir=Path(output_dir),
            duration_s=float(settings.get("max_window_s", 3600.0)),  # stopped early by stop()
            interval_ms=settings.get("interval_ms"),
            executable=str(settings.get("executable", "socwatch")),
        )
        return cls(run, domains=settings.get("domains"))

    def configure(self) -> None:
        self.run.resolve_executable()

    def arm(self) -> None:
        self.run.resolve_executable()
        if self.run.launched_at is not None:  # one collection per phase: start a fresh one
            self.run = replace(self.run)

    def start(self) -> None:
        self._health = Health()
        self._collection_start = self.run.start()

    def read(self) -> SampleBatch:
        return SampleBatch.empty()

    def stop(self) -> SampleBatch:
        if self._collection_start is None:
            return SampleBatch.empty()
        start, self._collection_start = self._collection_start, None
        try:
            self.run.stop()
            self.trace = parse_trace_csv(self.run.trace_path)
        except SocWatchError as exc:
            self._health.messages.append(str(exc))
            raise
        first = next(iter(self.trace.series.values()))
        self.info = SourceInfo(
            name="socwatch",
            unit="W",
            time_resolution_s=float(np.median(first.t_end_s - first.t_start_s)),
            domains=self.domains or self.trace.domains,
        )
        return to_timeline(self.trace, start, self.domains)

    def health(self) -> Health:
        return self._health

    def close(self) -> None:
        self.run.kill()
