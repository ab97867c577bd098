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
from hilbench.clock import now
from hilbench.workloads.asc.features import extract_features
from hilbench.workloads.asc.quant import ModelFileError, QuantisedModel

STAGES = ("preprocessing", "inference")
REPEAT_STAGES = ("idle", *STAGES)
MODES = ("single_stream", "repeat", "stream")
PARTS = ("model", "sample", "unload", "stream", "unload_stream")
MAX_REPEAT_S = 3600.0
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
        sim_state: Callable[[str], None],
        sample_capacity: str | int = DEFAULT_SAMPLE_CAPACITY,
        stream_capacity: str | int = DEFAULT_STREAM_CAPACITY,
    ) -> None:
        self._sim_state = sim_state
        self.sample_capacity = _positive_int("asc_sample_capacity", sample_capacity)
        self.stream_capacity = _positive_int("asc_stream_capacity", stream_capacity)
        self.model: QuantisedModel | None = None
        self._held: dict[int, np.ndarray] = {}  # index -> one sample's audio
        self._stream: np.ndarray | None = None  # (k, audio) consecutive samples
        self._stream_indices: list[int] = []

    # -- loading (untimed) ----------------------------------------------------------------------

    def load(self, params: dict[str, Any], arrays: list[np.ndarray]) -> dict[str, Any]:
        part = params.get("part")
        if part == "model":
            return self._load_model(params, arrays)
        if part == "sample":
            return self._load_sample(params, arrays)
        if part == "unload":
            return self._unload(params)
        if part == "stream":
            return self._load_stream(params, arrays)
        if part == "unload_stream":
            self._stream, self._stream_indices = None, []
            return {"stream_samples": 0}
        raise DriverError(f"asc load part must be one of {list(PARTS)}, got {part!r}",
                          "bad_arguments")

    def _load_model(self, params: dict[str, Any], arrays: list[np.ndarray]) -> dict[str, Any]:
        names = params.get("arrays")
        meta = params.get("meta")
        if not isinstance(names, list) or not isinstance(meta, dict):
            raise DriverError(
                "an asc model load needs 'meta' (a map) and 'arrays' (the payload names)",
                "bad_arguments",
            )
        if len(names) != len(arrays):
            raise DriverError(
                f"asc model load names {len(names)} arrays but carries {len(arrays)} payloads",
                "bad_arguments",
            )
        try:
            model = QuantisedModel.from_parts(meta, dict(zip(names, arrays, strict=True)))
        except (ModelFileError, ValueError, TypeError) as exc:
            raise DriverError(f"asc model rejected: {exc}", "bad_arguments") from exc
        self.model = model
        # Held audio was checked against the previous model's input: drop it.
        self._held.clear()
        self._stream, self._stream_indices = None, []
        return {
            "classes": list(model.classes),
            "input_frames": model.input_frames,
            "input_filters": model.input_filters,
            "sample_rate": model.mfe_config.sample_rate,
            "weight_bytes": model.weight_bytes,
            "sample_capacity": self.sample_capacity,
        }

    def _check_audio(self, audio: np.ndarray, what: str) -> None:
        model = self._require_model()
        length = audio.shape[-1]
        frames = model.mfe_config.num_frames(length)
        if frames != model.input_frames:
            raise DriverError(
                f"{what} of {length} audio values gives {frames} frames; the model takes "
                f"{model.input_frames} ({model.mfe_config.sample_rate} Hz, 1 s)",
                "bad_arguments",
            )

    def _load_sample(self, params: dict[str, Any], arrays: list[np.ndarray]) -> dict[str, Any]:
        self._require_model()
        index = _index_param(params)
        if len(arrays) != 1 or arrays[0].dtype != np.float32 or arrays[0].ndim != 1:
            raise DriverError(
                "an asc sample load carries exactly one 1-D float32 payload (one 1 s sample)",
                "bad_arguments",
            )
        self._check_audio(arrays[0], f"sample {index}")
        if index not in self._held and len(self._held) >= self.sample_capacity:
            raise DriverError(
                f"device memory holds {self.sample_capacity} sample(s) "
                f"(held: {sorted(self._held)}); unload one before loading sample {index}",
                "device_full",
            )
        self._held[index] = np.array(arrays[0], dtype=np.float32, copy=True)
        return {"index": index, "held": sorted(self._held), "capacity": self.sample_capacity}

    def _unload(self, params: dict[str, Any]) -> dict[str, Any]:
        index = _index_param(params)
        if self._held.pop(index, None) is None:
            raise DriverError(f"sample {index} is not in device memory (held: "
                              f"{sorted(self._held)})", "not_loaded")
        return {"index": index, "held": sorted(self._held)}

    def _load_stream(self, params: dict[str, Any], arrays: list[np.ndarray]) -> dict[str, Any]:
        self._require_model()
        indices = params.get("indices")
        if (not isinstance(indices, list) or not indices
                or not all(isinstance(i, int) and not isinstance(i, bool) for i in indices)):
            raise DriverError("an asc stream load needs 'indices', a non-empty list of integers",
                              "bad_arguments")
        if len(arrays) != 1 or arrays[0].dtype != np.float32 or arrays[0].ndim != 2:
            raise DriverError(
                "an asc stream load carries exactly one float32 (samples, audio) payload",
                "bad_arguments",
            )
        if arrays[0].shape[0] != len(indices):
            raise DriverError(f"stream payload holds {arrays[0].shape[0]} samples but "
                              f"'indices' names {len(indices)}", "bad_arguments")
        if len(indices) > self.stream_capacity:
            raise DriverError(f"a stream holds at most {self.stream_capacity} samples, got "
                              f"{len(indices)}", "device_full")
        self._check_audio(arrays[0], "stream sample")
        self._stream = np.array(arrays[0], dtype=np.float32, copy=True)
        self._stream_indices = list(indices)
        return {"stream_samples": len(indices), "indices": list(indices)}

    # -- timed work -----------------------------------------------------------------------------

    def run(self, params: dict[str, Any], stop: threading.Event) -> dict[str, Any]:
        mode = params.get("mode")
        if mode == "single_stream":
            return self._single_stream(_index_param(params))
        if mode == "repeat":
            return self._repeat(params, stop)
        if mode == "stream":
            return self._play_stream(params, stop)
        raise DriverError(f"asc mode must be one of {list(MODES)}, got {mode!r}", "bad_arguments")

    def _single_stream(self, index: int) -> dict[str, Any]:
        model = self._require_model()
        audio = self._require_sample(index)
        cfg = model.mfe_config
        self._sim_state("preprocessing")
        t0 = now()
        features = extract_features(audio, cfg)
        t1 = now()
        self._sim_state("inference")
        t2 = now()
        scores, predicted = model.infer(features)
        t3 = now()
        self._sim_state("idle")
        return {
            "index": index,
            "predicted": predicted,
            "scores": [int(v) for v in scores],
            "preprocess_s": t1 - t0,
            "inference_s": t3 - t2,
            "t_start": t0,
            "t_end": t3,
        }

    def _repeat(self, params: dict[str, Any], stop: threading.Event) -> dict[str, Any]:
        stage = params.get("stage")
        if stage not in REPEAT_STAGES:
            raise DriverError(
                f"asc repeat stage must be one of {list(REPEAT_STAGES)}, got {stage!r}",
                "bad_arguments",
            )
        duration = _duration(params)
        if stage == "idle":
            return self._idle(duration, stop)
        model = self._require_model()
        index = _index_param(params)
        work = _stage_work(model, stage, self._require_sample(index))
        return {"index": index, **self._loop(stage, [work], duration, stop)}

    def _play_stream(self, params: dict[str, Any], stop: threading.Event) -> dict[str, Any]:
        stage = params.get("stage")
        if stage not in STAGES:
            raise DriverError(f"asc stream stage must be one of {list(STAGES)}, got {stage!r}",
                              "bad_arguments")
        duration = _duration(params)
        model = self._require_model()
        if self._stream is None:
            raise DriverError("no asc stream loaded: send load with part='stream' first",
                              "not_loaded")
        works = [_stage_work(model, stage, audio) for audio in self._stream]
        return {"stream_samples": len(works), "indices": list(self._stream_indices),
                **self._loop(stage, works, duration, stop)}

    def _idle(self, duration: float, stop: threading.Event) -> dict[str, Any]:
        self._sim_state("idle")
        t_start = now()
        stop.wait(duration)
        t_end = now()
        return {"stage": "idle", "iterations": 0, "mean_s": None, "std_error_s": None,
                "t_start": t_start, "t_end": t_end,
                "stopped_early": stop.is_set() and t_end - t_start < duration}

    def _loop(self, stage: str, works: list[Callable[[], Any]], duration: float,
              stop: threading.Event) -> dict[str, Any]:
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
        return {
            "stage": stage,
            "iterations": n,
            "mean_s": float(per_sample.mean()),
            "std_error_s": float(per_sample.std(ddof=1) / math.sqrt(n)) if n > 1 else None,
            "t_start": t_start,
            "t_end": t_end,
            "stopped_early": stop.is_set() and t_end < deadline,
        }

    # -- checks ---------------------------------------------------------------------------------

    def _require_model(self) -> QuantisedModel:
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


def _index_param(params: dict[str, Any]) -> int:
    index = params.get("index")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise DriverError(f"sample index must be an integer >= 0, got {index!r}",
                          "bad_arguments")
    return index


def _duration(params: dict[str, Any]) -> float:
    duration = params.get("duration_s", 0.0)
    if (isinstance(duration, bool) or not isinstance(duration, int | float)
            or not 0 < duration <= MAX_REPEAT_S):
        raise DriverError(
            f"asc duration_s must be in (0, {MAX_REPEAT_S:g}] s, got {duration!r}",
            "bad_arguments",
        )
    return float(duration)


def _stage_work(model: QuantisedModel, stage: str, audio: np.ndarray) -> Callable[[], Any]:
    """One sample's work for ``stage``; for inference, its features are computed beforehand
    (held in memory, untimed) so only inference is repeated."""
    cfg = model.mfe_config
    if stage == "preprocessing":
        return lambda: extract_features(audio, cfg)
    features = extract_features(audio, cfg)
    return lambda: model.infer(features)
