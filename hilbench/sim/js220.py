"""A simulated Joulescope JS220 behind the API of its maintained driver, ``pyjoulescope_driver``.

:class:`SimulatedJs220Driver` offers the calls and callbacks of ``pyjoulescope_driver.Driver``
that an application uses — ``device_paths``, ``open``, ``close``, ``publish``, ``query``,
``subscribe``, ``unsubscribe``, ``unsubscribe_all``, ``publish_and_wait``, ``finalize`` — with
the JS220's topics (``{p}/h/fs``, ``{p}/h/fp``, ``{p}/s/i|v|p/ctrl``, ``{p}/s/gpi/N/ctrl``, …)
and the stream messages the binding hands to subscribers of ``{p}/s/i|v|p|gpi/N/!data``: a
dict with ``sample_id`` (counted at 2 MHz whatever the rate), ``sample_rate`` (2 000 000),
``decimate_factor``, ``field_id``, ``index``, ``utc``, ``time_map`` and ``data`` (float32, or
1-bit GPI samples packed 8 to a byte, least significant bit first). Topic names, rates and the
2 MHz/1 MHz limits follow the driver's ``src/devices/js220/js220_usb.c`` and ``doc/js220.txt``.

What it measures is a :class:`~hilbench.sim.device_feed.DeviceFeed`: the device's power states
(the power model the simulated DMM uses) and its marker pin, which is wired to GPI 0 by default.
It has a timebase of its own (``drift_ppm``: its 2 MHz counter runs that much fast), an input
latency on its GPI (``gpi_latency_s``), a calibration error (``gain_error``) and noise, and
knows the truth: :meth:`SimulatedJs220Driver.bench_time` says when a sample id was taken on
the bench clock, so tests compare what the driver measured with the feed's true energy.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hilbench.clock import bench_now
from hilbench.sim.device_feed import DeviceFeed

SAMPLING_FREQUENCY = 2_000_000  # the JS220's ADC rate; sample ids count at it
MAX_SIGNAL_RATE = 1_000_000  # i, v and p are limited to 1 MHz (decimate ≥ 2)
FS_OPTIONS = (2_000_000, 1_000_000, 500_000, 200_000, 100_000, 50_000, 20_000, 10_000, 5_000,
              2_000, 1_000, 500, 200, 100, 50, 20, 10, 5, 2, 1)
FP_OPTIONS = (10_000, 5_000, 2_000, 1_000, 500, 200, 100, 50, 20, 10, 5, 2, 1)
FIELD_CURRENT, FIELD_VOLTAGE, FIELD_POWER, FIELD_GPI = 1, 2, 3, 5
GPI_INDICES = (0, 1, 2, 3, 7)  # 7 is the trigger input
TIME64_SCALE = 1 << 30  # pyjoulescope_driver.time64: 2**30 per second since 2018-01-01 UTC
TIME64_EPOCH = 1514764800.0
SIMULATED_SERIAL = "SIM0001"
# The stream trails the bench clock by this much, and one pump period more (_run_pump): a
# device's state and marker lines reach the feed over a pipe and TCP some time after the moment
# they stamp (the emulated Arduino's: its stderr, a reader thread, the link), and a sample
# computed before its news arrived would show the old level — an edge missed or late beyond its
# stated uncertainty (in single stream, 2 of 340 samples' regions went missing at 50 kS/s). A
# real JS220's USB stream trails it too.
NEWS_LAG_S = 0.1


def _signal_topics() -> dict[str, tuple[int, int]]:
    """Subtopic of each data stream -> (field id, index)."""
    topics = {"s/i/!data": (FIELD_CURRENT, 0), "s/v/!data": (FIELD_VOLTAGE, 0),
              "s/p/!data": (FIELD_POWER, 0)}
    topics.update({f"s/gpi/{n}/!data": (FIELD_GPI, n) for n in GPI_INDICES})
    return topics


DATA_TOPICS = _signal_topics()
RETAINED_DEFAULTS: dict[str, Any] = {
    "h/fs": 2_000_000, "h/fp": 20, "c/fw/version": "hilbench-sim",
    "s/i/range/mode": "auto", "s/v/range/select": "15 V",
    "s/v/range/mode": "auto", "s/gpi/+/dwnN/mode": 0, "c/gpio/vref": "external",
    **{f"s/{name}/ctrl": 0 for name in ("i", "v", "p", "i/range", "stats")},
    **{f"s/gpi/{n}/ctrl": 0 for n in GPI_INDICES},
}


@dataclass
class _Subscription:
    topic: str
    fn: Callable[[str, Any], None]


@dataclass
class _State:
    opened: bool = False
    origin: float = 0.0  # bench time of sample id 0
    utc_minus_bench: float = 0.0  # host UTC - bench clock, when the counter started
    next_id: dict[str, int] = field(default_factory=dict)  # per enabled data stream


class SimulatedJs220Driver:
    """``pyjoulescope_driver.Driver`` for one simulated JS220 measuring ``feed``."""

    def __init__(self, feed: DeviceFeed, *, serial: str = SIMULATED_SERIAL,
                 drift_ppm: float = 0.0, gpi_latency_s: float = 0.5e-6,
                 gpi_wiring: dict[int, str] | None = None, noise_std_w: float = 0.0,
                 gain_error: float = 0.0, supply_v: float | None = None,
                 seed: int | None = None, timeout: float | None = None,
                 news_lag_s: float = NEWS_LAG_S) -> None:
        self.feed = feed
        self.news_lag_s = float(news_lag_s)
        self.prefix = f"u/js220/{serial}"
        self.drift_ppm = float(drift_ppm)
        self.gpi_latency_s = float(gpi_latency_s)
        self.gpi_wiring = {0: "marker"} if gpi_wiring is None else dict(gpi_wiring)
        self.noise_std_w = float(noise_std_w)
        self.gain_error = float(gain_error)
        self.supply_v = float(supply_v if supply_v is not None else feed.model.supply_v)
        self._rng = np.random.default_rng(seed)
        self._lock = threading.RLock()
        self._retained: dict[str, Any] = {f"{self.prefix}/{k}": v
                                          for k, v in RETAINED_DEFAULTS.items()}
        self._subs: list[_Subscription] = []
        self._state = _State()
        self._stop = threading.Event()
        self._pump: threading.Thread | None = None
        self.finalized = False

    # --- the driver API -----------------------------------------------------------------

    def __enter__(self) -> SimulatedJs220Driver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finalize()

    def finalize(self, timeout: float | None = None) -> None:
        self._halt_pump()
        self.finalized = True

    def device_paths(self, timeout: float | None = None) -> list[str]:
        return [self.prefix]

    def open(self, device_prefix: str, mode: str | None = None,
             timeout: float | None = None) -> None:
        self._device(device_prefix)
        if mode not in (None, "defaults", "restore", "raw"):
            raise KeyError(mode)
        with self._lock:
            if mode in (None, "defaults"):
                self._retained.update({f"{self.prefix}/{k}": v
                                       for k, v in RETAINED_DEFAULTS.items()})
            self._state = _State(opened=True, origin=bench_now(),
                                 utc_minus_bench=time.time() - bench_now())
        self._stop.clear()
        self._pump = threading.Thread(target=self._run_pump, daemon=True, name="sim-js220")
        self._pump.start()

    def close(self, device_prefix: str, timeout: float | None = None) -> None:
        self._device(device_prefix)
        self._halt_pump()
        with self._lock:
            self._state = _State()

    def publish(self, topic: str, value: Any, timeout: float | None = None) -> None:
        _device, sub = self._split(topic)
        with self._lock:
            if not self._state.opened:
                raise RuntimeError(f"jsdrv_publish failed 10 CLOSED | device closed | {topic}")
            self._apply(sub, value, topic)
            if "!" not in sub:
                self._retained[topic] = value

    def query(self, topic: str, timeout: float | None = None) -> Any:
        if topic == "@/list":
            return self.prefix
        with self._lock:
            if topic not in self._retained:
                raise RuntimeError(f"jsdrv_query failed 4 NOT_FOUND | not found | {topic}")
            return self._retained[topic]

    def subscribe(self, topic: str, flags: Any, fn: Callable[[str, Any], None],
                  timeout: float | None = None) -> None:
        with self._lock:
            self._subs.append(_Subscription(topic, fn))
            retained = [(t, v) for t, v in self._retained.items() if t.startswith(topic)]
        if "pub_retain" in (flags if isinstance(flags, (list, tuple)) else [flags]):
            for t, v in retained:
                fn(t, v)

    def unsubscribe(self, topic: str, fn: Callable[[str, Any], None],
                    timeout: float | None = None) -> None:
        with self._lock:
            self._subs = [s for s in self._subs if not (s.topic == topic and s.fn == fn)]

    def unsubscribe_all(self, fn: Callable[[str, Any], None],
                        timeout: float | None = None) -> None:
        with self._lock:
            self._subs = [s for s in self._subs if s.fn != fn]

    def publish_and_wait(self, publish_topic: str, publish_value: Any, response_topic: str,
                         timeout: float | None = None) -> Any:
        if publish_topic.endswith("/s/gpi/+/!req"):
            levels = self.feed.line(np.array([bench_now() - self.gpi_latency_s]))
            return int(levels[0]) if 0 in self.gpi_wiring else 0
        raise TimeoutError(f"publish_and_wait timed out: publish={publish_topic}, "
                           f"response={response_topic}")

    # --- the truth ------------------------------------------------------------------------

    @property
    def counter_rate(self) -> float:
        """How fast the instrument's 2 MHz counter really runs, in bench seconds."""
        return SAMPLING_FREQUENCY * (1.0 + self.drift_ppm * 1e-6)

    def bench_time(self, sample_id: np.ndarray | int) -> np.ndarray:
        """When (bench clock) the instrument took sample ``sample_id``."""
        return self._state.origin + np.asarray(sample_id, dtype=np.float64) / self.counter_rate

    # --- topics and streams -------------------------------------------------------------------

    def _device(self, prefix: str) -> None:
        if prefix.rstrip("/") != self.prefix:
            raise RuntimeError(f"jsdrv_open failed 4 NOT_FOUND | not found | {prefix}")

    def _split(self, topic: str) -> tuple[str, str]:
        if not topic.startswith(self.prefix + "/"):
            raise RuntimeError(f"jsdrv_publish failed 4 NOT_FOUND | not found | {topic}")
        return self.prefix, topic[len(self.prefix) + 1:]

    def _apply(self, sub: str, value: Any, topic: str) -> None:
        if sub == "h/fs":
            if int(value) not in FS_OPTIONS:
                raise RuntimeError(f"jsdrv_publish failed 9 PARAMETER_INVALID | {topic}")
        elif sub == "h/fp":
            if int(value) not in FP_OPTIONS:
                raise RuntimeError(f"jsdrv_publish failed 9 PARAMETER_INVALID | {topic}")
        elif sub.endswith("/ctrl"):
            data_topic = sub[: -len("ctrl")] + "!data"
            on = value in (1, True, "on", "1")
            if data_topic in DATA_TOPICS:
                self._set_stream(data_topic, on)
        elif sub not in RETAINED_DEFAULTS and not sub.startswith(("s/i/range", "s/v/range")):
            raise RuntimeError(f"jsdrv_publish failed 9 PARAMETER_INVALID | {topic}")

    def _set_stream(self, data_topic: str, on: bool) -> None:
        """Turn a stream on (from the counter's present value) or off (after publishing what
        it measured up to now, so nothing taken before the command is lost)."""
        now_id = self._now_id()
        if on and data_topic not in self._state.next_id:
            step = SAMPLING_FREQUENCY // min(int(self._retained[f"{self.prefix}/h/fs"]),
                                             MAX_SIGNAL_RATE)
            self._state.next_id[data_topic] = now_id - now_id % step
        elif not on and data_topic in self._state.next_id:
            time.sleep(self.news_lag_s)  # the device's news of the last samples arrives
            self._publish_due(only=data_topic, end_id=now_id)
            del self._state.next_id[data_topic]

    def _now_id(self, until: float | None = None) -> int:
        """The counter's value at ``until`` (default now) or where the feed's news ends."""
        told = min(bench_now() if until is None else until,
                   self.feed.told_until()) - self.gpi_latency_s
        return max(0, int((told - self._state.origin) * self.counter_rate))

    def _decimate(self, data_topic: str) -> int:
        if DATA_TOPICS[data_topic][0] == FIELD_GPI:
            return 1
        fs = min(int(self._retained[f"{self.prefix}/h/fs"]), MAX_SIGNAL_RATE)
        return SAMPLING_FREQUENCY // fs

    def _run_pump(self) -> None:
        """Each pass publishes the samples whose news was due by the pass before it
        (:data:`NEWS_LAG_S` before that pass woke), not by now: when this process stalls (a
        busy host), the pump and the thread reading the device's news resume together in no
        set order, and news sent during the stall may still sit unread in the socket. A pass
        that follows a stall publishes nothing new, and the next one, a period later, finds
        the news read (with the orchestrator stopped 0.25 s at random every 0.2-1.5 s, a marker
        edge off its line refused the single-stream window in 4 of 9 runs before, 0 of 11
        after)."""
        woke = bench_now()
        while not self._stop.is_set():
            period = 1.0 / float(self._retained.get(f"{self.prefix}/h/fp", 20))
            self._stop.wait(max(period, 1e-3))
            due, woke = woke - self.news_lag_s, bench_now()
            with self._lock:
                if self._state.opened:
                    self._publish_due(end_id=self._now_id(due))

    def _halt_pump(self) -> None:
        self._stop.set()
        pump, self._pump = self._pump, None
        if pump is not None and pump is not threading.current_thread():
            pump.join(timeout=5)

    def _publish_due(self, end_id: int, only: str | None = None) -> None:
        """Publish every enabled stream's samples up to counter value ``end_id`` (lock
        held: stream messages go out in order, and a stopped stream is flushed first)."""
        for data_topic, start_id in list(self._state.next_id.items()):
            if only is not None and data_topic != only:
                continue
            decimate = self._decimate(data_topic)
            count = (end_id - start_id) // decimate
            if not self._subscribed(f"{self.prefix}/{data_topic}"):
                self._state.next_id[data_topic] = start_id + max(count, 0) * decimate
                continue  # nobody listens: the samples pass unseen, as on the real driver
            if DATA_TOPICS[data_topic][0] == FIELD_GPI:
                count -= count % 8  # packed 8 to a byte: whole bytes only, the rest next time
            if count <= 0:
                continue
            ids = start_id + decimate * np.arange(count, dtype=np.int64)
            message = self._message(data_topic, ids, decimate)
            self._state.next_id[data_topic] = start_id + count * decimate
            self._deliver(f"{self.prefix}/{data_topic}", message)

    def _message(self, data_topic: str, ids: np.ndarray, decimate: int) -> dict[str, Any]:
        field_id, index = DATA_TOPICS[data_topic]
        t = self.bench_time(ids)
        if field_id == FIELD_GPI:
            wired = self.gpi_wiring.get(index) == "marker"
            levels = (self.feed.line(t - self.gpi_latency_s) if wired
                      else np.zeros(len(ids), np.uint8))
            data = np.packbits(levels.astype(np.uint8), bitorder="little")
        else:
            width = decimate / self.counter_rate
            watts = self.feed.mean_power(t, width) * (1.0 + self.gain_error)
            if self.noise_std_w > 0:
                watts = watts + self._rng.normal(0.0, self.noise_std_w, size=watts.shape)
            values = {FIELD_POWER: watts, FIELD_CURRENT: watts / self.supply_v,
                      FIELD_VOLTAGE: np.full(len(ids), self.supply_v)}[field_id]
            data = values.astype(np.float32)
        offset_time = round((self._state.origin + self._state.utc_minus_bench - TIME64_EPOCH)
                            * TIME64_SCALE)
        time_map = {"offset_time": offset_time, "offset_counter": 0,
                    "counter_rate": self.counter_rate}
        utc = offset_time + round(int(ids[0]) / self.counter_rate * TIME64_SCALE)
        return {"sample_id": int(ids[0]), "utc": utc, "field_id": field_id, "index": index,
                "sample_rate": SAMPLING_FREQUENCY, "decimate_factor": decimate,
                "time_map": time_map, "data": data}

    def _subscribed(self, topic: str) -> bool:
        return any(topic == s.topic or topic.startswith(s.topic.rstrip("/") + "/")
                   for s in self._subs)

    def _deliver(self, topic: str, value: Any) -> None:
        for sub in list(self._subs):
            if topic == sub.topic or topic.startswith(sub.topic.rstrip("/") + "/"):
                with contextlib.suppress(Exception):  # as the binding: a callback error is logged
                    sub.fn(topic, value)
