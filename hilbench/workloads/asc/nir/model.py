"""A NIR graph file as an ASC model: what a campaign's ``[[asc]] model = "x.nir"`` loads, sends
to a device and records.

The graph travels as the file's own bytes (one ``uint8`` payload) beside its content hash, so
the device reads exactly the graph the orchestrator read and proves it by hashing the content
again (:func:`graph_from_load`): a device that ran another graph cannot claim this one's hash.
"""

from __future__ import annotations

import os
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from hilbench.nir.graph import MAX_GRAPH_BYTES, NirFileError
from hilbench.workloads.asc.nir.graph import AscGraph

NIR_SUFFIX = ".nir"
LOAD_FORMAT = "hilbench.nir.graph"  # the ``format`` of the load message's metadata
GRAPH_PAYLOAD = "graph"


def is_nir_path(path: str | os.PathLike[str] | None) -> bool:
    return path is not None and Path(path).suffix.lower() == NIR_SUFFIX


def is_nir_load(meta: Any) -> bool:
    """True when a model load message carries a NIR graph."""
    return isinstance(meta, dict) and meta.get("format") == LOAD_FORMAT


@cache
def _graph_hash_of(path: str, size: int, mtime_ns: int) -> str:
    return AscGraph.read(path).sha256


def graph_hash_of_file(path: str | os.PathLike[str]) -> str:
    """The content hash of the graph in ``path`` (read once per file version)."""
    info = Path(path).stat()
    return _graph_hash_of(str(path), info.st_size, info.st_mtime_ns)


class NirAscModel:
    """A ``.nir`` file for the ASC procedures (the ``AscModel`` protocol of
    :mod:`hilbench.workloads.asc.model_files`)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.asc = AscGraph.read(self.path)
        with open(self.path, "rb") as fh:  # read_graph checked: a regular file, bounded
            self._bytes = fh.read(MAX_GRAPH_BYTES + 1)
        self.info: dict[str, Any] = {
            "format": self.asc.meta["format"], "graph_sha256": self.asc.sha256,
            "classes": list(self.asc.classes), "dt": self.asc.dt,
            "steps_per_sample": self.asc.steps_per_sample,
            "pre_processing": self.asc.pre_processing,
            "nodes": {n: type(v).__name__ for n, v in sorted(self.asc.graph.nodes.items())},
        }

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> NirAscModel:
        return cls(path)

    @property
    def sha256(self) -> str:
        return self.asc.sha256

    @property
    def sample_rate(self) -> int:
        return int(self.asc.meta["input"]["sample_rate"])

    @property
    def description(self) -> str:
        layers = sum(type(n).__name__ == "Linear" for n in self.asc.graph.nodes.values())
        return (f"NIR graph {self.sha256[:12]}… ({layers} Linear+neuron layers, "
                f"dt {1000 * self.asc.dt:g} ms); input: {self.asc.pre_processing}")

    def metadata(self) -> dict[str, Any]:
        return {"format": LOAD_FORMAT, "graph_sha256": self.sha256,
                "graph_bytes": len(self._bytes)}

    def arrays(self) -> dict[str, np.ndarray]:
        return {GRAPH_PAYLOAD: np.frombuffer(self._bytes, dtype=np.uint8)}


def graph_from_load(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> AscGraph:
    """On the device: the graph a load message carries, read as a hostile file would be, and
    its content hash checked against the one the message claims."""
    payload = arrays.get(GRAPH_PAYLOAD)
    if payload is None or payload.dtype != np.uint8 or payload.ndim != 1:
        raise NirFileError(f"a NIR model load carries one uint8 1-D payload {GRAPH_PAYLOAD!r}")
    if payload.size > MAX_GRAPH_BYTES:
        raise NirFileError(f"the graph has {payload.size} bytes; at most {MAX_GRAPH_BYTES}")
    claimed = meta.get("graph_sha256")
    with tempfile.TemporaryDirectory(prefix="hilbench-nir-") as folder:
        path = Path(folder) / "model.nir"
        with open(path, "wb") as fh:
            fh.write(payload.tobytes())
        asc = AscGraph.read(path)
    if asc.sha256 != claimed:
        raise NirFileError(f"the graph's content hash is {asc.sha256}, the load claims "
                           f"{claimed!r}")
    return asc


def nir_declaration(executor: str, semantics: dict[str, Any] | None = None,
                    quantisation: str | None = None) -> dict[str, Any]:
    """A driver's ``nir`` capability: it runs graphs (with ``executor``, following the neuron
    conventions ``semantics``) when the ``nir`` package is installed where the agent runs."""
    import importlib.util

    if importlib.util.find_spec("nir") is None:
        return {"runs": False, "reason": "the 'nir' package is not installed in the agent's "
                                         "environment: pip install 'hilbench[nir]'"}
    return {"runs": True, "executor": executor, "semantics": dict(semantics or {}),
            "quantisation": quantisation}
