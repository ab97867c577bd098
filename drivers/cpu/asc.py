"""ASC on the local CPU: MFE pre-processing and the int8 CNN, timed on this agent's own clock.

The orchestrator loads the model (JSON metadata + integer arrays, never a pickle) and the test
samples before anything is timed, so a timed region runs from "data is in device memory" to
"last step done", as NeuroBench asks. Two run modes:

``single_stream``  one sample: pre-processing and inference timed separately; classification
                   (comparing with the label) is left to the orchestrator and not timed.
``repeat``         one stage (pre-processing or inference) repeated back to back on samples held
                   in memory for a set duration, for the power windows. With ``stream = k`` each
                   iteration processes k consecutive samples (k seconds of audio) as one block,
                   so set-up is amortised; per-sample time is then the block time / k.

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
MODES = ("single_stream", "repeat")
MAX_REPEAT_S = 3600.0


class AscDevice:
    """The ASC workload of the cpu driver: model and samples in memory, timed stages."""

    def __init__(self, sim_state: Callable[[str], None]) -> None:
        self._sim_state = sim_state
        self.model: QuantisedModel | None = None
        self._samples: np.ndarray | None = None
        self._filled = 0

    # -- loading (untimed) ----------------------------------------------------------------------

    def load(self, params: dict[str, Any], arrays: list[np.ndarray]) -> dict[str, Any]:
        part = params.get("part")
        if part == "model":
            return self._load_model(params, arrays)
        if part == "samples":
            return self._load_samples(params, arrays)
        raise DriverError(
            f"asc load part must be 'model' or 'samples', got {part!r}", "bad_arguments"
        )

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
        self._samples, self._filled = None, 0  # samples are checked against the model's input
        return {
            "classes": list(model.classes),
            "input_frames": model.input_frames,
            "input_filters": model.input_filters,
            "sample_rate": model.mfe_config.sample_rate,
            "weight_bytes": model.weight_bytes,
        }

    def _load_samples(self, params: dict[str, Any], arrays: list[np.ndarray]) -> dict[str, Any]:
        model = self._require_model()
        try:
            offset, total = int(params["offset"]), int(params["total"])
        except (KeyError, TypeError, ValueError):
            raise DriverError(
                "an asc samples load needs integer 'offset' and 'total'", "bad_arguments"
            ) from None
        if len(arrays) != 1 or arrays[0].dtype != np.float32 or arrays[0].ndim != 2:
            raise DriverError(
                "an asc samples load carries exactly one float32 (samples, audio) payload",
                "bad_arguments",
            )
        chunk = arrays[0]
        length = chunk.shape[1]
        if model.mfe_config.num_frames(length) != model.input_frames:
            raise DriverError(
                f"samples of {length} audio values give "
                f"{model.mfe_config.num_frames(length)} frames; the model takes "
                f"{model.input_frames} ({model.mfe_config.sample_rate} Hz, 1 s)",
                "bad_arguments",
            )
        if offset == 0:
            if total < 1:
                raise DriverError(f"total must be >= 1, got {total}", "bad_arguments")
            self._samples = np.empty((total, length), dtype=np.float32)
            self._filled = 0
        samples = self._samples
        if samples is None or total != samples.shape[0] or offset != self._filled:
            raise DriverError(
                f"samples must arrive in order starting at offset 0: got offset {offset} of "
                f"{total}, expected offset {self._filled}",
                "bad_arguments",
            )
        if offset + chunk.shape[0] > total:
            raise DriverError(
                f"samples {offset}..{offset + chunk.shape[0]} overrun the total of {total}",
                "bad_arguments",
            )
        samples[offset : offset + chunk.shape[0]] = chunk
        self._filled += chunk.shape[0]
        return {"loaded": self._filled, "total": total, "complete": self._filled == total}

    # -- timed work -----------------------------------------------------------------------------

    def run(self, params: dict[str, Any], stop: threading.Event) -> dict[str, Any]:
        mode = params.get("mode")
        if mode == "single_stream":
            return self._single_stream(self._index(params))
        if mode == "repeat":
            return self._repeat(params, stop)
        raise DriverError(f"asc mode must be one of {list(MODES)}, got {mode!r}", "bad_arguments")

    def _single_stream(self, index: int) -> dict[str, Any]:
        model, samples = self._require_model(), self._require_samples()
        audio = samples[index]
        cfg = model.mfe_config
        self._sim_state("preprocessing")
        t0 = now()
        features = extract_features(audio, cfg)
        t1 = now()
        self._sim_state("inference")
        t2 = now()
        logits, predicted = model.infer(features)
        t3 = now()
        self._sim_state("idle")
        return {
            "index": index,
            "predicted": predicted,
            "logits": [int(v) for v in logits],
            "preprocess_s": t1 - t0,
            "inference_s": t3 - t2,
            "t_start": t0,
            "t_end": t3,
        }

    def _repeat(self, params: dict[str, Any], stop: threading.Event) -> dict[str, Any]:
        model, samples = self._require_model(), self._require_samples()
        stage = params.get("stage")
        if stage not in STAGES:
            raise DriverError(
                f"asc repeat stage must be one of {list(STAGES)}, got {stage!r}", "bad_arguments"
            )
        duration = float(params.get("duration_s", 0.0))
        if not 0 < duration <= MAX_REPEAT_S:
            raise DriverError(
                f"asc repeat duration_s must be in (0, {MAX_REPEAT_S:g}] s, got {duration}",
                "bad_arguments",
            )
        stream = int(params.get("stream", 1))
        if not 1 <= stream <= samples.shape[0]:
            raise DriverError(
                f"asc repeat stream must be 1..{samples.shape[0]} (samples in memory), "
                f"got {stream}",
                "bad_arguments",
            )
        index = self._index(params)
        rows = np.arange(index, index + stream) % samples.shape[0]
        audio = samples[rows[0]] if stream == 1 else samples[rows]
        work = self._stage_work(model, stage, audio)

        times: list[float] = []
        self._sim_state(stage)
        t_start = now()
        t_end = t_start
        deadline = t_start + duration
        while True:
            a = now()
            work()
            t_end = now()
            times.append(t_end - a)
            if t_end >= deadline or stop.is_set():
                break
        self._sim_state("idle")
        per_sample = np.asarray(times) / stream
        n = len(times)
        return {
            "stage": stage,
            "stream": stream,
            "iterations": n,
            "samples": n * stream,
            "mean_s": float(per_sample.mean()),
            "std_error_s": float(per_sample.std(ddof=1) / math.sqrt(n)) if n > 1 else 0.0,
            "t_start": t_start,
            "t_end": t_end,
            "stopped_early": stop.is_set() and t_end < deadline,
        }

    @staticmethod
    def _stage_work(model: QuantisedModel, stage: str, audio: np.ndarray) -> Callable[[], Any]:
        cfg = model.mfe_config
        if stage == "preprocessing":
            return lambda: extract_features(audio, cfg)
        features = extract_features(audio, cfg)  # held in memory: only inference is repeated
        if features.ndim == 2:
            return lambda: model.infer(features)
        return lambda: model.predict(features)

    # -- checks ---------------------------------------------------------------------------------

    def _index(self, params: dict[str, Any]) -> int:
        samples = self._require_samples()
        index = params.get("index", 0)
        if not isinstance(index, int) or not 0 <= index < samples.shape[0]:
            raise DriverError(
                f"sample index {index!r} is outside 0..{samples.shape[0] - 1}", "bad_arguments"
            )
        return index

    def _require_model(self) -> QuantisedModel:
        if self.model is None:
            raise DriverError(
                "no asc model loaded: send load with part='model' first", "not_loaded"
            )
        return self.model

    def _require_samples(self) -> np.ndarray:
        if self._samples is None or self._filled < self._samples.shape[0]:
            loaded = 0 if self._samples is None else self._filled
            total = 0 if self._samples is None else self._samples.shape[0]
            raise DriverError(
                f"asc samples not fully loaded ({loaded} of {total}): send load with "
                "part='samples' first",
                "not_loaded",
            )
        return self._samples

    def capabilities(self) -> dict[str, Any]:
        return {"modes": list(MODES), "stages": list(STAGES), "max_repeat_s": MAX_REPEAT_S}

    def close(self) -> None:
        self.model = None
        self._samples = None
