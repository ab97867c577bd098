"""A Xylo Audio 2 network file: the mapped, quantised specification Rockpool's
``syns61201.mapper`` + ``global_quantize`` produce, plus what the ASC procedure needs around it.

The file is one ``.npz``: the integer spec arrays and a JSON ``meta`` string (never a pickle),
like the int8 CNN's file, so the orchestrator reads it with numpy alone (no Rockpool on the
orchestrator's host) and sends it to the agent as ``load {part:"model", meta, arrays}``.
``meta["sha256"]`` identifies the network; a device that holds a network compares it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hilbench.workloads.asc.model_files import read_model_npz, write_model_npz

FORMAT_NAME = "hilbench.xylo.snn"
FORMAT_VERSION = 1

# Xylo Audio 2 limits (SYNS61201; Rockpool's mapper enforces the neuron counts, the chip the rest)
MAX_INPUT_CHANNELS = 16
MAX_HIDDEN_NEURONS = 1000
MAX_OUTPUT_NEURONS = 8
MAX_INPUT_EVENTS_PER_STEP = 15  # XyloSamna.evolve: "Up to 15 input events can be sent per bin"

# name -> (dtype, ndim) of the spec arrays that XyloSim.from_specification and
# config_from_specification take
SPEC_ARRAYS: dict[str, tuple[str, int]] = {
    "weights_in": ("int8", 3),  # (Nin, Nhidden, 2)
    "weights_rec": ("int8", 3),  # (Nhidden, Nhidden, 2)
    "weights_out": ("int8", 2),  # (Nhidden, Nout)
    "dash_mem": ("uint8", 1),
    "dash_mem_out": ("uint8", 1),
    "dash_syn": ("uint8", 1),
    "dash_syn_2": ("uint8", 1),
    "dash_syn_out": ("uint8", 1),
    "threshold": ("int16", 1),
    "threshold_out": ("int16", 1),
    "bias": ("int16", 1),
    "bias_out": ("int16", 1),
}
SPEC_SCALARS = ("weight_shift_in", "weight_shift_rec", "weight_shift_out")


class NetworkFileError(ValueError):
    """A network file or message is not a valid Xylo network; the message says what is wrong."""


@dataclass(frozen=True)
class AfeSettings:
    """How audio becomes input spikes: Rockpool's AFESim on the host, rasterised to ``dt``."""

    fs: int = 110_000  # AFESim needs >= 110 kHz (its filters triple the frequency)
    channels: int = 16
    seed: int = 0  # AFESim's noise seed: fixed, so spikes (and the cache) are reproducible
    add_noise: bool = True
    input_rms_v: float = 0.05  # each sample scaled to this microphone RMS (AFESim: <= 112 mV)

    def to_dict(self) -> dict[str, Any]:
        return {"fs": self.fs, "channels": self.channels, "seed": self.seed,
                "add_noise": self.add_noise, "input_rms_v": self.input_rms_v}


@dataclass
class XyloNetwork:
    """A network that fits Xylo Audio 2, with its time step, classes and input settings."""

    spec: dict[str, np.ndarray]
    weight_shifts: dict[str, int]
    aliases: list[list[int]]
    dt: float
    classes: tuple[str, ...]
    sample_rate: int  # audio rate the procedure sends (resampled to afe.fs on the host)
    afe: AfeSettings = field(default_factory=AfeSettings)
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._check()

    # -- shape -----------------------------------------------------------------------------------

    @property
    def inputs(self) -> int:
        return int(self.spec["weights_in"].shape[0])

    @property
    def hidden(self) -> int:
        return int(self.spec["weights_in"].shape[1])

    @property
    def outputs(self) -> int:
        return int(self.spec["weights_out"].shape[1])

    @property
    def description(self) -> str:
        """What the model computes, one line for reports (where the AFE runs is the device's)."""
        return (f"AFE spikes ({self.inputs} channels) + spiking network for Xylo Audio 2 "
                f"({self.inputs}-{self.hidden}-{self.outputs} LIF neurons, dt "
                f"{1000 * self.dt:g} ms; class = output with most spikes)")

    @property
    def steps_per_sample(self) -> int:
        """Network time steps in one 1 s sample."""
        return round(1.0 / self.dt)

    @property
    def sha256(self) -> str:
        """Identity of the network: its arrays, shifts, aliases, dt and input settings."""
        h = hashlib.sha256()
        for name in sorted(self.spec):
            a = np.ascontiguousarray(self.spec[name])
            h.update(f"{name}:{a.dtype.str}:{a.shape}".encode())
            h.update(a.tobytes())
        rest = {"shifts": self.weight_shifts, "aliases": self.aliases, "dt": self.dt,
                "afe": self.afe.to_dict(), "sample_rate": self.sample_rate,
                "classes": list(self.classes)}
        h.update(json.dumps(rest, sort_keys=True).encode())
        return h.hexdigest()

    def specification(self) -> dict[str, Any]:
        """Keyword arguments for ``XyloSim.from_specification`` (Rockpool 2.8, syns61201)."""
        return {**{k: np.asarray(v) for k, v in self.spec.items()}, **self.weight_shifts,
                "aliases": [list(a) for a in self.aliases], "dt": self.dt}

    def _check(self) -> None:
        missing = sorted(set(SPEC_ARRAYS) - set(self.spec))
        if missing:
            raise NetworkFileError(f"network specification lacks arrays {missing}")
        for name, (dtype, ndim) in SPEC_ARRAYS.items():
            a = self.spec[name]
            if a.ndim != ndim or not np.issubdtype(a.dtype, np.integer):
                raise NetworkFileError(
                    f"spec array {name!r} must be an integer array of {ndim} dimensions "
                    f"({dtype}), got {a.dtype} {a.shape}")
            limits = np.iinfo(dtype)
            if a.size and (a.min() < limits.min or a.max() > limits.max):
                raise NetworkFileError(
                    f"spec array {name!r} has values {a.min()}..{a.max()} outside {dtype}")
            self.spec[name] = a.astype(dtype)
        self._check_sizes()

    def _check_sizes(self) -> None:
        """The network fits Xylo Audio 2, its classes and its AFE."""
        nin, nhid, nout = self.inputs, self.hidden, self.outputs
        if not 1 <= nin <= MAX_INPUT_CHANNELS:
            raise NetworkFileError(f"{nin} input channels; Xylo Audio 2 has {MAX_INPUT_CHANNELS}")
        if not 1 <= nhid <= MAX_HIDDEN_NEURONS:
            raise NetworkFileError(
                f"{nhid} hidden neurons; Xylo Audio 2 has at most {MAX_HIDDEN_NEURONS}")
        if not 1 <= nout <= MAX_OUTPUT_NEURONS:
            raise NetworkFileError(
                f"{nout} output neurons; Xylo Audio 2 has at most {MAX_OUTPUT_NEURONS}")
        if len(self.classes) > nout:
            raise NetworkFileError(f"{len(self.classes)} classes but only {nout} output neurons")
        if self.afe.channels != nin:
            raise NetworkFileError(
                f"the AFE gives {self.afe.channels} channels; the network takes {nin}")
        if not 0 < self.dt <= 1.0:
            raise NetworkFileError(f"dt must be in (0, 1] s, got {self.dt}")
        if self.afe.fs < 110_000:
            raise NetworkFileError(f"afe fs {self.afe.fs} Hz: AFESim needs at least 110000 Hz")

    # -- file format -----------------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "classes": list(self.classes),
            "dt": self.dt,
            "sample_rate": self.sample_rate,
            "afe": self.afe.to_dict(),
            "weight_shifts": dict(self.weight_shifts),
            "aliases": [list(map(int, a)) for a in self.aliases],
            "shape": {"inputs": self.inputs, "hidden": self.hidden, "outputs": self.outputs},
            "sha256": self.sha256,
            "info": self.info,
        }

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: np.ascontiguousarray(self.spec[name], dtype=SPEC_ARRAYS[name][0])
                for name in SPEC_ARRAYS}

    def save(self, path: str | Path) -> Path:
        return write_model_npz(path, self.metadata(), self.arrays())

    @classmethod
    def load(cls, path: str | Path) -> XyloNetwork:
        meta, arrays = read_model_npz(path, NetworkFileError, "network", FORMAT_NAME)
        try:
            return cls.from_parts(meta, arrays)
        except NetworkFileError as exc:
            raise NetworkFileError(f"{Path(path)}: {exc}") from None

    @classmethod
    def from_parts(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> XyloNetwork:
        """Build from metadata and arrays (a file or a load message), checking everything."""
        if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
            got = meta.get("format") if isinstance(meta, dict) else meta
            raise NetworkFileError(f"format is {got!r}, expected {FORMAT_NAME!r}")
        if meta.get("version") != FORMAT_VERSION:
            raise NetworkFileError(
                f"format version {meta.get('version')!r} is not supported ({FORMAT_VERSION})")
        try:
            afe = AfeSettings(**meta["afe"])
            shifts = {k: int(meta["weight_shifts"][k]) for k in SPEC_SCALARS}
            net = cls(
                spec={k: np.asarray(v) for k, v in arrays.items() if k in SPEC_ARRAYS},
                weight_shifts=shifts,
                aliases=[[int(t) for t in a] for a in meta["aliases"]],
                dt=float(meta["dt"]),
                classes=tuple(str(c) for c in meta["classes"]),
                sample_rate=int(meta["sample_rate"]),
                afe=afe,
                info=dict(meta.get("info") or {}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, NetworkFileError):
                raise
            raise NetworkFileError(f"meta is incomplete or malformed ({exc!r})") from None
        claimed = meta.get("sha256")
        if claimed is not None and claimed != net.sha256:
            raise NetworkFileError(
                f"sha256 in meta ({str(claimed)[:12]}…) does not match the arrays "
                f"({net.sha256[:12]}…): the file was altered or truncated")
        return net
