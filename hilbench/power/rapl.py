"""CPU package and DRAM energy from Linux RAPL, read through ``/sys/class/powercap``.

Layout (Linux ``Documentation/power/powercap/powercap.rst``): the ``intel-rapl`` control type has
one top-level zone per package, ``intel-rapl:N`` named ``package-N`` (``package-N-die-M`` on
multi-die parts), with subzones ``intel-rapl:N:M`` named ``core``, ``uncore`` and ``dram``. A
top-level ``psys`` zone (platform) may sit beside the packages. ``/sys/class/powercap`` lists every
zone flat (``intel-rapl:0:2`` as well as ``intel-rapl:0/intel-rapl:0:2``); both views are read and
de-duplicated by zone id. Each zone has ``name``, ``energy_uj`` (a wrapping counter) and
``max_energy_range_uj`` (the value it wraps at).

Which zones are summed, and why:

* every ``package-*`` zone, once;
* every ``dram`` zone, once: DRAM is a subzone in sysfs but its energy is *not* part of the package;
* never ``core`` / ``uncore``: they are inside the package energy and would be counted twice;
* never ``psys`` unless asked (``include_psys=True``): it covers the whole platform, packages and
  DRAM included, so adding it to them double counts; asked for alone it is reported as ``psys``;
* never the ``intel-rapl-mmio`` control type: on laptops it exposes the same package counter a
  second time through MMIO.

Wraparound: a counter that went backwards has wrapped once, so ``max_energy_range_uj`` is added.
Two wraps between snapshots cannot be told apart from one, so snapshots must be closer together
than ``max_energy_range_uj / max power`` (about 262 kJ / 200 W ≈ 22 minutes on a typical desktop
package; :meth:`RaplCounters.wrap_period_s` computes it). The polling source below samples far more
often than that.

Since Linux 5.10 (CVE-2020-8694, "Platypus") ``energy_uj`` is readable by root only; discovery
checks every counter and raises :class:`RaplUnavailable` naming the file and the fix, so a result
says "power not measured, because …" rather than carrying a made-up number.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hilbench import clock
from hilbench.power.source import (
    Health,
    PowerSourceError,
    SampleBatch,
    SourceInfo,
    check_settings,
)

DEFAULT_POWERCAP_ROOT = Path("/sys/class/powercap")
_ZONE_DIR = re.compile(r"^intel-rapl(:\d+)+$")
_MMIO_DIR = re.compile(r"^intel-rapl-mmio(:\d+)+$")


class RaplUnavailable(PowerSourceError):
    """RAPL energy cannot be read on this machine; the message says which file, why and the fix."""


@dataclass(frozen=True)
class RaplZone:
    """One powercap zone whose counter is summed (see the module docstring for which ones)."""

    domain: str  # e.g. "package-0", "dram-0", "psys"
    zone_id: str  # e.g. "intel-rapl:0:2"
    energy_path: Path
    max_energy_range_uj: int


@dataclass(frozen=True)
class RaplSnapshot:
    """Raw counter values (µJ) per domain, taken at ``t`` on :func:`hilbench.clock.now`."""

    t: float
    counters_uj: dict[str, int]


def _read_text(path: Path) -> str:
    """The one place a sysfs file is read (a seam for tests that cannot drop root privileges)."""
    return path.read_text()


def _permission_message(path: Path) -> str:
    return (
        f"cannot read {path}: permission denied. Since Linux 5.10 (CVE-2020-8694) the RAPL "
        "energy counters are readable by root only. Run the agent as root, or grant read access "
        f"(until reboot: `sudo chmod o+r {path.parent.parent}/intel-rapl:*/energy_uj "
        f"{path.parent.parent}/intel-rapl:*/intel-rapl:*/energy_uj`; permanently: a udev rule or "
        "systemd-tmpfiles entry that sets mode 0444 on those files, ideally for a dedicated group)"
    )


def _read_uj(path: Path) -> int:
    try:
        text = _read_text(path)
    except PermissionError as exc:
        raise RaplUnavailable(_permission_message(path)) from exc
    except OSError as exc:
        raise RaplUnavailable(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        value = int(text.strip())
    except ValueError:
        raise RaplUnavailable(
            f"{path} holds {text.strip()!r}, expected an integer count of microjoules"
        ) from None
    if value < 0:
        raise RaplUnavailable(f"{path} holds a negative count ({value} µJ)")
    return value


def _zone_dirs(root: Path) -> dict[str, Path]:
    """Every ``intel-rapl:…`` zone directory, flat or nested, keyed by zone id (de-duplicated)."""
    found: dict[str, Path] = {}
    pending = [root]
    while pending:
        directory = pending.pop()
        try:
            entries = sorted(directory.iterdir())
        except OSError:
            continue
        for entry in entries:
            if _ZONE_DIR.match(entry.name) and entry.name not in found and entry.is_dir():
                found[entry.name] = entry
                pending.append(entry)
    return found


def _zone_index(zone_id: str) -> tuple[int, ...]:
    return tuple(int(part) for part in zone_id.split(":")[1:])


@dataclass
class RaplCounters:
    """The RAPL zones chosen for summing, and their counters."""

    root: Path
    zones: tuple[RaplZone, ...]
    skipped: tuple[str, ...] = field(default=())  # "intel-rapl:0:0 (core: nested in package)", …

    @classmethod
    def discover(
        cls, root: str | Path = DEFAULT_POWERCAP_ROOT, include_psys: bool = False
    ) -> RaplCounters:
        """Find the package / DRAM zones under ``root`` and check that each counter is readable.

        Raises :class:`RaplUnavailable` with the reason when nothing usable can be read.
        """
        root = Path(root)
        if not root.is_dir():
            raise RaplUnavailable(
                f"{root} does not exist: this system exposes no powercap interface (not Linux, a "
                "VM or container without RAPL, or the driver is not loaded: try "
                "`sudo modprobe intel_rapl_msr`)"
            )
        zone_dirs = _zone_dirs(root)
        if not zone_dirs:
            mmio = sorted(p.name for p in root.iterdir() if _MMIO_DIR.match(p.name))
            extra = (
                f"; only {', '.join(mmio)} is present, which this reader does not use because it "
                "duplicates the package counter and lacks DRAM"
                if mmio
                else ""
            )
            raise RaplUnavailable(
                f"no intel-rapl zones under {root}{extra}; load the driver with "
                "`sudo modprobe intel_rapl_msr`"
            )

        names = {zid: _read_zone_name(path) for zid, path in zone_dirs.items()}
        zones: list[RaplZone] = []
        skipped = [
            f"{p.name} (mmio: duplicates the package counter)"
            for p in sorted(root.iterdir())
            if _MMIO_DIR.match(p.name)
        ]
        for zone_id in sorted(zone_dirs, key=_zone_index):
            name = names[zone_id]
            domain, why_not = _domain_for(zone_id, name, names, include_psys)
            if domain is None:
                skipped.append(f"{zone_id} ({name}: {why_not})")
                continue
            zone_path = zone_dirs[zone_id]
            max_range = _read_uj(zone_path / "max_energy_range_uj")
            if max_range <= 0:
                raise RaplUnavailable(
                    f"{zone_path / 'max_energy_range_uj'} is {max_range}; cannot undo wraparound"
                )
            energy_path = zone_path / "energy_uj"
            _read_uj(energy_path)  # fail now, with the fix, rather than mid-run
            zones.append(RaplZone(domain, zone_id, energy_path, max_range))

        if not zones:
            raise RaplUnavailable(
                f"no package or DRAM zone under {root} (zones seen: {'; '.join(skipped)})"
            )
        domains = [z.domain for z in zones]
        duplicates = sorted({d for d in domains if domains.count(d) > 1})
        if duplicates:
            raise RaplUnavailable(
                f"RAPL zones under {root} repeat the domain(s) {', '.join(duplicates)}; "
                "refusing to guess which to count"
            )
        return cls(root=root, zones=tuple(zones), skipped=tuple(skipped))

    @property
    def domains(self) -> tuple[str, ...]:
        return tuple(z.domain for z in self.zones)

    def snapshot(self) -> RaplSnapshot:
        """Read every counter now; the timestamp is taken between the reads' start and end."""
        t0 = clock.now()
        counters = {z.domain: _read_uj(z.energy_path) for z in self.zones}
        t1 = clock.now()
        return RaplSnapshot(t=(t0 + t1) / 2.0, counters_uj=counters)

    def energy_between(self, a: RaplSnapshot, b: RaplSnapshot) -> dict[str, float]:
        """Joules per domain from snapshot ``a`` to the later ``b``, undoing at most one wrap."""
        if b.t < a.t:
            raise ValueError(f"snapshot b (t={b.t}) is earlier than snapshot a (t={a.t})")
        joules: dict[str, float] = {}
        for zone in self.zones:
            try:
                delta = b.counters_uj[zone.domain] - a.counters_uj[zone.domain]
            except KeyError as exc:
                raise ValueError(f"snapshot lacks RAPL domain {exc.args[0]!r}") from None
            if delta < 0:
                delta += zone.max_energy_range_uj
            joules[zone.domain] = delta * 1e-6
        return joules

    def total_joules(self, a: RaplSnapshot, b: RaplSnapshot) -> float:
        """Energy of all summed domains from ``a`` to ``b``."""
        return float(sum(self.energy_between(a, b).values()))

    def wrap_period_s(self, max_power_w: float) -> float:
        """Shortest time in which a counter can wrap at ``max_power_w``: the longest safe gap."""
        if max_power_w <= 0:
            raise ValueError(f"max_power_w must be positive, got {max_power_w}")
        return min(z.max_energy_range_uj for z in self.zones) * 1e-6 / max_power_w


def _read_zone_name(zone_path: Path) -> str:
    path = zone_path / "name"
    try:
        return _read_text(path).strip()
    except OSError as exc:
        raise RaplUnavailable(f"cannot read {path}: {exc.strerror or exc}") from exc


def _domain_for(
    zone_id: str, name: str, names: dict[str, str], include_psys: bool
) -> tuple[str | None, str]:
    """The domain a zone is summed as, or None and the reason it is left out."""
    depth = len(_zone_index(zone_id))
    if name.startswith("package-"):
        return (name, "") if depth == 1 else (None, "package zone below top level")
    if name == "dram":
        if depth == 1:
            return f"dram-{zone_id.split(':')[1]}", ""
        parent = names.get(zone_id.rsplit(":", 1)[0], "")
        suffix = parent.removeprefix("package-") if parent.startswith("package-") else None
        return (f"dram-{suffix}", "") if suffix is not None else (None, "dram outside a package")
    if name == "psys":
        return ("psys", "") if include_psys else (None, "platform, includes package and DRAM")
    if name in ("core", "uncore"):
        return None, "nested in package"
    return None, "unknown zone"


def probe_rapl(
    root: str | Path = DEFAULT_POWERCAP_ROOT, include_psys: bool = False
) -> tuple[RaplCounters | None, str]:
    """The counters, or None and the reason RAPL power cannot be measured here (for the report)."""
    try:
        return RaplCounters.discover(root, include_psys=include_psys), ""
    except RaplUnavailable as exc:
        return None, str(exc)


class RaplPowerSource:
    """Polls RAPL in a background thread between ``start`` and ``stop``.

    Each sample is the average power (W, all summed domains) over one polling interval, stamped
    at the interval's start on :func:`hilbench.clock.now`: like a meter reading, each sample
    covers ``[t, t + interval]``, which is how phase windows select samples.
    """

    def __init__(
        self,
        interval_s: float = 0.1,
        root: str | Path = DEFAULT_POWERCAP_ROOT,
        include_psys: bool = False,
        counters: RaplCounters | None = None,
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"RAPL polling interval must be positive, got {interval_s} s")
        self.interval_s = float(interval_s)
        self._root = Path(root)
        self._include_psys = include_psys
        self._counters = counters
        self.info = self._make_info()
        self._lock = threading.Lock()
        self._t: list[float] = []
        self._w: list[float] = []
        self._health = Health()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last: RaplSnapshot | None = None

    @classmethod
    def from_config(
        cls, resource: str | None, settings: Mapping[str, Any], *, visa_library: str = ""
    ) -> RaplPowerSource:
        """Build from a campaign's ``[[instruments]]`` entry (``driver = "rapl"``): RAPL of the
        machine the orchestrator runs on, so it measures agents spawned on that machine."""
        check_settings("RAPL", settings, {"interval_s", "root", "include_psys"})
        if resource is not None:
            raise ValueError("RAPL reads this machine's counters; it takes no resource")
        return cls(
            interval_s=float(settings.get("interval_s", 0.1)),
            root=settings.get("root", DEFAULT_POWERCAP_ROOT),
            include_psys=bool(settings.get("include_psys", False)),
        )

    def _make_info(self) -> SourceInfo:
        domains = self._counters.domains if self._counters else ()
        return SourceInfo(name="rapl", unit="W", time_resolution_s=self.interval_s, domains=domains,
                          readings_tile_time=True)

    @property
    def counters(self) -> RaplCounters:
        if self._counters is None:
            raise PowerSourceError("RAPL source is not configured; call configure() first")
        return self._counters

    def configure(self) -> None:
        """Discover the zones (raises :class:`RaplUnavailable` with the reason)."""
        if self._counters is None:
            self._counters = RaplCounters.discover(self._root, include_psys=self._include_psys)
        self.info = self._make_info()

    def arm(self) -> None:
        if self._counters is None:
            self.configure()

    def start(self) -> None:
        if self._thread is not None:
            raise PowerSourceError("RAPL source already started")
        self.arm()
        with self._lock:
            self._t.clear()
            self._w.clear()
            self._health = Health()
        self._stop.clear()
        self._last = self.counters.snapshot()
        self._thread = threading.Thread(target=self._poll, name="rapl-poll", daemon=True)
        self._thread.start()

    def _take(self) -> bool:
        """One sample from the previous snapshot to now; False when the counters failed."""
        assert self._last is not None
        try:
            snap = self.counters.snapshot()
        except RaplUnavailable as exc:
            with self._lock:
                self._health.messages.append(f"RAPL read failed mid-run: {exc}")
            return False
        dt = snap.t - self._last.t
        if dt > 0:
            watts = self.counters.total_joules(self._last, snap) / dt
            with self._lock:
                self._t.append(self._last.t)
                self._w.append(watts)
        self._last = snap
        return True

    def _poll(self) -> None:
        while not self._stop.wait(self.interval_s):
            if not self._take():
                return

    def _drain(self) -> SampleBatch:
        with self._lock:
            batch = SampleBatch(
                np.asarray(self._t, dtype=np.float64), np.asarray(self._w, dtype=np.float64)
            )
            self._t.clear()
            self._w.clear()
        return batch

    def read(self) -> SampleBatch:
        return self._drain()

    def stop(self) -> SampleBatch:
        """Stop polling, close the last partial interval, and return what is left."""
        if self._thread is None:
            return SampleBatch.empty()
        self._stop.set()
        self._thread.join()
        self._thread = None
        if not self._health.messages:
            self._take()
        return self._drain()

    def health(self) -> Health:
        with self._lock:
            return Health(
                overloads=self._health.overloads,
                dropped=self._health.dropped,
                overflow=self._health.overflow,
                messages=list(self._health.messages),
            )

    def close(self) -> None:
        self.stop()
