"""Joulescope JS220 as a :class:`~hilbench.power.source.PowerSource` with GPI markers, through
its maintained driver, ``pyjoulescope_driver`` (imported only when a real JS220 is opened:
``pip install hilbench[joulescope]``).

The instrument samples at 2 MHz; the driver downsamples current, voltage and power to
``rate_hz`` (up to 1 MHz) and streams them with the general-purpose inputs (GPI, 2 MHz) to
subscribers from its own thread. This source keeps what arrives in a bounded queue and turns it
into samples when the orchestrator reads: sample ``k`` is stamped through the driver's time map
(the instrument's counter against host UTC), put on the orchestrator clock by a UTC–clock pair
read at ``start``. GPI edges are recorded by sample index in the same stream
(:meth:`Joulescope220.markers`), so windows are cut without any clock mapping
(:mod:`hilbench.power.markers`).

``api`` is anything with ``pyjoulescope_driver.Driver``'s calls: the real driver, hilbench's
simulated JS220 (:class:`hilbench.sim.js220.SimulatedJs220Driver`), or a cassette's recorder
or replayer (:mod:`.cassette`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from hilbench.clock import now
from hilbench.power.markers import MarkerEdges
from hilbench.power.source import Health, PowerSourceError, SampleBatch, SourceInfo

from .settings import Js220Settings
from .stream import GpiStream, SignalStream, clock_times

SIMULATED_FIRMWARE = "hilbench-sim"  # what the simulated JS220 answers to c/fw/version
REPLAY_PREFIX = "replay:"


def real_driver() -> Any:
    """A ``pyjoulescope_driver.Driver``, or a clear error when the package is missing."""
    try:
        from pyjoulescope_driver import Driver
    except ImportError:
        raise PowerSourceError("the Joulescope JS220 driver needs pyjoulescope_driver; install "
                               "it with: pip install hilbench[joulescope]") from None
    return Driver()


class Joulescope220:
    """A JS220 measuring power (or current) at ``settings.rate_hz`` with GPI markers.

    ``resource`` is the device path (``u/js220/001234``; empty: the only JS220 attached) or
    ``replay:<cassette folder>``; ``api`` overrides how the driver API is obtained. The
    constructor does no I/O.
    """

    def __init__(self, resource: str, settings: Js220Settings, *,
                 api: Callable[[], Any] | None = None) -> None:
        self.resource = resource
        self.settings = settings
        self._make_api = api or _api_for(resource)
        s = settings
        channels = tuple(f"gpi{g}" for g in s.marker_gpi)
        self.info = SourceInfo(
            name=f"Joulescope JS220 {resource or '(first found)'}",
            unit="W" if s.quantity == "power" else "A",
            time_resolution_s=s.sample_period_s,
            accuracy_relative=s.accuracy_relative,
            accuracy_absolute=s.accuracy_absolute,
            supply_voltage_v=s.supply_voltage_v if s.quantity == "current" else None,
            domains=s.domains,
            sample_period_s=s.sample_period_s,
            marker_latency_s=s.marker_latency_s,
            marker_channels=channels,
        )
        self.t0_uncertainty_s: float | None = None
        self.interval_estimate = None  # the time map already carries the counter's real rate
        self._api: Any = None
        self._device: str | None = None
        self._lock = threading.Lock()
        self._queue: deque[tuple[str, dict[str, Any]]] = deque()
        self._queued_samples = 0
        self._acquiring = False
        self._signal = SignalStream()
        self._gpis: dict[str, GpiStream] = {}
        self._edges: list[MarkerEdges] = []
        self._utc_minus_clock = 0.0
        self._drained_until = -np.inf  # orchestrator time up to which samples were read
        self._health = Health()

    @classmethod
    def from_config(cls, resource: str | None, settings: Mapping[str, Any], *,
                    visa_library: str = "") -> Joulescope220:
        values = Js220Settings.from_mapping(dict(settings),
                                            where=f"settings of the JS220 {resource or ''}")
        return cls(resource or "", values)

    @classmethod
    def simulated(cls, model: Any, settings: Mapping[str, Any], **faults: Any
                  ) -> tuple[Joulescope220, Any]:
        """The campaign's ``simulate = "<power model>"``: a configured source reading a
        simulated JS220, and the bench a device reports to (``address``, ``stop``); see
        :mod:`.simulated`."""
        from .simulated import simulated_js220

        return simulated_js220(model, settings, **faults)

    # --- PowerSource ------------------------------------------------------------------------

    def configure(self) -> None:
        """Open the device and set its rate, publish rate and ranges."""
        s = self.settings
        if self._api is None:
            self._api = self._make_api()
        paths = self._call("device_paths")
        js220 = [p for p in paths if "/js220/" in p]
        wanted = self.resource if self.resource and not self.resource.startswith(
            REPLAY_PREFIX) else None
        if wanted is not None and wanted not in js220:
            raise PowerSourceError(f"no JS220 at {wanted} (attached: {js220 or 'none'})")
        if wanted is None and len(js220) != 1:
            raise PowerSourceError(f"{len(js220)} JS220s attached ({js220}); name one as the "
                                   "instrument's resource")
        self._device = wanted or js220[0]
        self._call("open", self._device, "defaults")
        for topic, value in (("h/fs", s.rate_hz), ("h/fp", s.publish_rate_hz),
                             ("s/i/range/mode", s.current_range_mode),
                             ("s/v/range/select", s.voltage_range)):
            self._call("publish", f"{self._device}/{topic}", value)
        firmware = None
        with contextlib.suppress(PowerSourceError):
            firmware = self._call("query", f"{self._device}/c/fw/version")
        name = f"Joulescope JS220 {self._device}"
        self.info = dataclasses.replace(self.info, name=name)
        if firmware == SIMULATED_FIRMWARE:
            self.info = dataclasses.replace(
                self.info, simulated=True,
                simulation=f"readings from hilbench's simulated JS220 ({self._device})")

    def arm(self) -> None:
        if self._device is None:
            raise PowerSourceError("JS220: arm() called before configure()")
        self._health = Health()
        self._signal = SignalStream()
        self._gpis = {f"gpi{g}": GpiStream(f"gpi{g}") for g in self.settings.marker_gpi}
        self._edges = []
        self._drained_until = -np.inf
        with self._lock:
            self._queue.clear()
            self._queued_samples = 0
        for topic in self._data_topics():
            self._call("subscribe", f"{self._device}/{topic}", "pub", self._on_data)

    def start(self) -> None:
        """Turn the streams on; the UTC–clock pair that maps the time map is read here."""
        if self._device is None:
            raise PowerSourceError("JS220: start() called before configure()")
        before = now()
        utc = time.time()
        after = now()
        self._utc_minus_clock = utc - (before + after) / 2
        self.t0_uncertainty_s = self.settings.time_map_uncertainty_s + (after - before) / 2
        for topic in self._ctrl_topics():
            self._call("publish", f"{self._device}/{topic}", 1)
        self._acquiring = True

    def read(self) -> SampleBatch:
        if not self._acquiring:
            return SampleBatch.empty()
        return self._drain()

    def stop(self) -> SampleBatch:
        """Wait (up to ``stop_wait_s``) for the samples taken up to now, turn the streams
        off, and return what is left."""
        if not self._acquiring:
            return SampleBatch.empty()
        t_stop = now()
        batches = [self._drain()]
        deadline = time.monotonic() + self.settings.stop_wait_s
        while not getattr(self._api, "delivers_synchronously", False) and \
                self._covered_until() < t_stop and time.monotonic() < deadline:
            time.sleep(0.005)
            batches.append(self._drain())
        for topic in self._ctrl_topics():
            self._call("publish", f"{self._device}/{topic}", 0)
        for topic in self._data_topics():
            self._call("unsubscribe", f"{self._device}/{topic}", self._on_data)
        batches.append(self._drain())
        self._acquiring = False
        if self._signal.missing:
            self._health.dropped += self._signal.missing
            self._note(f"{self._device}: {self._signal.missing} samples missing from the "
                       "stream (USB or host too slow, or the buffer limit was reached)")
        kept = [b for b in batches if len(b)]
        if not kept:
            return SampleBatch.empty()
        return SampleBatch(np.concatenate([b.t for b in kept]),
                           np.concatenate([b.values for b in kept]))

    def markers(self) -> list[MarkerEdges]:
        """GPI edges since the previous call, per configured input."""
        self._drain_into_edges_only()
        edges, self._edges = self._edges, []
        return [MarkerEdges.concat(edges, channel) for channel in self.info.marker_channels]

    def health(self) -> Health:
        h = self._health
        return Health(h.overloads, h.dropped, h.overflow, list(h.messages))

    def close(self) -> None:
        """Turn streams off, close the device and the driver; safe to call twice."""
        api, self._api = self._api, None
        if api is None:
            return
        if self._device is not None:
            with contextlib.suppress(Exception):
                if self._acquiring:
                    for topic in self._ctrl_topics():
                        api.publish(f"{self._device}/{topic}", 0)
                api.close(self._device)
        with contextlib.suppress(Exception):
            api.finalize()
        self._acquiring = False
        self._device = None

    def __enter__(self) -> Joulescope220:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- streams --------------------------------------------------------------------------------

    def _signal_topic(self) -> str:
        return "s/p/!data" if self.settings.quantity == "power" else "s/i/!data"

    def _data_topics(self) -> list[str]:
        return [self._signal_topic(), *(f"s/gpi/{g}/!data" for g in self.settings.marker_gpi)]

    def _ctrl_topics(self) -> list[str]:
        # power is computed from current and voltage, which stream with it
        signals = ["s/i/ctrl", "s/v/ctrl", "s/p/ctrl"] if self.settings.quantity == "power" \
            else ["s/i/ctrl"]
        return [*(f"s/gpi/{g}/ctrl" for g in self.settings.marker_gpi), *signals]

    def _on_data(self, topic: str, value: dict[str, Any]) -> None:
        """Called on the driver's thread: queue and return at once."""
        n = len(value.get("data", ()))
        limit = self.settings.max_buffer_s * self.settings.rate_hz * (1 + len(self._gpis))
        with self._lock:
            if self._queued_samples + n > limit:
                self._health.overflow = True
                return
            self._queue.append((topic, value))
            self._queued_samples += n

    def _take(self) -> list[tuple[str, dict[str, Any]]]:
        with self._lock:
            items = list(self._queue)
            self._queue.clear()
            self._queued_samples = 0
        return items

    def _drain(self) -> SampleBatch:
        ids_parts, value_parts, messages = [], [], []
        for topic, message in self._take():
            if topic.endswith(self._signal_topic()):
                try:
                    got = self._signal.accept(message)
                except ValueError as exc:
                    self._note(f"{self._device}: {exc}")
                    continue
                if got is not None:
                    ids_parts.append(got[0])
                    value_parts.append(got[1])
                    messages.append((message, got[0]))
            else:
                self._gpi(topic, message)
        if self._health.overflow:
            self._note(f"{self._device}: samples arrived faster than they were read (more "
                       f"than max_buffer_s={self.settings.max_buffer_s:g} s waiting); some "
                       "were dropped")
        if not ids_parts:
            return SampleBatch.empty()
        t = np.concatenate([clock_times(m, ids, self._utc_minus_clock) for m, ids in messages])
        self._drained_until = float(t[-1]) + self.settings.sample_period_s
        return SampleBatch(t, np.concatenate(value_parts))

    def _drain_into_edges_only(self) -> None:
        """GPI messages waiting are turned into edges; signal samples stay queued."""
        with self._lock:
            signal = [(t, m) for t, m in self._queue if t.endswith(self._signal_topic())]
            gpi = [(t, m) for t, m in self._queue if not t.endswith(self._signal_topic())]
            if self._signal.first_id is None and signal:
                return  # the signal's first sample fixes the index: read() comes first
            self._queue = deque(signal)
            self._queued_samples = sum(len(m.get("data", ())) for _, m in signal)
        for topic, message in gpi:
            self._gpi(topic, message)

    def _gpi(self, topic: str, message: dict[str, Any]) -> None:
        channel = "gpi" + topic.rsplit("/", 2)[-2]
        stream = self._gpis.get(channel)
        if stream is not None:
            self._edges.append(stream.accept(message, self._signal))

    def _covered_until(self) -> float:
        """Orchestrator time up to which signal samples have arrived."""
        with self._lock:
            last = next((m for t, m in reversed(self._queue)
                         if t.endswith(self._signal_topic())), None)
        if last is None:
            return self._drained_until
        end_id = int(last["sample_id"]) + len(last["data"]) * int(last["decimate_factor"])
        return float(clock_times(last, end_id, self._utc_minus_clock))

    # --- the driver API ---------------------------------------------------------------------

    def _call(self, name: str, *args: Any) -> Any:
        if self._api is None:
            raise PowerSourceError("JS220 is not open; call configure() first")
        try:
            return getattr(self._api, name)(*args)
        except (RuntimeError, TimeoutError, KeyError, ValueError) as exc:
            raise PowerSourceError(f"JS220 {self._device or self.resource}: {name}"
                                   f"{args[:1]!r}: {exc}") from exc

    def _note(self, message: str) -> None:
        if message not in self._health.messages:
            self._health.messages.append(message)


def _api_for(resource: str) -> Callable[[], Any]:
    if resource.startswith(REPLAY_PREFIX):
        from .cassette import ReplayApi

        folder = resource[len(REPLAY_PREFIX):]
        return lambda: ReplayApi(folder)
    return real_driver
