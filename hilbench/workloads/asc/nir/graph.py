"""The ASC spiking network that hilbench ships as a NIR graph, and the input it expects.

Package data (``hilbench/workloads/asc/nir/data``, PROVENANCE.md there says how each file was made):

- ``asc-snn-fixture.nir``: the Xylo ASC network of ``drivers/xylo/data/xylo-asc-fixture.npz``
  exported by :mod:`hilbench_drivers.xylo.nir_export` (quantised weights, NIR CubaLIF layers);
- ``asc-snn-fixture-test-spikes.npz``: that graph's input for the synthetic fixture's test split
  (fixture seed 0, 80 one-second samples): the AFE spike counts per 10 ms step the graph's
  metadata describes, with the labels, so the reference runs without Rockpool or audio.

:class:`AscGraph` reads a graph's ``hilbench`` metadata once and checks it, so a device or the
reference asks it for the time step, the classes and the input shape instead of parsing JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from hilbench.nir.graph import NirFileError, graph_hash, hilbench_metadata, read_graph

PACKAGED_GRAPH = "asc-snn-fixture.nir"
PACKAGED_TEST_SPIKES = "asc-snn-fixture-test-spikes.npz"
GRAPH_FORMAT = "hilbench.nir.asc-snn"


def data_path(name: str) -> Path:
    return Path(str(resources.files("hilbench.workloads.asc.nir") / "data" / name))


def packaged_graph_path() -> Path:
    return data_path(PACKAGED_GRAPH)


@dataclass(frozen=True)
class AscGraph:
    """A NIR graph for the ASC task with its checked metadata."""

    graph: Any
    meta: dict[str, Any]
    sha256: str  # graph_hash: the same on every device that runs this graph

    @property
    def dt(self) -> float:
        return float(self.meta["dt"])

    @property
    def classes(self) -> tuple[str, ...]:
        return tuple(self.meta["classes"])

    @property
    def input_channels(self) -> int:
        return int(self.meta["input"]["channels"])

    @property
    def steps_per_sample(self) -> int:
        return int(self.meta["steps_per_sample"])

    @property
    def pre_processing(self) -> str:
        """One line for a report: what turns a sample into the graph's input."""
        i = self.meta["input"]
        return (f"{i['kind']}: {i['channels']} channels every {1000 * float(i['dt']):g} ms, at "
                f"most {i['max_per_step']} per step; front end: {i['front_end']}")

    @classmethod
    def from_graph(cls, graph: Any, source: str = "graph") -> AscGraph:
        meta = hilbench_metadata(graph, source)
        if meta.get("format") != GRAPH_FORMAT:
            raise NirFileError(f"{source}: metadata 'hilbench.format' is {meta.get('format')!r}, "
                               f"expected {GRAPH_FORMAT!r} (an ASC spiking network)")
        try:
            dt, steps = float(meta["dt"]), int(meta["steps_per_sample"])
            classes = meta["classes"]
            channels = int(meta["input"]["channels"])
            for key in ("kind", "dt", "max_per_step", "front_end"):
                meta["input"][key]
        except (KeyError, TypeError, ValueError) as exc:
            raise NirFileError(f"{source}: metadata 'hilbench' lacks or mangles {exc}") from None
        if not (0 < dt <= 1 and steps > 0 and channels > 0):
            raise NirFileError(f"{source}: metadata dt={dt}, steps_per_sample={steps}, "
                               f"input.channels={channels} are not usable")
        if not (isinstance(classes, list) and classes and all(isinstance(c, str) for c in classes)):
            raise NirFileError(f"{source}: metadata 'hilbench.classes' must be a list of names")
        outputs = [n for n, node in graph.nodes.items() if type(node).__name__ == "Output"]
        if len(outputs) == 1:
            width = int(np.prod(graph.nodes[outputs[0]].output_type["output"]))
            if width < len(classes):
                raise NirFileError(f"{source}: {len(classes)} classes but {width} outputs")
        return cls(graph, meta, graph_hash(graph))

    @classmethod
    def read(cls, path: str | Path) -> AscGraph:
        return cls.from_graph(read_graph(path), str(path))


def packaged_graph() -> AscGraph:
    return AscGraph.read(packaged_graph_path())


@dataclass(frozen=True)
class SpikeSamples:
    """Input rasters (samples, steps, channels), labels, and how they were made."""

    rasters: np.ndarray
    labels: np.ndarray
    provenance: dict[str, Any]


def packaged_test_spikes() -> SpikeSamples:
    path = data_path(PACKAGED_TEST_SPIKES)
    with np.load(path, allow_pickle=False) as npz:
        rasters, labels = npz["rasters"], npz["labels"]
        provenance = json.loads(str(npz["provenance"]))
    return SpikeSamples(rasters, labels.astype(np.int64), provenance)
