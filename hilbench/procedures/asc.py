"""ASC (acoustic scene classification) procedures: single stream, and power windows.

``asc.single_stream`` is the LoadGen single-stream scenario: the model and every test sample
are loaded into the agent before anything is timed, then samples are issued one at a time, the
next only after the previous finished. The agent times pre-processing and inference separately
on its own clock; the orchestrator compares the prediction with the label (classification, not
timed) and keeps one ``sample`` event per sample. Results: accuracy, mean pre-processing and
inference time with standard error, and the harness overhead (round trip minus device time).

``asc.power`` is the separate power measurement (the Arduino method): an idle window with the
model loaded and the device ready, then for each stage an active window in which the device
repeats one sample held in memory for ``active_s``. With ``stream_s`` further power runs repeat
k-second streams (k samples per block) so set-up is amortised, and say so in every figure.

Campaign table::

    [[asc]]
    agent = "cpu0"
    fixture = true            # generate the synthetic data set (into `data`, or a cache dir)
    # data = "path/to/TAU-urban-acoustic-scenes-2020-mobile-development"
    # model = "asc-int8.npz"  # else trained on the train split (train_epochs, train_seed)
    limit = 20                # test clips (ten 1 s samples each) for quick runs
    power = true
    idle_s = 60
    active_s = 60
    stream_s = [5, 10]
    repetitions = 1           # idle + active windows per power run
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hilbench.clock import now
from hilbench.documents import Event, Metric
from hilbench.orchestrator.client import AgentClient
from hilbench.orchestrator.instruments import (
    Instrument,
    aperture_s,
    timing_uncertainty_s,
    to_watts,
)
from hilbench.orchestrator.phases import Phase, RunContext
from hilbench.power.align import BOUNDARY_POLICIES
from hilbench.power.metrics import (
    PhaseWindow,
    PowerEstimate,
    dynamic_power,
    energy_per_inference,
    phase_power,
    pool_estimates,
)
from hilbench.power.source import SampleBatch

if TYPE_CHECKING:
    from hilbench.orchestrator.campaign import Campaign

log = logging.getLogger(__name__)

STAGES = ("preprocessing", "inference")
LOAD_TIMEOUT_S = 300.0
SAMPLE_TIMEOUT_S = 60.0  # one sample takes milliseconds; this only catches a hung device
REPLY_MARGIN_S = 60.0
CHUNK_BYTES = 64 * 1024 * 1024  # well under the protocol's 256 MiB per message
POLL_INTERVAL_S = 0.25
MIN_SAMPLE_RATE = 8000

_KEYS = {
    "agent",
    "data",
    "fixture",
    "fixture_seed",
    "model",
    "train_epochs",
    "train_seed",
    "sample_rate",
    "limit",
    "power",
    "idle_s",
    "active_s",
    "stream_s",
    "repetitions",
    "power_sample",
    "boundary",
}


# --- campaign tables -------------------------------------------------------------------------


@dataclass(frozen=True)
class AscSpec:
    """One validated ``[[asc]]`` table; paths are absolute."""

    agent: str
    data: str | None = None  # None with fixture: generated into the cache directory
    fixture: bool = False
    fixture_seed: int = 0
    model: str | None = None  # None: trained on the train split, then cached
    train_epochs: int = 10
    train_seed: int = 0
    sample_rate: int = 16000
    limit: int | None = None  # test clips
    power: bool = False
    idle_s: float = 60.0
    active_s: float = 60.0
    stream_s: tuple[int, ...] = ()
    repetitions: int = 1
    power_sample: int = 0
    boundary: str = "exclude"

    @property
    def digest(self) -> str:
        """Short identity of the table's settings, part of unit keys."""
        blob = json.dumps(asdict(self), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:8]


def _number(where: str, key: str, value: Any, *, integer: bool, minimum: float) -> Any:
    ok_type = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not ok_type:
        kind = "an integer" if integer else "a number"
        raise ValueError(f"{where} {key}: {value!r} is not {kind}")
    if not value >= minimum or (not integer and not math.isfinite(value)):
        raise ValueError(f"{where} {key}: {value!r} must be >= {minimum:g}")
    return value if integer else float(value)


def _path(where: str, key: str, value: Any, base: Path) -> Path:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where} {key}: {value!r} is not a path")
    path = Path(value).expanduser()
    return path if path.is_absolute() else (base / path).resolve()


def parse_asc_tables(
    tables: list[dict[str, Any]], agent_ids: Sequence[str], source: str
) -> list[AscSpec]:
    """Validate the campaign's ``[[asc]]`` tables; ValueError names the file, table and key.

    Relative paths are taken from the campaign file's directory.
    """
    if not isinstance(tables, list):
        raise ValueError(f"{source}: asc must be an array of tables ([[asc]])")
    base = Path(source).parent if Path(source).suffix else Path.cwd()
    specs = []
    for i, table in enumerate(tables):
        where = f"{source} [[asc]] #{i + 1}"
        if not isinstance(table, dict):
            raise ValueError(f"{where}: not a table")
        unknown = sorted(set(table) - _KEYS)
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(_KEYS)}")
        specs.append(_parse_table(where, table, list(agent_ids), base))
    return specs


def _parse_table(where: str, table: dict[str, Any], ids: list[str], base: Path) -> AscSpec:
    agent = table.get("agent", ids[0] if ids else None)
    if agent not in ids:
        raise ValueError(f"{where} agent: {agent!r} is not one of {ids}")
    fixture = table.get("fixture", False)
    power = table.get("power", False)
    for key, flag in (("fixture", fixture), ("power", power)):
        if not isinstance(flag, bool):
            raise ValueError(f"{where} {key}: {flag!r} is not true or false")
    data = _path(where, "data", table["data"], base) if "data" in table else None
    if data is None and not fixture:
        raise ValueError(f"{where}: give data = \"<data set directory>\" or fixture = true")
    if data is not None and not fixture and not data.is_dir():
        raise ValueError(f"{where} data: {data} is not a directory")
    model = _path(where, "model", table["model"], base) if "model" in table else None
    if model is not None and not model.is_file():
        raise ValueError(f"{where} model: model file {model} not found")
    stream = table.get("stream_s", [])
    if not isinstance(stream, list):
        raise ValueError(f"{where} stream_s: {stream!r} is not a list of seconds, e.g. [5, 10]")
    streams = tuple(_number(where, "stream_s", s, integer=True, minimum=2) for s in stream)
    if len(set(streams)) != len(streams):
        raise ValueError(f"{where} stream_s: {list(streams)} repeats a length")
    boundary = table.get("boundary", "exclude")
    if boundary not in BOUNDARY_POLICIES:
        raise ValueError(f"{where} boundary: {boundary!r} is not one of {list(BOUNDARY_POLICIES)}")
    limit = table.get("limit")
    return AscSpec(
        agent=str(agent),
        data=None if data is None else str(data),
        fixture=fixture,
        fixture_seed=_number(where, "fixture_seed", table.get("fixture_seed", 0),
                             integer=True, minimum=0),
        model=None if model is None else str(model),
        train_epochs=_number(where, "train_epochs", table.get("train_epochs", 10),
                             integer=True, minimum=1),
        train_seed=_number(where, "train_seed", table.get("train_seed", 0),
                           integer=True, minimum=0),
        sample_rate=_number(where, "sample_rate", table.get("sample_rate", 16000),
                            integer=True, minimum=MIN_SAMPLE_RATE),
        limit=None if limit is None else _number(where, "limit", limit, integer=True, minimum=1),
        power=power,
        idle_s=_number(where, "idle_s", table.get("idle_s", 60.0), integer=False, minimum=0.1),
        active_s=_number(where, "active_s", table.get("active_s", 60.0),
                         integer=False, minimum=0.1),
        stream_s=streams,
        repetitions=_number(where, "repetitions", table.get("repetitions", 1),
                            integer=True, minimum=1),
        power_sample=_number(where, "power_sample", table.get("power_sample", 0),
                             integer=True, minimum=0),
        boundary=boundary,
    )


# --- data and model (prepared once per table, shared by its units) ---------------------------


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/hilbench``, else ``~/.cache/hilbench``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hilbench"


def ensure_fixture(root: Path, seed: int = 0) -> Path:
    """The synthetic data set at ``root``, generated there first if the directory is empty.

    Generation goes to a sibling directory that is renamed into place, so an interrupted run
    never leaves half a data set that a later run would take as complete.
    """
    from hilbench.workloads.asc import make_fixture

    if root.is_dir() and any(root.iterdir()):
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    partial = root.with_name(f"{root.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    make_fixture(partial, seed=seed)
    if root.is_dir():
        root.rmdir()  # empty, checked above
    os.replace(partial, root)
    return root


def model_cache_path(spec: AscSpec, data_root: Path) -> Path:
    """Where a model trained for this table is kept: in the data directory when it is
    writable, else in the cache directory under a name derived from the data path."""
    name = f"hilbench-asc-model-e{spec.train_epochs}-seed{spec.train_seed}-{spec.sample_rate}hz"
    if os.access(data_root, os.W_OK):
        return data_root / f"{name}.npz"
    digest = hashlib.sha256(str(data_root).encode()).hexdigest()[:12]
    return cache_dir() / "asc-models" / f"{digest}-{name}.npz"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class AscResources:
    """The data set, model and test split of one ``[[asc]]`` table, prepared on first use."""

    spec: AscSpec
    data_root: Path | None = None
    model_path: Path | None = None
    model: Any = None  # QuantisedModel
    test: Any = None  # AscSplit
    provenance: dict[str, Any] = field(default_factory=dict)

    def ensure(self) -> dict[str, Any]:
        """Generate the fixture and train the model if needed, load the test split; returns
        what the run records about them."""
        if self.test is not None:
            return self.provenance
        from hilbench.workloads.asc import load_split
        from hilbench.workloads.asc.quant import QuantisedModel

        spec = self.spec
        if spec.fixture:
            default = cache_dir() / f"asc-fixture-{spec.fixture_seed}"
            root = Path(spec.data) if spec.data else default
            self.data_root = ensure_fixture(root, spec.fixture_seed)
        else:
            assert spec.data is not None
            self.data_root = Path(spec.data)
        trained: dict[str, Any] | None = None
        if spec.model:
            self.model_path = Path(spec.model)
        else:
            self.model_path = model_cache_path(spec, self.data_root)
            if not self.model_path.is_file():
                trained = self._train(self.model_path)
        self.model = QuantisedModel.load(self.model_path)
        if self.model.mfe_config.sample_rate != spec.sample_rate:
            raise ValueError(
                f"model {self.model_path} takes {self.model.mfe_config.sample_rate} Hz audio; "
                f"the [[asc]] table says sample_rate = {spec.sample_rate}"
            )
        self.test = load_split(self.data_root, "test", sample_rate=spec.sample_rate,
                               limit=spec.limit)
        if len(self.test) == 0:
            raise ValueError(f"the test split of {self.data_root} is empty")
        self.provenance = {
            "data": str(self.data_root),
            "data_kind": "synthetic fixture" if spec.fixture else "data set",
            "model": str(self.model_path),
            "model_sha256": _sha256(self.model_path),
            "model_info": self.model.info,
            "trained_now": trained,
            "test_slices": len(self.test),
            "test_clips": len(set(self.test.clip_ids)),
        }
        return self.provenance

    def _train(self, out: Path) -> dict[str, Any]:
        from hilbench.workloads.asc.train import train_model

        spec = self.spec
        assert self.data_root is not None
        log.info("training the ASC model on %s (%d epochs, seed %d)", self.data_root,
                 spec.train_epochs, spec.train_seed)
        partial = out.with_name(f"{out.stem}.partial-{os.getpid()}.npz")
        report = train_model(self.data_root, partial, epochs=spec.train_epochs,
                             seed=spec.train_seed, sample_rate=spec.sample_rate)
        os.replace(partial, out)
        return {**report.to_dict(), "model_path": str(out)}


# --- talking to the agent ------------------------------------------------------------------


def send_model(client: AgentClient, model: Any) -> dict[str, Any]:
    """Put the int8 model into the agent: JSON metadata plus its integer arrays."""
    arrays = model.arrays()
    names = sorted(arrays)
    reply = client.request(
        "load",
        {"workload": "asc", "part": "model", "meta": model.metadata(), "arrays": names},
        [np.ascontiguousarray(arrays[n]) for n in names],
        timeout_s=LOAD_TIMEOUT_S,
    )
    return reply.body


def send_samples(client: AgentClient, slices: np.ndarray) -> dict[str, Any]:
    """Put audio samples (N, samples) float32 into the agent's memory, in chunks."""
    slices = np.ascontiguousarray(slices, dtype=np.float32)
    rows = max(1, CHUNK_BYTES // max(1, slices[0].nbytes))
    total = slices.shape[0]
    body: dict[str, Any] = {}
    for offset in range(0, total, rows):
        reply = client.request(
            "load",
            {"workload": "asc", "part": "samples", "offset": offset, "total": total},
            [slices[offset : offset + rows]],
            timeout_s=LOAD_TIMEOUT_S,
        )
        body = reply.body
    return body


@dataclass(frozen=True)
class SampleRecord:
    """One single-stream sample: device timings, prediction and the orchestrator round trip."""

    index: int
    predicted: int
    preprocess_s: float
    inference_s: float
    round_trip_s: float  # orchestrator: request sent .. reply received
    t_done: float

    @property
    def device_s(self) -> float:
        return self.preprocess_s + self.inference_s

    @property
    def overhead_s(self) -> float:
        """Harness time per sample: everything the device did not report as its own."""
        return self.round_trip_s - self.device_s


def run_single_stream(
    client: AgentClient, count: int, on_sample: Callable[[SampleRecord, dict], None] | None = None
) -> list[SampleRecord]:
    """Issue samples 0..count-1 one at a time, each only after the previous reply arrived."""
    records = []
    for index in range(count):
        t_issue = now()
        reply = client.request(
            "run",
            {"workload": "asc", "mode": "single_stream", "index": index},
            timeout_s=SAMPLE_TIMEOUT_S,
        )
        t_done = now()
        body = reply.body
        record = SampleRecord(
            index=index,
            predicted=int(body["predicted"]),
            preprocess_s=float(body["preprocess_s"]),
            inference_s=float(body["inference_s"]),
            round_trip_s=t_done - t_issue,
            t_done=t_done,
        )
        records.append(record)
        if on_sample is not None:
            on_sample(record, body)
    return records


def mean_and_std_error(values: Sequence[float]) -> tuple[float, float]:
    """Mean and its standard error (sample standard deviation / sqrt(n))."""
    n = len(values)
    if n == 0:
        raise ValueError("no values")
    mean = statistics.fmean(values)
    return mean, (statistics.stdev(values) / math.sqrt(n) if n > 1 else 0.0)


# --- units -----------------------------------------------------------------------------------


@dataclass
class AscSingleStreamUnit:
    spec: AscSpec
    repetition: int
    resources: AscResources = field(repr=False, compare=False)

    @property
    def agent(self) -> str:
        return self.spec.agent

    @property
    def procedure(self) -> str:
        return "asc.single_stream"

    @property
    def key(self) -> str:
        return f"asc/single_stream/{self.spec.agent}/{self.spec.digest}/rep={self.repetition}"

    def params(self) -> dict[str, Any]:
        return {"workload": "asc", "scenario": "single_stream", "repetition": self.repetition,
                **_spec_params(self.spec)}

    def prepare(self) -> dict[str, Any]:
        return self.resources.ensure()

    def run(self, ctx: RunContext, client: AgentClient, instruments: Sequence[Instrument]) -> None:
        run_single_stream_unit(ctx, self.resources, client)


@dataclass
class AscPowerUnit:
    spec: AscSpec
    stream: int  # samples per block: 1 = one sample repeated, k = k-second streams
    repetition: int
    resources: AscResources = field(repr=False, compare=False)

    @property
    def agent(self) -> str:
        return self.spec.agent

    @property
    def procedure(self) -> str:
        return "asc.power"

    @property
    def key(self) -> str:
        return (f"asc/power/{self.spec.agent}/{self.spec.digest}/stream={self.stream}/"
                f"rep={self.repetition}")

    def params(self) -> dict[str, Any]:
        return {"workload": "asc", "scenario": "power", "stream_samples": self.stream,
                "amortised": self.stream > 1, "repetition": self.repetition,
                **_spec_params(self.spec)}

    def prepare(self) -> dict[str, Any]:
        return self.resources.ensure()

    def run(self, ctx: RunContext, client: AgentClient, instruments: Sequence[Instrument]) -> None:
        run_power_unit(ctx, self.resources, self.stream, client, instruments)


def _spec_params(spec: AscSpec) -> dict[str, Any]:
    d = asdict(spec)
    d["stream_s"] = list(spec.stream_s)
    return d


def expand_units(campaign: Campaign) -> list[AscSingleStreamUnit | AscPowerUnit]:
    """Per table and repetition: one single-stream run, then (with power) one power run for
    one repeated sample and one per amortised stream length."""
    units: list[AscSingleStreamUnit | AscPowerUnit] = []
    for spec in campaign.asc:
        resources = AscResources(spec)
        for rep in range(campaign.repetitions):
            units.append(AscSingleStreamUnit(spec, rep, resources))
            if spec.power:
                for stream in (1, *spec.stream_s):
                    units.append(AscPowerUnit(spec, stream, rep, resources))
    return units


# --- single stream ---------------------------------------------------------------------------


def run_single_stream_unit(ctx: RunContext, res: AscResources, client: AgentClient) -> None:
    """Load model and test samples (untimed), stream the samples, emit records and metrics."""
    test = res.test
    with ctx.phase("load", [client]) as phase:
        t0 = ctx.now()
        model_reply = send_model(client, res.model)
        samples_reply = send_samples(client, test.slices)
        ctx.emit(Event(ctx.run_uid, phase.uid, "loaded", ctx.now(), {
            "model": model_reply, "samples": samples_reply, "load_s": ctx.now() - t0,
            "sample_bytes": int(test.slices.nbytes),
        }))
    labels = test.labels

    with ctx.phase("single_stream", [client]) as phase:
        def on_sample(record: SampleRecord, body: dict) -> None:
            label = int(labels[record.index])
            ctx.emit(Event(ctx.run_uid, phase.uid, "sample", record.t_done, {
                "index": record.index,
                "clip_id": test.clip_ids[record.index],
                "slice": int(test.slice_index[record.index]),
                "label": label,
                "predicted": record.predicted,
                "correct": record.predicted == label,
                "logits": body.get("logits"),
                "preprocess_s": record.preprocess_s,
                "inference_s": record.inference_s,
                "round_trip_s": record.round_trip_s,
                "overhead_s": record.overhead_s,
                "t_device_start": body.get("t_start"),
            }))

        records = run_single_stream(client, len(test), on_sample)
    _emit_single_stream_metrics(ctx, records, labels)


def _emit_single_stream_metrics(
    ctx: RunContext, records: list[SampleRecord], labels: np.ndarray
) -> None:
    run = ctx.run_uid
    n = len(records)
    correct = sum(r.predicted == int(labels[r.index]) for r in records)
    accuracy = correct / n
    ctx.emit(Metric(run, "accuracy", accuracy, "", meta={
        "correct": correct, "samples": n,
        "std_error": math.sqrt(accuracy * (1 - accuracy) / n),
        "note": "classification on the orchestrator, not timed",
    }))
    timer = "device timers (agent monotonic clock), data in device memory .. step done"
    for name, values in (
        ("preprocess_time_s", [r.preprocess_s for r in records]),
        ("inference_time_s", [r.inference_s for r in records]),
    ):
        mean, se = mean_and_std_error(values)
        ctx.emit(Metric(run, name, mean, "s", se, meta={
            "statistic": "mean", "uncertainty": "standard error of the mean", "samples": n,
            "median_s": statistics.median(values), "source": timer,
        }))
    overhead = np.array([r.overhead_s for r in records])
    device = np.array([r.device_s for r in records])
    harness_meta = {"samples": n, "device_median_s": float(np.median(device)),
                    "definition": "orchestrator round trip per sample minus device-reported "
                                  "pre-processing + inference time"}
    ctx.emit(Metric(run, "harness_overhead_median_s", float(np.median(overhead)), "s",
                    meta=harness_meta))
    ctx.emit(Metric(run, "harness_overhead_p99_s", float(np.percentile(overhead, 99)), "s",
                    meta=harness_meta))
    ctx.emit(Metric(run, "samples", float(n), ""))


# --- power -----------------------------------------------------------------------------------


@dataclass
class _Window:
    """One measured window: its stage, where it lies on the orchestrator timeline, the
    samples of the phase it belongs to, and (active windows) the device's loop report."""

    stage: str  # "idle" or one of STAGES
    repetition: int
    start: float
    end: float
    batch: SampleBatch | None
    offset_uncertainty_s: float
    loop: dict[str, Any] | None = None


def run_power_unit(
    ctx: RunContext,
    res: AscResources,
    stream: int,
    client: AgentClient,
    instruments: Sequence[Instrument],
) -> None:
    """Idle window, then one active window per stage, ``repetitions`` times; then the figures."""
    spec = res.spec
    test = res.test
    rows = (spec.power_sample + np.arange(stream)) % len(test)
    with ctx.phase("load", [client]) as phase:
        model_reply = send_model(client, res.model)
        send_samples(client, test.slices[rows])
        ctx.emit(Event(ctx.run_uid, phase.uid, "loaded", ctx.now(), {
            "model": model_reply, "samples": [int(r) for r in rows],
            "clip_ids": [test.clip_ids[int(r)] for r in rows],
        }))
    inst = instruments[0] if instruments else None
    windows: list[_Window] = []
    for rep in range(spec.repetitions):
        windows.append(_idle_window(ctx, client, instruments, inst, spec.idle_s, rep))
        for stage in STAGES:
            windows.append(
                _active_window(ctx, client, instruments, inst, stage, stream, spec.active_s, rep)
            )
    _emit_power_metrics(ctx, spec, stream, windows, inst, len(instruments))


def _idle_window(
    ctx: RunContext,
    client: AgentClient,
    instruments: Sequence[Instrument],
    inst: Instrument | None,
    idle_s: float,
    rep: int,
) -> _Window:
    """The device configured, model and sample in memory, nothing asked of it."""
    with ctx.phase("idle", [client], instruments) as phase:
        start = ctx.now()
        end = start + idle_s
        while (remaining := end - ctx.now()) > 0:
            phase.poll()
            time.sleep(min(POLL_INTERVAL_S, remaining))
        end = ctx.now()
        ctx.emit(Event(ctx.run_uid, phase.uid, "idle_window", end,
                       {"repetition": rep, "start": start, "end": end}))
    return _Window("idle", rep, start, end, _batch(phase, inst),
                   phase.offsets[client.name].uncertainty_s)


def _active_window(
    ctx: RunContext,
    client: AgentClient,
    instruments: Sequence[Instrument],
    inst: Instrument | None,
    stage: str,
    stream: int,
    active_s: float,
    rep: int,
) -> _Window:
    """The device repeats one stage on samples in memory for ``active_s`` (its own clock)."""
    with ctx.phase(f"active_{stage}", [client], instruments) as phase:
        reply = client.request(
            "run",
            {"workload": "asc", "mode": "repeat", "stage": stage, "duration_s": active_s,
             "index": 0, "stream": stream},
            timeout_s=active_s + REPLY_MARGIN_S,
            while_waiting=phase.poll,
        )
        loop = reply.body
        start = phase.to_orchestrator_time(client.name, float(loop["t_start"]))
        end = phase.to_orchestrator_time(client.name, float(loop["t_end"]))
        ctx.emit(Event(ctx.run_uid, phase.uid, "repeat_result", ctx.now(),
                       {**loop, "repetition": rep, "start": start, "end": end}))
    return _Window(stage, rep, start, end, _batch(phase, inst),
                   phase.offsets[client.name].uncertainty_s, loop)


def _batch(phase: Phase, inst: Instrument | None) -> SampleBatch | None:
    return None if inst is None else phase.samples.get(inst.spec.id)


def _execution(loops: list[dict[str, Any]]) -> tuple[float, float]:
    """Per-sample mean time over the active windows (device timers), weighted by samples."""
    counts = np.array([float(lp["samples"]) for lp in loops])
    share = counts / counts.sum()
    means = np.array([float(lp["mean_s"]) for lp in loops])
    errors = np.array([float(lp["std_error_s"]) for lp in loops])
    return float((share * means).sum()), float(math.sqrt(((share * errors) ** 2).sum()))


def _emit_power_metrics(
    ctx: RunContext,
    spec: AscSpec,
    stream: int,
    windows: list[_Window],
    inst: Instrument | None,
    instrument_count: int,
) -> None:
    run = ctx.run_uid
    common: dict[str, Any] = {
        "stream_samples": stream,
        "amortised": stream > 1,
        "method": (
            f"device repeats {stream}-sample (={stream} s of audio) streams held in memory, "
            f"per-sample time = block time / {stream}" if stream > 1 else
            "device repeats one sample held in memory"
        ),
        "idle_s": spec.idle_s,
        "active_s": spec.active_s,
        "repetitions": spec.repetitions,
    }
    loops = {stage: [w.loop for w in windows if w.stage == stage and w.loop] for stage in STAGES}
    executions = {stage: _execution(loops[stage]) for stage in STAGES}
    for stage in STAGES:
        mean, se = executions[stage]
        ctx.emit(Metric(run, f"loop_time_s.{stage}", mean, "s", se, meta={
            **common, "uncertainty": "standard error of the mean",
            "samples": sum(int(lp["samples"]) for lp in loops[stage]),
            "source": "device timers (agent monotonic clock)",
        }))
        internal = [lp.get("power", {}) for lp in loops[stage]]
        if internal and all(p.get("measured") for p in internal):
            ctx.emit(Metric(run, f"internal_active_power_w.{stage}",
                            statistics.fmean(float(p["avg_power_w"]) for p in internal), "W",
                            meta={**common, "source": "rapl", "domains": internal[0]["domains"]}))

    figures = _power_figures(spec, windows, inst, executions)
    if instrument_count > 1:
        common["note"] = f"{instrument_count} instruments measure this agent; figures use the first"
    if figures is None or "reason" in figures:
        reason = (figures or {}).get("reason") or f"no instrument measures agent {spec.agent}"
        for name, unit in _POWER_METRICS:
            ctx.emit(Metric(run, name, None, unit, meta={**common, "reason": reason}))
        return
    meta = {**common, **figures.pop("meta")}
    for name, unit in _POWER_METRICS:
        value, uncertainty, extra = figures[name]
        ctx.emit(Metric(run, name, value, unit, uncertainty, meta={**meta, **extra}))


_POWER_METRICS: tuple[tuple[str, str], ...] = (
    ("idle_power_w", "W"),
    *((f"active_power_w.{s}", "W") for s in STAGES),
    *((f"dynamic_power_w.{s}", "W") for s in STAGES),
    *((f"energy_per_inference_j.{s}", "J") for s in STAGES),
)


def _power_figures(
    spec: AscSpec,
    windows: list[_Window],
    inst: Instrument | None,
    executions: dict[str, tuple[float, float]],
) -> dict[str, Any] | None:
    """Idle, active, dynamic power and energy per inference per stage, each as (value,
    95 % expanded uncertainty, meta with its budget); {"reason": …} when they cannot be had."""
    if inst is None:
        return None
    info = inst.info
    aperture = aperture_s(inst)
    # One timing uncertainty for all windows: idle and active must share it to be subtracted.
    timing = timing_uncertainty_s(inst, max(w.offset_uncertainty_s for w in windows))
    estimates: dict[str, list[PowerEstimate]] = {"idle": [], **{s: [] for s in STAGES}}
    try:
        for w in windows:
            if w.batch is None or len(w.batch) == 0:
                raise ValueError(f"no readings from {inst.spec.id} in the {w.stage} window "
                                 f"(repetition {w.repetition})")
            watts = to_watts(info, w.batch.values)
            phase_name = "idle" if w.stage == "idle" else "active"
            estimates[w.stage].append(phase_power(
                w.batch.t, watts, PhaseWindow(phase_name, w.start, w.end), info,
                boundary=spec.boundary,  # type: ignore[arg-type]
                aperture_s=aperture, timing_uncertainty_s=timing,
            ))
        idle = pool_estimates(estimates["idle"])
        out: dict[str, Any] = {"idle_power_w": (idle.mean_w, idle.uncertainty95,
                                                {"estimate": idle.to_dict()})}
        for stage in STAGES:
            active = pool_estimates(estimates[stage])
            dyn = dynamic_power(idle, active)
            mean_s, se_s = executions[stage]
            energy = energy_per_inference(dyn, mean_s, se_s)
            out[f"active_power_w.{stage}"] = (active.mean_w, active.uncertainty95,
                                              {"estimate": active.to_dict()})
            out[f"dynamic_power_w.{stage}"] = (dyn.value, dyn.uncertainty95,
                                               {"budget": dyn.budget.to_dict()})
            out[f"energy_per_inference_j.{stage}"] = (energy.value, energy.uncertainty95, {
                "budget": energy.budget.to_dict(),
                "execution_time_s": mean_s, "execution_time_std_error_s": se_s,
                "formula": "dynamic power × mean execution time (device timers, same windows)",
            })
    except ValueError as exc:
        return {"reason": f"instrument {inst.spec.id}: {exc}"}
    out["meta"] = {
        "source": inst.spec.id,
        "instrument": info.name,
        "domains": list(info.domains),
        "sample_interval_s": info.time_resolution_s,
        "aperture_s": aperture,
        "boundary": spec.boundary,
        "timing_uncertainty_s": timing,
        "uncertainty": "95 % expanded (GUM-S1 Monte Carlo)",
        "windows": [
            {"stage": w.stage, "repetition": w.repetition, "start": w.start, "end": w.end}
            for w in windows
        ],
    }
    return out
