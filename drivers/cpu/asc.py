"""ASC on the local CPU: MFE pre-processing and the int8 CNN, timed on this agent's own clock.

The device memory follows the LoadGen single-stream rule as a microcontroller would hold it: the
orchestrator loads the model once, then ONE test sample at a time (``part = "sample"``), runs
it, and unloads it (``part = "unload"``) before the next. The device holds at most
``sample_capacity`` samples (default 1, like an Arduino); loading beyond that is refused with
``device_full``. A timed region runs from "sample in device memory" to "last step done".

Run modes (all at batch size 1):

``single_stream``  one held sample: pre-processing and inference timed separately;
                   classification (comparing with the label) is left to the orchestrator.
``repeat``         one stage (``idle``, ``preprocessing`` or ``inference``) on one held sample,
                   again and again for ``duration_s``: the Arduino power method.
``stream``         the consecutive 1 s samples of a loaded stream (``part = "stream"``), one
                   after the other, each starting when the previous finished, cycling for
                   ``duration_s``: amortised power over k-second streams.

On the simulated bench the device reports its state (preprocessing, inference, idle) to the
meter outside the timed regions, so the report costs no measured time.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from hilbench.agent.driver import DriverError
from hilbench.clock import bench_now, now
from hilbench.workloads.asc.contract import (
    MAX_WINDOW_S,
    STAGES,
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
from hilbench.workloads.asc.features import extract_features
from hilbench.workloads.asc.quant import ModelFileError, QuantisedModel
from hilbench_drivers.cpu.asc_nir import NirCpuModel

MODES = ("single_stream", "repeat", "stream")
MAX_REPEAT_S = MAX_WINDOW_S
DEFAULT_SAMPLE_CAPACITY = 1
DEFAULT_STREAM_CAPACITY = 60  # samples (seconds of audio) one stream may hold


def _positive_int(name: str, value: str | int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise DriverError(f"{name} must be an integer, got {value!r}", "bad_arguments") from None
    if number < 1:
        raise DriverError(f"{name} must be >= 1, got {number}", "bad_arguments")
    return number


class AscDevice:
    """The ASC workload of the cpu driver: model and held samples, timed stages."""

    def __init__(
        self,
        sim_state: Callable[..., None],
        sim_states: Callable[[list[tuple[str, float]]], None],
        sim_begin: Callable[[], float],
        sample_capacity: str | int = DEFAULT_SAMPLE_CAPACITY,
        stream_capacity: str | int = DEFAULT_STREAM_CAPACITY,
    ) -> None:
        self._sim_state = sim_state
        self._sim_states = sim_states
        self._sim_begin = sim_begin
        self.sample_capacity = _positive_int("asc_sample_capacity", sample_capacity)
        self.stream_capacity = _positive_int("asc_stream_capacity", stream_capacity)
        self.model: QuantisedModel | NirCpuModel | None = None
        self._held: dict[int, np.ndarray] = {}  # index -> one sample's audio
        self._stream: np.ndarray | None = None  # (k, audio) consecutive samples
        self._stream_indices: list[int] = []

    # -- loading (untimed) ----------------------------------------------------------------------

    def free_sample(self, body: AscUnload) -> AscHeldReply:
        if self._held.pop(body.index, None) is None:
            raise DriverError(f"sample {body.index} is not in device memory (held: "
                              f"{sorted(self._held)})", "not_loaded")
        return AscHeldReply(index=body.index, held=sorted(self._held))

    def free_stream(self, body: AscUnloadStream) -> AscStreamReply:
        self._stream, self._stream_indices = None, []
        return AscStreamReply(stream_samples=0)

    def load_model(self, body: AscLoadModel, arrays: list[np.ndarray]) -> AscModelReply:
        from hilbench.workloads.asc.nir.model import is_nir_load

        if is_nir_load(body.meta):
            return self._load_nir(NirCpuModel(body.meta, dict(zip(body.arrays, arrays,
                                                                  strict=True))))
        try:
            model = QuantisedModel.from_parts(body.meta, dict(zip(body.arrays, arrays,
                                                                  strict=True)))
        except (ModelFileError, ValueError, TypeError) as exc:
            raise DriverError(f"asc model rejected: {exc}", "bad_arguments") from exc
        self.model = model
        # Held audio was checked against the previous model's input: drop it.
        self._held.clear()
        self._stream, self._stream_indices = None, []
        return AscModelReply(
            classes=list(model.classes),
            input_frames=model.input_frames,
            input_filters=model.input_filters,
            sample_rate=model.mfe_config.sample_rate,
            weight_bytes=model.weight_bytes,
            sample_capacity=self.sample_capacity,
        )

    def _load_nir(self, model: NirCpuModel) -> AscModelReply:
        self.model = model
        self._held.clear()
        self._stream, self._stream_indices = None, []
        return AscModelReply(classes=model.classes, sample_rate=model.sample_rate,
                             weight_bytes=model.weight_bytes,
                             sample_capacity=self.sample_capacity, detail=model.detail())

    def _check_audio(self, audio: np.ndarray, what: str) -> None:
        model = self._require_model()
        if isinstance(model, NirCpuModel):
            model.check_audio(audio, what)
            return
        if audio.dtype != np.float32:
            raise DriverError(f"{what}: the cpu device takes float32 audio, got {audio.dtype}",
                              "bad_arguments")
        length = audio.shape[-1]
        frames = model.mfe_config.num_frames(length)
        if frames != model.input_frames:
            raise DriverError(
                f"{what} of {length} audio values gives {frames} frames; the model takes "
                f"{model.input_frames} ({model.mfe_config.sample_rate} Hz, 1 s)",
                "bad_arguments",
            )

    def load_sample(self, body: AscLoadSample, audio: np.ndarray) -> AscHeldReply:
        index = body.index
        self._require_model()
        self._check_audio(audio, f"sample {index}")
        if index not in self._held and len(self._held) >= self.sample_capacity:
            raise DriverError(
                f"device memory holds {self.sample_capacity} sample(s) "
                f"(held: {sorted(self._held)}); unload one before loading sample {index}",
                "device_full",
            )
        self._held[index] = np.array(audio, dtype=np.float32, copy=True)
        return AscHeldReply(index=index, held=sorted(self._held), capacity=self.sample_capacity)

    def load_stream(self, body: AscLoadStream, audio: np.ndarray) -> AscStreamReply:
        indices = body.indices
        self._require_model()
        if len(indices) > self.stream_capacity:
            raise DriverError(f"a stream holds at most {self.stream_capacity} samples, got "
                              f"{len(indices)}", "device_full")
        self._check_audio(audio, "stream sample")
        self._stream = np.array(audio, dtype=np.float32, copy=True)
        self._stream_indices = list(indices)
        return AscStreamReply(stream_samples=len(indices), indices=list(indices))

    # -- timed work -----------------------------------------------------------------------------

    def run_sample(self, body: AscSingleStream) -> AscSampleResult:
        index = body.index
        model = self._require_model()
        audio = self._require_sample(index)
        # The simulated meter hears of the stages after they end, stamped when they began: a
        # report sent at a stage's start wakes the meter process while the stage is timed.
        # The start is stamped through the link, which then knows a sample is under way.
        s0 = self._sim_begin()
        t0 = now()
        features = _preprocess(model, audio)
        t1 = now()
        s2 = bench_now()
        t2 = now()
        scores, predicted = model.infer(features)
        t3 = now()
        self._sim_states([("preprocessing", s0), ("inference", s2), ("idle", bench_now())])
        return AscSampleResult(
            index=index,
            predicted=int(predicted),
            scores=scores.tolist(),  # python ints in one C call (the reply leaves after t3)
            preprocess_s=t1 - t0,
            inference_s=t3 - t2,
            t_start=t0,
            t_end=t3,
        )

    def run_repeat(self, body: AscRepeat, stop: threading.Event) -> AscWindowResult:
        if body.stage == "idle":
            return self._idle(body.duration_s, stop)
        model = self._require_model()
        assert body.index is not None  # the contract asks for it outside idle
        work = _stage_work(model, body.stage, self._require_sample(body.index))
        result = self._loop(body.stage, [work], body.duration_s, stop)
        result.index = body.index
        return result

    def run_stream(self, body: AscStream, stop: threading.Event) -> AscWindowResult:
        if body.stage == "idle":
            return self._idle(body.duration_s, stop)
        model = self._require_model()
        if self._stream is None:
            raise DriverError("no asc stream loaded: send load with part='stream' first",
                              "not_loaded")
        works = [_stage_work(model, body.stage, audio) for audio in self._stream]
        result = self._loop(body.stage, works, body.duration_s, stop)
        result.stream_samples = len(works)
        result.indices = list(self._stream_indices)
        return result

    def _idle(self, duration: float, stop: threading.Event) -> AscWindowResult:
        self._sim_state("idle")
        t_start = now()
        stop.wait(duration)
        t_end = now()
        return AscWindowResult(stage="idle", iterations=0, mean_s=None, std_error_s=None,
                               t_start=t_start, t_end=t_end,
                               stopped_early=stop.is_set() and t_end - t_start < duration)

    def _loop(self, stage: str, works: list[Callable[[], Any]], duration: float,
              stop: threading.Event) -> AscWindowResult:
        """Run ``works`` in turn, one sample at a time, until ``duration`` has passed."""
        times: list[float] = []
        self._sim_state(stage)
        t_start = now()
        t_end = t_start
        deadline = t_start + duration
        i = 0
        while True:
            a = now()
            works[i]()
            t_end = now()
            times.append(t_end - a)
            i = (i + 1) % len(works)
            if t_end >= deadline or stop.is_set():
                break
        self._sim_state("idle")
        per_sample = np.asarray(times)
        n = len(times)
        return AscWindowResult(
            stage=stage,  # type: ignore[arg-type]
            iterations=n,
            mean_s=float(per_sample.mean()),
            std_error_s=float(per_sample.std(ddof=1) / math.sqrt(n)) if n > 1 else None,
            t_start=t_start,
            t_end=t_end,
            stopped_early=stop.is_set() and t_end < deadline,
        )

    # -- checks ---------------------------------------------------------------------------------

    def _require_model(self) -> QuantisedModel | NirCpuModel:
        if self.model is None:
            raise DriverError(
                "no asc model loaded: send load with part='model' first", "not_loaded"
            )
        return self.model

    def _require_sample(self, index: int) -> np.ndarray:
        audio = self._held.get(index)
        if audio is None:
            raise DriverError(
                f"sample {index} is not in device memory (held: {sorted(self._held)}): send "
                "load with part='sample' first",
                "not_loaded",
            )
        return audio

    def capabilities(self) -> dict[str, Any]:
        return {"modes": list(MODES), "stages": list(STAGES), "max_repeat_s": MAX_REPEAT_S,
                "sample_capacity": self.sample_capacity,
                "stream_capacity": self.stream_capacity}

    def close(self) -> None:
        self.model = None
        self._held.clear()
        self._stream = None


def _preprocess(model: QuantisedModel | NirCpuModel, audio: np.ndarray) -> np.ndarray:
    """MFE features for the int8 CNN; the input spike raster for a NIR graph."""
    if isinstance(model, NirCpuModel):
        return model.preprocess(audio)
    return extract_features(audio, model.mfe_config)


def _stage_work(model: QuantisedModel | NirCpuModel, stage: str, audio: np.ndarray
                ) -> Callable[[], Any]:
    """One sample's work for ``stage``; for inference, its features are computed beforehand
    (held in memory, untimed) so only inference is repeated."""
    if stage == "preprocessing":
        return lambda: _preprocess(model, audio)
    features = _preprocess(model, audio)
    return lambda: model.infer(features)
