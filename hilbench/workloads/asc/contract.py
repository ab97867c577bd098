"""The ASC (acoustic scene classification) contract: model, one sample or a stream in device
memory, single-stream runs and power windows, their replies, the capabilities an ASC device
declares, and the :class:`AscDevice` role.

All work is at batch size 1; loading is never timed; times are float seconds on the agent's
clock. ``STAGES`` is the one definition of the timed stages.
"""

from __future__ import annotations

import threading
from typing import Annotated, Any, Literal, Protocol, runtime_checkable

import msgspec
import numpy as np

from hilbench.contracts.base import (
    Contract,
    ContractError,
    Count,
    Detail,
    Finite,
    Instant,
    Name,
    Reply,
    Seconds,
    Text,
    UntimedWork,
    payload_count,
)
from hilbench.contracts.power import PowerReport

STAGES: tuple[str, ...] = ("preprocessing", "inference")
Stage = Literal["preprocessing", "inference"]
WindowStage = Literal["idle", "preprocessing", "inference"]
MAX_WINDOW_S = 3600.0
MAX_STREAM = 3600  # samples in one stream (an hour of audio)
MAX_SAMPLE_LIST = 4096  # samples in one sample list
MAX_SAMPLE_LIST_BYTES = 64 * 1024 * 1024  # audio in one sample list (the agent holds it)

Index = Annotated[int, msgspec.Meta(ge=0, le=2**31 - 1, description="int 0 … 2^31−1")]
Window = Annotated[float, msgspec.Meta(gt=0, le=MAX_WINDOW_S, description="s, (0, 3600]")]


# --- load ------------------------------------------------------------------------------------

class AscLoadModel(Contract, tag_field="part", tag="model", kw_only=True):
    """The int8 model: its JSON description and one integer payload per name in ``arrays``."""

    workload: Literal["asc"]
    meta: dict[str, Any]
    arrays: Annotated[list[Name], msgspec.Meta(max_length=64)]

    def check_payloads(self, arrays: list[np.ndarray]) -> None:
        payload_count(arrays, len(self.arrays))
        for i, a in enumerate(arrays):
            if a.dtype.kind not in "iu":
                raise ContractError("bad_arguments", f"payloads[{i}]",
                                    f"model tensors are integer arrays, got {a.dtype}")


class AscLoadSample(Contract, tag_field="part", tag="sample", kw_only=True):
    """ONE float32 1-D payload: one 1 s sample at the model's rate (or int8 2-D features)."""

    workload: Literal["asc"]
    index: Index

    def check_payloads(self, arrays: list[np.ndarray]) -> None:
        payload_count(arrays, 1)
        a = arrays[0]
        if not ((a.dtype == np.float32 and a.ndim == 1) or (a.dtype == np.int8 and a.ndim == 2)):
            raise ContractError("bad_arguments", "payloads[0]",
                                "a sample is float32 1-D audio (or int8 2-D features), got "
                                f"{a.dtype}{list(a.shape)}")


class AscUnload(Contract, tag_field="part", tag="unload", kw_only=True):
    workload: Literal["asc"]
    index: Index


def _sample_rows(arrays: list[np.ndarray], rows: int, what: str) -> np.ndarray:
    """The one float32 ``(rows, samples)`` payload of a stream or a sample list."""
    payload_count(arrays, 1)
    a = arrays[0]
    if a.dtype != np.float32 or a.ndim != 2 or a.shape[0] != rows:
        raise ContractError("bad_arguments", "payloads[0]",
                            f"{what} is float32 ({rows}, samples), got {a.dtype}{list(a.shape)}")
    return a


class AscLoadStream(Contract, tag_field="part", tag="stream", kw_only=True):
    """ONE float32 ``(k, samples)`` payload: k consecutive 1 s samples."""

    workload: Literal["asc"]
    indices: Annotated[list[Index], msgspec.Meta(min_length=1, max_length=MAX_STREAM)]

    def check_payloads(self, arrays: list[np.ndarray]) -> None:
        _sample_rows(arrays, len(self.indices), "a stream")


class AscUnloadStream(Contract, tag_field="part", tag="unload_stream", kw_only=True):
    workload: Literal["asc"]


class AscLoadSampleList(Contract, tag_field="part", tag="sample_list", kw_only=True):
    """ONE float32 ``(k, samples)`` payload: the samples of the next ``samples`` runs, held by
    the agent (host memory, not device memory) until the next list or model replaces them.
    Untimed, like LoadGen's loading of its sample library before queries are issued."""

    workload: Literal["asc"]
    indices: Annotated[list[Index], msgspec.Meta(min_length=1, max_length=MAX_SAMPLE_LIST)]

    def check_payloads(self, arrays: list[np.ndarray]) -> None:
        a = _sample_rows(arrays, len(self.indices), "a sample list")
        if a.nbytes > MAX_SAMPLE_LIST_BYTES:
            raise ContractError("bad_arguments", "payloads[0]",
                                f"a sample list holds at most {MAX_SAMPLE_LIST_BYTES >> 20} MiB, "
                                f"got {a.nbytes / 2**20:.1f} MiB")
        if len(set(self.indices)) != len(self.indices):
            raise ContractError("bad_arguments", "indices", "each sample appears once")


AscLoad = (AscLoadModel | AscLoadSample | AscUnload | AscLoadStream | AscUnloadStream
           | AscLoadSampleList)


class AscModelReply(Reply, kw_only=True):
    classes: list[Any]
    sample_rate: Count
    sample_capacity: Count
    input_frames: Count | None = None
    input_filters: Count | None = None
    weight_bytes: Count | None = None
    detail: Detail = msgspec.field(default_factory=dict)


class AscHeldReply(Reply, kw_only=True):
    """Reply to ``sample`` and ``unload``: what device memory holds now."""

    index: Index
    held: list[Index]
    capacity: Count | None = None
    detail: Detail = msgspec.field(default_factory=dict)


class AscSampleListReply(Reply, kw_only=True):
    """Reply to ``sample_list``: the samples the agent holds for ``samples`` runs."""

    indices: list[Index]


class AscStreamReply(Reply, kw_only=True):
    stream_samples: Count
    indices: list[Index] = msgspec.field(default_factory=list)
    detail: Detail = msgspec.field(default_factory=dict)


# --- run -------------------------------------------------------------------------------------

class AscSingleStream(Contract, tag_field="mode", tag="single_stream", kw_only=True):
    workload: Literal["asc"]
    index: Index


class AscRepeat(Contract, tag_field="mode", tag="repeat", kw_only=True):
    """The held sample ``index`` processed again and again for ``duration_s`` (idle: no
    work, no index needed)."""

    workload: Literal["asc"]
    stage: WindowStage
    duration_s: Window
    index: Index | None = None


class AscStream(Contract, tag_field="mode", tag="stream", kw_only=True):
    workload: Literal["asc"]
    stage: WindowStage
    duration_s: Window


class AscSamples(Contract, tag_field="mode", tag="samples", kw_only=True):
    """Single stream over samples of the loaded sample list, in the order given, run by the
    agent beside the device: for each, exactly as a procedure would do it over the wire, load
    it into device memory (untimed), run it (``single_stream``, timed on the device) and
    unload it; the next only after the previous finished. The agent, not the driver, runs the
    list (protocol version 3), so no round trip lies between two samples; the orchestrator
    checks every claimed region against its own window of this request."""

    workload: Literal["asc"]
    indices: Annotated[list[Index], msgspec.Meta(min_length=1, max_length=MAX_SAMPLE_LIST)]


AscRun = AscSingleStream | AscRepeat | AscStream | AscSamples


class AscSampleResult(Reply, kw_only=True):
    index: Index
    predicted: Count
    scores: list[Finite]
    inference_s: Seconds
    t_start: Instant
    t_end: Instant
    preprocess_s: Seconds | None
    preprocess_reason: Text | None = None
    preprocess_latency_s: Seconds | None = None
    detail: Detail = msgspec.field(default_factory=dict)


class AscSamplesResult(Reply, kw_only=True):
    """Reply to ``samples``: one ``single_stream`` result per sample run, in order; fewer than
    asked only when a ``stop`` came (``stopped_early``)."""

    results: Annotated[list[AscSampleResult], msgspec.Meta(max_length=MAX_SAMPLE_LIST)]
    stopped_early: bool = False


class AscWindowResult(Reply, kw_only=True):
    """A power window: ``mean_s`` per sample and its standard error (None for idle, or with
    fewer than 2 iterations)."""

    stage: WindowStage
    iterations: Count
    mean_s: Seconds | None
    std_error_s: Seconds | None
    t_start: Instant
    t_end: Instant
    stopped_early: bool
    index: Index | None = None
    stream_samples: Count | None = None
    indices: list[Index] | None = None
    power: PowerReport | None = None  # the device's own reading (an on-board monitor)
    detail: Detail = msgspec.field(default_factory=dict)


class AscCapabilities(Contract, omit_defaults=False, kw_only=True):
    """``sample_untimed``: the most time one sample spends inside a request's window outside
    its claimed stages (serial transfer, audio playback, the agent's load and unload between
    the samples of a sample list), with its reason; absent: none."""

    sample_capacity: Annotated[int, msgspec.Meta(ge=1, le=2**31 - 1)] = 1
    stream_capacity: Count = 0
    modes: list[Literal["single_stream", "repeat", "stream", "samples"]] = msgspec.field(
        default_factory=lambda: ["single_stream"])
    stages: list[Stage] | None = None
    timing: Text | None = None
    onboard_power: bool = False
    max_repeat_s: Window | None = None
    sample_untimed: UntimedWork | None = None
    detail: Detail = msgspec.field(default_factory=dict)

    def timed_stages(self) -> tuple[str, ...]:
        """The stages the device can time in a power window (absent: both)."""
        return tuple(s for s in STAGES if self.stages is None or s in self.stages)


@runtime_checkable
class AscDevice(Protocol):
    """The ASC role: a device (or a handle to one) holding a model and samples, running them.

    One method per message kind, as LoadGen loads its samples and then issues queries: loads
    are untimed, runs timed on the device. The ASC plugin's table routes each request to its
    method (``hilbench.workloads.asc.plugin``); a driver without streams may leave out
    ``load_stream``, ``free_stream`` and ``run_stream`` (such a request is refused naming
    ``part`` or ``mode``)."""

    def load_model(self, body: AscLoadModel, arrays: list[np.ndarray]) -> AscModelReply:
        """The model: its metadata and one array per name in ``body.arrays``."""
        ...

    def load_sample(self, body: AscLoadSample, audio: np.ndarray) -> AscHeldReply:
        """One sample into device memory under ``body.index``."""
        ...

    def free_sample(self, body: AscUnload) -> AscHeldReply:
        """The memory sample ``body.index`` holds, freed."""
        ...

    def load_stream(self, body: AscLoadStream, audio: np.ndarray) -> AscStreamReply:
        """k consecutive samples (``audio`` is ``(k, samples)``) to play in order."""
        ...

    def free_stream(self, body: AscUnloadStream) -> AscStreamReply:
        """The loaded stream, freed."""
        ...

    def run_sample(self, body: AscSingleStream) -> AscSampleResult:
        """One held sample, its stages timed on the device (single stream)."""
        ...

    def run_repeat(self, body: AscRepeat, stop: threading.Event) -> AscWindowResult:
        """A power window: the held sample again and again (or idle) for ``duration_s``."""
        ...

    def run_stream(self, body: AscStream, stop: threading.Event) -> AscWindowResult:
        """A power window: the loaded stream played in order (or idle) for ``duration_s``."""
        ...
