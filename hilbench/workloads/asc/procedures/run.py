"""ASC (acoustic scene classification): the ``[[asc]]`` campaign table and its units.

``asc.single_stream`` (:mod:`hilbench.workloads.asc.procedures.single_stream`) is the LoadGen
single-stream scenario with one sample at a time in device memory; ``asc.power``
(:mod:`hilbench.workloads.asc.procedures.power`) the power windows (one sample repeated, or k-second
streams of consecutive samples, always at batch size 1) and energy per inference from the
single-stream time. This module prepares data and model and makes the units; the campaign
table, with an example, is :class:`hilbench.workloads.asc.procedures.table.AscSpec`.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from hilbench.contracts.remote import RemoteDevice
from hilbench.filehash import sha256_file
from hilbench.sdk import Instrument, Procedure, RunContext, UnitKey, UnitWork
from hilbench.workloads.asc.contract import STAGES
from hilbench.workloads.asc.procedures.nir import category, nir_needs
from hilbench.workloads.asc.procedures.table import AscSpec

if TYPE_CHECKING:
    from hilbench.sdk import Campaign
    from hilbench.workloads.asc.procedures.single_stream import StageTimes

log = logging.getLogger(__name__)

# --- data and model (prepared once per table, shared by its units) ---------------------------


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/hilbench``, else ``~/.cache/hilbench``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hilbench"


def ensure_fixture(root: Path, seed: int = 0) -> Path:
    """The synthetic data set at ``root``, generated there first if the directory is empty.

    Generation goes to a sibling directory that is renamed into place, so an interrupted run
    never leaves half a data set that a later run would take as complete. Two processes that
    start on a fresh machine at once (two campaigns, a test suite's workers) both generate; the
    first rename wins and the other keeps that copy: the same seed makes the same files.
    """
    from hilbench.workloads.asc import make_fixture

    if _filled(root):
        return root
    root.parent.mkdir(parents=True, exist_ok=True)
    partial = root.with_name(f"{root.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    make_fixture(partial, seed=seed)
    try:
        if root.is_dir():
            root.rmdir()  # empty, checked above (not empty: another process renamed first)
        os.replace(partial, root)
    except OSError:
        if not _filled(root):
            raise
        shutil.rmtree(partial, ignore_errors=True)
    return root


def _filled(folder: Path) -> bool:
    return folder.is_dir() and any(folder.iterdir())


def model_cache_path(spec: AscSpec, data_root: Path) -> Path:
    """Where a model trained for this table is kept: in the data directory when it is
    writable, else in the cache directory under a name derived from the data path."""
    name = f"hilbench-asc-model-e{spec.train_epochs}-seed{spec.train_seed}-{spec.sample_rate}hz"
    if os.access(data_root, os.W_OK):
        return data_root / f"{name}.npz"
    digest = hashlib.sha256(str(data_root).encode()).hexdigest()[:12]
    return cache_dir() / "asc-models" / f"{digest}-{name}.npz"


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
        from hilbench.workloads.asc.model_files import load_model_file

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
        self.model = load_model_file(self.model_path)
        if self.model.sample_rate != spec.sample_rate:
            raise ValueError(
                f"model {self.model_path} takes {self.model.sample_rate} Hz audio; "
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
            "model_sha256": sha256_file(self.model_path),
            "model_info": self.model.info,
            "model_description": self.model.description,
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


# --- units -----------------------------------------------------------------------------------


@dataclass
class TrialTimes:
    """What one trial's single-stream run hands its power runs: the stage times energy per
    inference multiplies (None until that run has succeeded in this process; a power run then
    measures them itself, e.g. after a resume)."""

    stage_times: StageTimes | None = None


def _key(spec: AscSpec, scenario: str, *parts: Any) -> UnitKey:
    return UnitKey(("asc", scenario, spec.agent, spec.digest, *parts))


@dataclass
class AscSingleStreamUnit:
    spec: AscSpec
    repetition: int
    resources: AscResources = field(repr=False, compare=False)
    trial: TrialTimes = field(default_factory=TrialTimes, repr=False, compare=False)
    # Accuracy and device times only: no power instrument's figure goes into this run.
    uses_instruments: ClassVar[bool] = False

    @property
    def agent(self) -> str:
        return self.spec.agent

    @property
    def procedure(self) -> str:
        return "asc.single_stream"

    @property
    def key(self) -> UnitKey:
        return _key(self.spec, "single_stream", ("rep", self.repetition))

    def params(self) -> dict[str, Any]:
        return {"workload": "asc", "scenario": "single_stream", "repetition": self.repetition,
                **_spec_params(self.spec)}

    def prepare(self) -> dict[str, Any]:
        return self.resources.ensure()

    def needs(self, limits: Mapping[str, Any] | None) -> Any:
        """For the campaign gate: a NIR graph on a driver that cannot run one is refused."""
        return nir_needs(self.spec.model, limits)

    def work(self, capabilities: Mapping[str, Any] | None = None) -> UnitWork:
        """For the ETA: one pass over the test samples (their number known once loaded)."""
        test = self.resources.test
        return UnitWork(0.0, None if test is None else len(test))

    def run(self, ctx: RunContext, device: RemoteDevice, instruments: Sequence[Instrument]
            ) -> None:
        from hilbench.workloads.asc.procedures.single_stream import run_single_stream_unit

        self.trial.stage_times = run_single_stream_unit(ctx, self.resources, device)


@dataclass
class AscPowerUnit:
    spec: AscSpec
    stream: int  # samples per block: 1 = one sample repeated, k = k-second streams
    repetition: int
    resources: AscResources = field(repr=False, compare=False)
    trial: TrialTimes = field(default_factory=TrialTimes, repr=False, compare=False)
    uses_instruments: ClassVar[bool] = True

    @property
    def agent(self) -> str:
        return self.spec.agent

    @property
    def procedure(self) -> str:
        return "asc.power"

    @property
    def key(self) -> UnitKey:
        return _key(self.spec, "power", ("stream", self.stream), ("rep", self.repetition))

    def params(self) -> dict[str, Any]:
        return {"workload": "asc", "scenario": "power", "stream_samples": self.stream,
                "amortised": self.stream > 1, "repetition": self.repetition,
                **_spec_params(self.spec)}

    def prepare(self) -> dict[str, Any]:
        return self.resources.ensure()

    def needs(self, limits: Mapping[str, Any] | None) -> Any:
        return nir_needs(self.spec.model, limits)

    def work(self, capabilities: Mapping[str, Any] | None = None) -> UnitWork:
        """For the ETA: the declared windows, ``repetitions`` × (idle + an active window per
        stage the device can time — both until its capabilities are known — or one
        single-stream window), timed by the device's clock."""
        spec = self.spec
        actives = (1 if spec.power_method == "single_stream"
                   else len(_timed_stages(capabilities)))
        return UnitWork(spec.repetitions * (spec.idle_s + actives * spec.active_s), 0)

    def run(self, ctx: RunContext, device: RemoteDevice, instruments: Sequence[Instrument]
            ) -> None:
        from hilbench.workloads.asc.procedures.power import run_power_unit

        run_power_unit(ctx, self.resources, self.stream, device, instruments,
                       self.trial.stage_times)


def _timed_stages(capabilities: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The stages a device can time in a power window, from its stored handshake (absent or
    unreadable: both, as :meth:`AscCapabilities.timed_stages`)."""
    asc = (capabilities or {}).get("asc")
    stages = asc.get("stages") if isinstance(asc, Mapping) else None
    if not isinstance(stages, list):
        return STAGES
    return tuple(s for s in STAGES if s in stages) or STAGES


def _spec_params(spec: AscSpec) -> dict[str, Any]:
    # table_digest: which [[asc]] table a run belongs to (the table groups its runs by it)
    # category: "closed" (a NIR graph, named by its content hash) or "open" (issue 36)
    return {**spec.params(), "table_digest": spec.digest, **category(spec.model)}


def expand_units(
    tables: Sequence[AscSpec], campaign: Campaign
) -> list[AscSingleStreamUnit | AscPowerUnit]:
    """Per table and repetition: one single-stream run, then (with power) one power run for
    one repeated sample and one per amortised stream length."""
    units: list[AscSingleStreamUnit | AscPowerUnit] = []
    for spec in tables:
        resources = AscResources(spec)
        for rep in range(campaign.repetitions):
            trial = TrialTimes()  # this trial's single stream -> its power runs
            units.append(AscSingleStreamUnit(spec, rep, resources, trial))
            if spec.power:
                for stream in (1, *spec.stream_s):
                    units.append(AscPowerUnit(spec, stream, rep, resources, trial))
    return units


PROCEDURE = Procedure(
    table=AscSpec,
    expand=expand_units,
    summary="ASC (acoustic scene classification): single stream and power windows",
    reanalysis="hilbench.workloads.asc.procedures.reanalysis:reanalyse",
)
