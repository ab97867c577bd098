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

With ``marker_gpio`` (a host GPIO line, :mod:`hilbench.agent.marker_gpio`) the agent raises the
line around each timed region — a sample's inference, a repeat or stream window — for an
instrument to record in its own sample stream, and declares it (capabilities ``marker``) only
when the line opened; on the simulated bench the line's edges also reach the simulated meter's
feed through the device link, as the emulated Arduino's pin does.
"""

from __future__ import annotations

import math
import threading
from typing import Any, ClassVar

import numpy as np

from hilbench.agent.dispatch import ContractDriver
from hilbench.agent.driver import DriverError
from hilbench.agent.marker_gpio import DEFAULT_LATENCY_S, HostGpioMarker
from hilbench.clock import now
from hilbench.contracts.capabilities import ConfigureReply, Settings
from hilbench.sim.device_link import SimulatedDeviceLink, relink
from hilbench.workloads.asc.contract import (
    MAX_WINDOW_S,
    AscHeldReply,
    AscLoadModel,
    AscLoadSample,
    AscLoadStream,
    AscModelReply,
    AscRepeat,
    AscSampleResult,
    AscSingleStream,
    AscStream,
    AscStreamReply,
    AscUnload,
    AscUnloadStream,
    AscWindowResult,
)
from hilbench_drivers.xylo.network import NetworkFileError, XyloNetwork
from hilbench_drivers.xylo.nir_support import network_from_load, nir_support

SAMPLE_CAPACITY = 1
MARKED_REGION = ("during each timed region: a single-stream sample's inference, a repeat or "
                 "stream window from its first inference's start to its last one's end")
CHIP_PREPROCESSING = (
    "measured in real time on the chip's analog front end (AFESamna recording while the sample "
    "plays into the HDK microphone)")
PREPROCESS_REASON = (
    "not measured: the analog front end is simulated on the host (Rockpool AFESim, cached per "
    "sample) before the sample is in device memory, as in the NeuroBench Xylo baseline; the "
    "chip's AFE works in real time on audio from its microphone")


class XyloDriver(ContractDriver):
    """Options (``-o key=value``): ``backend`` simulation|hardware, ``network`` a network file
    the device holds from the start (then model loads must match it), ``core_clock_mhz``,
    ``power_hz`` (on-board power sampling), ``stream_capacity`` (samples per stream),
    ``afe_cache`` (directory), ``sim_meter`` (host:port of a simulated meter); ``afe`` host
    (Rockpool AFESim on the host, the baseline's method, default) | chip (the HDK's own AFE in
    real time, hardware only) with ``speaker`` (sounddevice index or name), ``afe_dt_ms``
    (recording bin, 1), ``afe_lead_s``, ``afe_gap_s``, ``afe_tail_s`` (see chip_afe.py);
    ``marker_gpio`` (gpiochipN:OFFSET or gpioN: the host GPIO line raised around each timed
    region) with ``marker_latency_s`` (its stated latency, default 100 µs)."""

    name: ClassVar[str] = "xylo"

    def __init__(self, backend: str = "simulation", network: str | None = None,
                 core_clock_mhz: str | float = 50.0, power_hz: str | float = 5.0,
                 stream_capacity: str | int = 10, afe_cache: str | None = None,
                 sim_meter: str | None = None, afe: str = "host", speaker: str | None = None,
                 afe_dt_ms: str | float = 1.0, afe_lead_s: str | float = 0.1,
                 afe_gap_s: str | float = 0.25, afe_tail_s: str | float = 0.25,
                 marker_gpio: str | None = None,
                 marker_latency_s: str | float = DEFAULT_LATENCY_S,
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
        self.marker = HostGpioMarker(marker_gpio, marker_latency_s, mirror=self._mirror_marker)
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
        asc: dict[str, Any] = {
            "sample_capacity": SAMPLE_CAPACITY,
            "stream_capacity": self.stream_capacity,
            "modes": ["single_stream", "repeat", "stream"],
            "stages": ["preprocessing", "inference"] if self.chip else ["inference"],
            "timing": self.backend.timing,
            "onboard_power": bool(self.backend.onboard_power),
            "max_repeat_s": MAX_WINDOW_S,
            "sample_untimed": dict(self.backend.sample_untimed),
            "detail": {"preprocessing": CHIP_PREPROCESSING if self.chip else PREPROCESS_REASON},
        }
        if self._builtin is not None:
            asc["detail"]["network_sha256"] = self._builtin.sha256
        caps: dict[str, Any] = {
            "workloads": ["asc"],
            "simulated": bool(self.backend.simulated),
            "meter_link": True,  # configure {sim_meter}: the simulated meter follows the SNN
            "asc": asc,
            "nir": nir_support(),
            "power": self.backend.power(),
            "detail": {"device": self.backend.describe()},
        }
        if self.backend.simulated:
            caps["simulation"] = self.backend.simulation
        marker = self.marker.declaration(MARKED_REGION)
        if marker is not None:
            caps["marker"] = marker
        elif self.marker.spec is not None:  # named but not opened: say why beside the rest
            caps["detail"]["marker"] = self.marker.reason
        return caps

    def link_meter(self, address: str) -> None:
        """Report the device's state to the simulated bench meter at ``address``."""
        self._sim = relink(self._sim, address)

    def apply(self, settings: Settings) -> ConfigureReply:
        """Also the on-chip AFE's one-time calibration (about 50 s; else at the model load)."""
        calibration = self.backend.calibrate() if self.chip else {}
        return ConfigureReply(detail={"backend": self.backend_name, **self.backend.describe(),
                                      **calibration})

    # -- loading (untimed) -------------------------------------------------------------------------

    def free_sample(self, body: AscUnload) -> AscHeldReply:
        self._audio.pop(body.index, None)
        if self._held.pop(body.index, None) is None:
            raise DriverError(f"sample {body.index} is not in device memory", "not_loaded")
        return AscHeldReply(index=body.index, held=sorted(self._held))

    def free_stream(self, body: AscUnloadStream) -> AscStreamReply:
        self._stream = []
        return AscStreamReply(stream_samples=0)

    def load_model(self, body: AscLoadModel, arrays: list[np.ndarray]) -> AscModelReply:
        from hilbench.workloads.asc.nir.model import is_nir_load

        parts = dict(zip(body.arrays, arrays, strict=True))
        try:
            if is_nir_load(body.meta):  # a NIR graph (the closed category)
                network = network_from_load(body.meta, parts)
            else:
                network = XyloNetwork.from_parts(body.meta, parts)
        except (NetworkFileError, ValueError) as exc:  # NirFileError is a ValueError
            raise DriverError(f"xylo network rejected: {exc}", "bad_arguments") from exc
        if self._builtin is not None and network.sha256 != self._builtin.sha256:
            raise DriverError(
                f"this device holds network {self._builtin.sha256[:12]}…; the load sends "
                f"{network.sha256[:12]}…", "bad_arguments")
        return self._configure(network)

    def _configure(self, network: XyloNetwork) -> AscModelReply:
        from hilbench_drivers.xylo.afe import HostFrontEnd

        applied = self.backend.configure(network)
        self.network = network
        self._front_end = HostFrontEnd(network.afe, network.dt, network.sample_rate,
                                       self.afe_cache)
        self._held.clear()
        self._audio.clear()
        self._stream.clear()
        return AscModelReply(
            classes=list(network.classes), sample_rate=network.sample_rate,
            sample_capacity=SAMPLE_CAPACITY,
            detail={"network_sha256": network.sha256, "shape": network.metadata()["shape"],
                    "dt": network.dt, **applied})

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

    def load_sample(self, body: AscLoadSample, audio: np.ndarray) -> AscHeldReply:
        index = body.index
        if index not in self._held and len(self._held) >= SAMPLE_CAPACITY:
            raise DriverError(
                f"device memory holds {SAMPLE_CAPACITY} sample (index "
                f"{sorted(self._held)}); unload it first", "device_full")
        if self.chip:  # pre-processed in real time when it runs
            self._check_audio(audio)
            self._audio[index] = np.array(audio)
            self._held[index] = np.zeros((0, 16), np.int64)  # no events recorded yet
            info: dict[str, Any] = {"afe": "chip"}
        else:
            self._held[index], info = self._spikes(audio)
        return AscHeldReply(index=index, held=sorted(self._held), capacity=SAMPLE_CAPACITY,
                            detail=info)

    def load_stream(self, body: AscLoadStream, audio: np.ndarray) -> AscStreamReply:
        indices = body.indices
        if len(indices) > self.stream_capacity:
            raise DriverError(f"a stream holds at most {self.stream_capacity} samples, got "
                              f"{len(indices)}", "device_full")
        self._stream = [(i, self._spikes(np.ascontiguousarray(a))[0])
                        for i, a in zip(indices, audio, strict=True)]
        return AscStreamReply(stream_samples=len(self._stream), indices=list(indices))

    # -- timed work ------------------------------------------------------------------------------

    def run_repeat(self, body: AscRepeat, stop: threading.Event) -> AscWindowResult:
        if body.stage == "idle":
            return self._idle(body.duration_s, stop)
        assert body.index is not None  # the contract asks for it outside idle
        if body.stage == "preprocessing":  # declared only with the chip's own AFE
            return self._afe_loop(body.index, body.duration_s, stop)
        return self._loop([(body.index, self._held_raster(body.index))], body.duration_s,
                          stop, repeat=body.index)

    def run_stream(self, body: AscStream, stop: threading.Event) -> AscWindowResult:
        if body.stage == "idle":
            return self._idle(body.duration_s, stop)
        if body.stage != "inference":
            raise DriverError("a stream window times inference; pre-processing on the chip's "
                              "AFE is timed in repeat mode", "bad_arguments", key="stage")
        if not self._stream:
            raise DriverError("no stream loaded: send load part='stream' first", "not_loaded")
        return self._loop(self._stream, body.duration_s, stop)

    def _idle(self, duration_s: float, stop: threading.Event) -> AscWindowResult:
        t_start = now()
        power = self.backend.idle(duration_s, stop)
        t_end = now()
        return AscWindowResult(
            stage="idle", iterations=0, mean_s=None, std_error_s=None, t_start=t_start,
            t_end=t_end, power=power,
            stopped_early=stop.is_set() and t_end - t_start < duration_s)

    def run_sample(self, body: AscSingleStream) -> AscSampleResult:
        index = body.index
        net = self._require_network()
        pre: dict[str, Any] = {}
        t_first = None
        if self.chip:  # the measurement: played and recorded in real time, then inferred
            if index not in self._audio:
                self._held_raster(index)  # not_loaded
            self.marker.set(1)  # the region covers pre-processing on the chip's AFE too
            recording = self.chip.record(self._audio[index], net.sample_rate, net.dt)
            self._held[index] = recording.raster
            pre, t_first = recording.reply(), recording.t_start
        result = self._infer(self._held_raster(index))
        counts = [int(c) for c in result.counts[: len(net.classes)]]
        return AscSampleResult(
            index=index,
            predicted=int(np.argmax(counts)),
            scores=counts,
            preprocess_s=pre.pop("preprocess_s", None),
            preprocess_reason=None if self.chip else PREPROCESS_REASON,
            preprocess_latency_s=pre.pop("preprocess_latency_s", None),
            inference_s=result.device_s,
            t_start=result.t_start if t_first is None else t_first,
            t_end=result.t_end,
            detail={"host_s": result.host_s, **pre, **result.extra},
        )

    def _infer(self, raster: np.ndarray) -> Any:
        try:
            result = self.backend.infer(raster, on_start=self._state_at("inference"))
        finally:
            self.marker.set(0)
        self._state("idle", result.t_end)
        return result

    def _loop(self, queue: list[tuple[int, np.ndarray]], duration: float,
              stop: threading.Event, repeat: int | None = None) -> AscWindowResult:
        """Samples one after another (batch size 1) until the window is over; the power
        monitor (hardware) covers exactly this loop. ``repeat``: the held sample's index (a
        repeat window), else the loaded stream."""
        times: list[float] = []
        self.backend.power_window_start()
        t_start = now()
        deadline = t_start + duration
        i = 0
        try:
            while True:
                result = self.backend.infer(
                    queue[i % len(queue)][1],
                    on_start=self._state_at("inference") if i == 0 else None)
                times.append(result.device_s)
                i += 1
                if result.t_end >= deadline or stop.is_set():
                    break
        finally:
            self.marker.set(0)
        t_end = result.t_end
        self._state("idle", t_end)
        power = self.backend.power_window_end()
        mean, error = _mean_and_error(times)
        reply = AscWindowResult(
            stage="inference", iterations=len(times), mean_s=mean, std_error_s=error,
            t_start=t_start, t_end=t_end, power=power,
            stopped_early=stop.is_set() and t_end < deadline, index=repeat)
        if repeat is None:
            reply.stream_samples = len(queue)
            reply.indices = [k for k, _ in queue]
            reply.detail = {"note": "stream time divided by samples processed (batch size 1)"}
        return reply

    def _afe_loop(self, index: int, duration: float, stop: threading.Event
                  ) -> AscWindowResult:
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
        self.marker.set(1)
        try:
            while True:
                recording = self.chip.record(self._audio[index], net.sample_rate, net.dt)
                times.append(recording.preprocess_s)
                latencies.append(recording.latency_s)
                if now() >= deadline or stop.is_set():
                    break
        finally:
            self.marker.set(0)
        t_end = now()
        power = self.backend.power_window_end(AFE_RAILS)
        mean, error = _mean_and_error(times)
        return AscWindowResult(
            stage="preprocessing", iterations=len(times), index=index, mean_s=mean,
            std_error_s=error, t_start=t_start, t_end=t_end, power=power,
            stopped_early=stop.is_set() and t_end < deadline,
            detail={"preprocess_latency_s": latencies,
                    "note": "each iteration records lead silence, click, gap, the sample and a "
                            "tail on the chip's AFE in real time; the power window covers all "
                            "of it"})

    # -- helpers ---------------------------------------------------------------------------------

    def _state_at(self, state: str) -> Any:
        """The hook a back end calls as the timed work starts: the marker line up, and the
        simulated meter told the state."""
        link = self._sim
        if link is None and not self.marker.opened:
            return None

        def started(t: float) -> None:
            self.marker.set(1)
            if link is not None:
                link.state(state, t)
        return started

    def _mirror_marker(self, level: int, t: float) -> None:
        """The marker line's edge, as the simulated bench's instrument sees the wire."""
        if self._sim is not None:
            self._sim.marker(level, t)

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
        self.marker.close()
        if self._sim is not None:
            self._sim.close()


def _mean_and_error(times: list[float]) -> tuple[float, float | None]:
    """Mean per iteration and its standard error (None below two iterations)."""
    n = len(times)
    error = float(np.std(times, ddof=1) / math.sqrt(n)) if n > 1 else None
    return float(np.mean(times)), error


def _link(address: str) -> SimulatedDeviceLink:
    try:
        return SimulatedDeviceLink(address)
    except (OSError, ValueError) as exc:
        raise DriverError(f"cannot reach the simulated meter at {address}: {exc}") from exc

