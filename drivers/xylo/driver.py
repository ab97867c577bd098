"""The `xylo` driver: ASC on a Xylo Audio 2, one sample in device memory at a time.

Messages are the ASC ones of ``protocols/agent-protocol.md``. Loading a sample (untimed) turns
its audio into input spikes with the host-simulated AFE (cached by content hash), which is
where the baseline does its pre-processing too; a run then sends the spikes through the SNN
core: ``XyloSim`` (``backend = "simulation"``) or the HDK through ``XyloSamna``
(``backend = "hardware"``). Streams (10 s by default) play their samples one after another at
batch size 1 and divide the time by the number of samples.

With ``afe = "chip"`` (hardware only) pre-processing happens on the chip's own analog front end
instead, in real time: a loaded sample stays audio in device memory, and each single-stream run
plays it into the HDK microphone while the AFE records (:mod:`hilbench_drivers.xylo.chip_afe`);
``preprocess_s`` is the sample's recording window and the speaker→AFE latency goes beside it.
"""

from __future__ import annotations

import math
import threading
from typing import Any, ClassVar

import numpy as np

from hilbench.agent.driver import DriverError, DriverResult
from hilbench.clock import now
from hilbench.sim.device_link import SimulatedDeviceLink, relink
from hilbench_drivers.xylo.network import NetworkFileError, XyloNetwork

SAMPLE_CAPACITY = 1
MAX_WINDOW_S = 3600.0
CHIP_PREPROCESSING = (
    "measured in real time on the chip's analog front end (AFESamna recording while the sample "
    "plays into the HDK microphone)")
PREPROCESS_REASON = (
    "not measured: the analog front end is simulated on the host (Rockpool AFESim, cached per "
    "sample) before the sample is in device memory, as in the NeuroBench Xylo baseline; the "
    "chip's AFE works in real time on audio from its microphone")


class XyloDriver:
    """Options (``-o key=value``): ``backend`` simulation|hardware, ``network`` a network file
    the device holds from the start (then model loads must match it), ``core_clock_mhz``,
    ``power_hz`` (on-board power sampling), ``stream_capacity`` (samples per stream),
    ``afe_cache`` (directory), ``sim_meter`` (host:port of a simulated meter); ``afe`` host
    (Rockpool AFESim on the host, the baseline's method, default) | chip (the HDK's own AFE in
    real time, hardware only) with ``speaker`` (sounddevice index or name), ``afe_dt_ms``
    (recording bin, 1), ``afe_lead_s``, ``afe_gap_s``, ``afe_tail_s`` (see chip_afe.py)."""

    name: ClassVar[str] = "xylo"

    def __init__(self, backend: str = "simulation", network: str | None = None,
                 core_clock_mhz: str | float = 50.0, power_hz: str | float = 5.0,
                 stream_capacity: str | int = 10, afe_cache: str | None = None,
                 sim_meter: str | None = None, afe: str = "host", speaker: str | None = None,
                 afe_dt_ms: str | float = 1.0, afe_lead_s: str | float = 0.1,
                 afe_gap_s: str | float = 0.25, afe_tail_s: str | float = 0.25,
                 device: Any = None) -> None:
        if afe not in ("host", "chip"):
            raise DriverError(f"xylo afe must be 'host' or 'chip', got {afe!r}", "bad_arguments")
        if afe == "chip" and backend != "hardware":
            raise DriverError("afe=chip needs backend=hardware (the chip's own analog front end)",
                              "bad_arguments")
        self._chip_options = {"speaker": speaker, "dt_s": float(afe_dt_ms) / 1e3,
                              "lead_s": float(afe_lead_s), "gap_s": float(afe_gap_s),
                              "tail_s": float(afe_tail_s)} if afe == "chip" else None
        self.backend_name = backend
        self.core_clock_hz = float(core_clock_mhz) * 1e6
        self.stream_capacity = int(stream_capacity)
        self.afe_cache = afe_cache
        self.backend = device if device is not None else self._open_backend(backend, power_hz)
        self._sim = _link(sim_meter) if sim_meter else None
        self.network: XyloNetwork | None = None
        self._front_end: Any = None
        self._held: dict[int, np.ndarray] = {}
        self._audio: dict[int, np.ndarray] = {}  # on-chip AFE: a held sample stays audio
        self._stream: list[tuple[int, np.ndarray]] = []
        self._builtin = XyloNetwork.load(network) if network else None
        if self._builtin is not None:
            self._configure(self._builtin)

    def _open_backend(self, backend: str, power_hz: str | float) -> Any:
        if backend == "simulation":
            from hilbench_drivers.xylo.simulated import SimulatedXylo

            return SimulatedXylo(self.core_clock_hz)
        if backend == "hardware":
            from hilbench_drivers.xylo.hardware import HardwareXylo

            return HardwareXylo.open(core_clock_mhz=self.core_clock_hz / 1e6,
                                     power_hz=float(power_hz), afe=self._chip_options)
        raise DriverError(f"xylo backend must be 'simulation' or 'hardware', got {backend!r}",
                          "bad_arguments")

    # -- handshake -------------------------------------------------------------------------------

    @property
    def chip(self) -> Any:
        """The on-chip front end (``afe=chip``), else None."""
        return getattr(self.backend, "chip_afe", None)

    def capabilities(self) -> dict[str, Any]:
        caps: dict[str, Any] = {
            "workloads": ["asc"],
            "simulated": bool(self.backend.simulated),
            "meter_link": True,  # configure {sim_meter}: the simulated meter follows the SNN
            "asc": {
                "sample_capacity": SAMPLE_CAPACITY,
                "stream_capacity": self.stream_capacity,
                "modes": ["single_stream", "repeat", "stream"],
                "stages": ["preprocessing", "inference"] if self.chip else ["inference"],
                "preprocessing": CHIP_PREPROCESSING if self.chip else PREPROCESS_REASON,
                "timing": self.backend.timing,
                "onboard_power": bool(self.backend.onboard_power),
            },
            "device": self.backend.describe(),
            "power": self.backend.power(),
        }
        if self.backend.simulated:
            caps["simulation"] = self.backend.simulation
        if self._builtin is not None:
            caps["asc"]["network_sha256"] = self._builtin.sha256
        return caps

    def link_meter(self, address: str) -> None:
        """Report the device's state to the simulated bench meter at ``address``."""
        self._sim = relink(self._sim, address)

    def configure(self, params: dict[str, Any]) -> DriverResult:
        """Also the on-chip AFE's one-time calibration (about 50 s; else at the model load)."""
        calibration = self.backend.calibrate() if self.chip else {}
        return DriverResult({"backend": self.backend_name, **self.backend.describe(),
                             **calibration})

    # -- loading (untimed) -------------------------------------------------------------------------

    def load(self, params: dict[str, Any], arrays: list[np.ndarray]) -> DriverResult:
        if params.get("workload") != "asc":
            raise DriverError(f"xylo driver serves workload 'asc', not {params.get('workload')!r}",
                              "bad_arguments")
        part = params.get("part")
        handlers = {"model": self._load_model, "sample": self._load_sample,
                    "unload": self._unload, "stream": self._load_stream,
                    "unload_stream": self._unload_stream}
        if part not in handlers:
            raise DriverError(f"asc load part must be one of {sorted(handlers)}, got {part!r}",
                              "bad_arguments")
        return DriverResult(handlers[part](params, arrays))

    def _load_model(self, params: dict[str, Any], arrays: list[np.ndarray]) -> dict[str, Any]:
        names, meta = params.get("arrays"), params.get("meta")
        if not isinstance(names, list) or not isinstance(meta, dict) or \
                len(names) != len(arrays):
            raise DriverError("an asc model load needs 'meta' (a map) and 'arrays' naming each "
                              "payload", "bad_arguments")
        try:
            network = XyloNetwork.from_parts(meta, dict(zip(names, arrays, strict=True)))
        except NetworkFileError as exc:
            raise DriverError(f"xylo network rejected: {exc}", "bad_arguments") from exc
        if self._builtin is not None and network.sha256 != self._builtin.sha256:
            raise DriverError(
                f"this device holds network {self._builtin.sha256[:12]}…; the load sends "
                f"{network.sha256[:12]}…", "bad_arguments")
        return self._configure(network)

    def _configure(self, network: XyloNetwork) -> dict[str, Any]:
        from hilbench_drivers.xylo.afe import HostFrontEnd

        applied = self.backend.configure(network)
        self.network = network
        self._front_end = HostFrontEnd(network.afe, network.dt, network.sample_rate,
                                       self.afe_cache)
        self._held.clear()
        self._audio.clear()
        self._stream.clear()
        return {"classes": list(network.classes), "sample_rate": network.sample_rate,
                "sample_capacity": SAMPLE_CAPACITY, "network_sha256": network.sha256,
                "shape": network.metadata()["shape"], "dt": network.dt, **applied}

    def _check_audio(self, audio: np.ndarray) -> XyloNetwork:
        net = self._require_network()
        if audio.dtype != np.float32 or audio.ndim != 1 or audio.shape[0] != net.sample_rate:
            raise DriverError(
                f"a sample is one float32 1 s array of {net.sample_rate} values, got "
                f"{audio.dtype} {audio.shape}", "bad_arguments")
        return net

    def _spikes(self, audio: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        net = self._check_audio(audio)
        if self.chip:  # untimed: played and recorded once when loaded (streams)
            recording = self.chip.record(audio, net.sample_rate, net.dt)
            return recording.raster, {"afe": "chip",
                                      "preprocess_latency_s": recording.latency_s}
        result = self._front_end.spikes(audio)
        return result.raster, {"afe_cached": result.cached, "afe_host_s": result.host_s}

    def _load_sample(self, params: dict[str, Any], arrays: list[np.ndarray]) -> dict[str, Any]:
        index = _int(params, "index")
        if len(arrays) != 1:
            raise DriverError("an asc sample load carries exactly one payload", "bad_arguments")
        if index not in self._held and len(self._held) >= SAMPLE_CAPACITY:
            raise DriverError(
                f"device memory holds {SAMPLE_CAPACITY} sample (index "
                f"{sorted(self._held)}); unload it first", "device_full")
        if self.chip:  # pre-processed in real time when it runs
            self._check_audio(arrays[0])
            self._audio[index] = np.array(arrays[0])
            self._held[index] = np.zeros((0, 16), np.int64)  # no events recorded yet
            info: dict[str, Any] = {"afe": "chip"}
        else:
            self._held[index], info = self._spikes(arrays[0])
        return {"index": index, "held": sorted(self._held), "capacity": SAMPLE_CAPACITY, **info}

    def _unload(self, params: dict[str, Any], arrays: list[np.ndarray]) -> dict[str, Any]:
        index = _int(params, "index")
        self._audio.pop(index, None)
        if self._held.pop(index, None) is None:
            raise DriverError(f"sample {index} is not in device memory", "not_loaded")
        return {"index": index, "held": sorted(self._held)}

    def _load_stream(self, params: dict[str, Any], arrays: list[np.ndarray]) -> dict[str, Any]:
        indices = params.get("indices")
        if not isinstance(indices, list) or len(arrays) != 1 or arrays[0].ndim != 2 or \
                arrays[0].shape[0] != len(indices):
            raise DriverError("a stream load needs 'indices' and one (k, samples) payload",
                              "bad_arguments")
        if len(indices) > self.stream_capacity:
            raise DriverError(f"a stream holds at most {self.stream_capacity} samples, got "
                              f"{len(indices)}", "device_full")
        stream = [(int(i), self._spikes(np.ascontiguousarray(a))[0])
                  for i, a in zip(indices, arrays[0], strict=True)]
        self._stream = stream
        return {"stream_samples": len(stream), "indices": [i for i, _ in stream]}

    def _unload_stream(self, params: dict[str, Any], arrays: list[np.ndarray]) -> dict[str, Any]:
        self._stream = []
        return {"stream_samples": 0}

    # -- timed work ------------------------------------------------------------------------------

    def run(self, params: dict[str, Any], stop: threading.Event) -> DriverResult:
        if params.get("workload") != "asc":
            raise DriverError("xylo driver serves workload 'asc'", "bad_arguments")
        mode = params.get("mode")
        if mode == "single_stream":
            return DriverResult(self._single(_int(params, "index")))
        if mode in ("repeat", "stream"):
            return DriverResult(self._window(mode, params, stop))
        raise DriverError(f"asc mode must be single_stream, repeat or stream, got {mode!r}",
                          "bad_arguments")

    def _single(self, index: int) -> dict[str, Any]:
        net = self._require_network()
        pre: dict[str, Any] = {"preprocess_s": None, "preprocess_reason": PREPROCESS_REASON}
        t_first = None
        if self.chip:  # the measurement: played and recorded in real time, then inferred
            if index not in self._audio:
                self._held_raster(index)  # not_loaded
            recording = self.chip.record(self._audio[index], net.sample_rate, net.dt)
            self._held[index] = recording.raster
            pre, t_first = recording.reply(), recording.t_start
        result = self._infer(self._held_raster(index))
        counts = [int(c) for c in result.counts[: len(net.classes)]]
        return {
            "index": index,
            "predicted": int(np.argmax(counts)),
            "scores": counts,
            **pre,
            "inference_s": result.device_s,
            "host_s": result.host_s,
            "t_start": result.t_start if t_first is None else t_first,
            "t_end": result.t_end,
            **result.extra,
        }

    def _infer(self, raster: np.ndarray) -> Any:
        result = self.backend.infer(raster, on_start=self._state_at("inference"))
        self._state("idle", result.t_end)
        return result

    def _window(self, mode: str, params: dict[str, Any], stop: threading.Event) -> dict[str, Any]:
        stage = params.get("stage")
        duration = float(params.get("duration_s", 0.0))
        if not 0 < duration <= MAX_WINDOW_S:
            raise DriverError(f"duration_s must be in (0, {MAX_WINDOW_S:g}], got {duration}",
                              "bad_arguments")
        if stage == "idle":
            t_start = now()
            power = self.backend.idle(duration, stop)
            t_end = now()
            return {"stage": "idle", "iterations": 0, "mean_s": None, "std_error_s": None,
                    "t_start": t_start, "t_end": t_end, "power": power,
                    "stopped_early": stop.is_set() and t_end - t_start < duration}
        if stage == "preprocessing" and self.chip and mode == "repeat":
            return self._afe_loop(_int(params, "index"), duration, stop)
        if stage != "inference":
            preprocessing = self.capabilities()["asc"]["preprocessing"]
            raise DriverError("the xylo driver times 'inference' and 'idle' windows"
                              + (" (and 'preprocessing' in repeat mode)" if self.chip else "")
                              + f"; pre-processing is {preprocessing}", "bad_arguments")
        if mode == "repeat":
            index = _int(params, "index")
            queue = [(index, self._held_raster(index))]
        else:
            if not self._stream:
                raise DriverError("no stream loaded: send load part='stream' first",
                                  "not_loaded")
            queue = self._stream
        return self._loop(mode, queue, duration, stop)

    def _loop(self, mode: str, queue: list[tuple[int, np.ndarray]], duration: float,
              stop: threading.Event) -> dict[str, Any]:
        """Samples one after another (batch size 1) until the window is over; the power
        monitor (hardware) covers exactly this loop."""
        times: list[float] = []
        self.backend.power_window_start()
        t_start = now()
        deadline = t_start + duration
        i = 0
        while True:
            result = self.backend.infer(queue[i % len(queue)][1],
                                        on_start=self._state_at("inference") if i == 0 else None)
            times.append(result.device_s)
            i += 1
            if result.t_end >= deadline or stop.is_set():
                break
        t_end = result.t_end
        self._state("idle", t_end)
        power = self.backend.power_window_end()
        n = len(times)
        reply: dict[str, Any] = {
            "stage": "inference", "iterations": n,
            "mean_s": float(np.mean(times)),
            "std_error_s": float(np.std(times, ddof=1) / math.sqrt(n)) if n > 1 else None,
            "t_start": t_start, "t_end": t_end, "power": power,
            "stopped_early": stop.is_set() and t_end < deadline,
        }
        if mode == "stream":
            reply.update(stream_samples=len(queue), indices=[k for k, _ in queue],
                         note="stream time divided by samples processed (batch size 1)")
        else:
            reply["index"] = queue[0][0]
        return reply

    def _afe_loop(self, index: int, duration: float, stop: threading.Event) -> dict[str, Any]:
        """The held sample played and recorded by the chip's AFE again and again for the window;
        the on-board monitor's AFE rails over exactly these recordings are the stage's power."""
        from hilbench_drivers.xylo.hardware import AFE_RAILS

        self._held_raster(index)
        net = self._require_network()
        times: list[float] = []
        latencies: list[float] = []
        self.backend.power_window_start()
        t_start = now()
        deadline = t_start + duration
        while True:
            recording = self.chip.record(self._audio[index], net.sample_rate, net.dt)
            times.append(recording.preprocess_s)
            latencies.append(recording.latency_s)
            if now() >= deadline or stop.is_set():
                break
        t_end = now()
        power = self.backend.power_window_end(AFE_RAILS)
        n = len(times)
        return {"stage": "preprocessing", "iterations": n, "index": index,
                "mean_s": float(np.mean(times)),
                "std_error_s": float(np.std(times, ddof=1) / math.sqrt(n)) if n > 1 else None,
                "preprocess_latency_s": latencies,
                "t_start": t_start, "t_end": t_end, "power": power,
                "note": "each iteration records lead silence, click, gap, the sample and a tail "
                        "on the chip's AFE in real time; the power window covers all of it",
                "stopped_early": stop.is_set() and t_end < deadline}

    # -- helpers ---------------------------------------------------------------------------------

    def _state_at(self, state: str) -> Any:
        if self._sim is None:
            return None
        link = self._sim
        return lambda t: link.state(state, t)

    def _state(self, state: str, t: float) -> None:
        if self._sim is not None:
            self._sim.state(state, t)

    def _held_raster(self, index: int) -> np.ndarray:
        if index not in self._held:
            raise DriverError(f"sample {index} is not in device memory (held: "
                              f"{sorted(self._held)}): load it first", "not_loaded")
        if self.chip and not len(self._held[index]):  # an inference window before any run
            net = self._require_network()
            self._held[index] = self.chip.record(self._audio[index], net.sample_rate,
                                                 net.dt).raster
        return self._held[index]

    def _require_network(self) -> XyloNetwork:
        if self.network is None:
            raise DriverError("no network loaded: send load part='model' first", "not_loaded")
        return self.network

    def close(self) -> None:
        self.backend.close()
        if self._sim is not None:
            self._sim.close()


def _int(params: dict[str, Any], key: str) -> int:
    value = params.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise DriverError(f"{key!r} must be a non-negative integer, got {value!r}",
                          "bad_arguments")
    return value


def _link(address: str) -> SimulatedDeviceLink:
    try:
        return SimulatedDeviceLink(address)
    except (OSError, ValueError) as exc:
        raise DriverError(f"cannot reach the simulated meter at {address}: {exc}") from exc

