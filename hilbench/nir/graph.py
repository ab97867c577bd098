"""NIR graph files (the ``nir`` package, 1.0.x): read a file handed in without trusting it, write
one, and name a graph by a hash of its content.

Why a content hash and not a hash of the file: ``nir.write`` stores the graph as HDF5, whose
bytes depend on the h5py/HDF5 version, the compression filter and the write time, so two files
of one graph differ byte for byte. :func:`graph_hash` walks the graph itself — node names, types
and parameters (dtype, shape, little-endian bytes), edges (sorted) and metadata — so the same
graph hashes the same however it was stored (tests/nir/test_graph.py writes it three ways).

hilbench's own facts about a graph (its task, classes, time step and the pre-processing its
input expects) travel as one JSON string in the graph's metadata under ``"hilbench"``: HDF5
keeps a string exactly, where nested lists of strings would come back as byte arrays.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

MAX_GRAPH_BYTES = 64 * 1024 * 1024  # a NIR file larger than this is refused before parsing
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"
METADATA_KEY = "hilbench"
INSTALL = "pip install 'hilbench[nir]'"


class NirFileError(ValueError):
    """A NIR file or graph is unusable; the message names the file and what is wrong."""


def require_nir() -> Any:
    """The ``nir`` package, or a one-line error saying how to install it."""
    try:
        import nir
    except ImportError as exc:
        raise NirFileError(f"NIR graphs need the 'nir' package ({exc}); "
                           f"install: {INSTALL}") from None
    return nir


def read_graph(path: str | os.PathLike[str]) -> Any:
    """A ``nir.NIRGraph`` from a file that may be hostile: a regular file (no symlink), at most
    :data:`MAX_GRAPH_BYTES`, an HDF5 file that ``nir.read`` accepts with its type checks."""
    nir = require_nir()
    path = Path(path)
    try:
        info = path.lstat()
    except OSError as exc:
        raise NirFileError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISLNK(info.st_mode):
        raise NirFileError(f"{path}: is a symbolic link; give the graph file itself")
    if not stat.S_ISREG(info.st_mode):
        raise NirFileError(f"{path}: not a regular file")
    if info.st_size > MAX_GRAPH_BYTES:
        raise NirFileError(f"{path}: {info.st_size} bytes; a NIR graph may have at most "
                           f"{MAX_GRAPH_BYTES} bytes")
    with open(path, "rb") as fh:
        if fh.read(len(HDF5_SIGNATURE)) != HDF5_SIGNATURE:
            raise NirFileError(f"{path}: not an HDF5 file, so not a NIR graph (nir.write output)")
    try:
        graph = nir.read(path)
    except Exception as exc:  # nir/h5py fail in many ways on a damaged or foreign file
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise NirFileError(f"{path}: not a readable NIR graph ({reason})") from None
    if not isinstance(graph, nir.NIRGraph):
        raise NirFileError(f"{path}: holds a single {type(graph).__name__}, not a NIRGraph")
    return graph


def write_graph(graph: Any, path: str | os.PathLike[str], compression: str | None = "gzip") -> Path:
    """``nir.write`` to ``path`` through a temporary file, so a reader never sees half a graph."""
    nir = require_nir()
    path = Path(path)
    tmp = path.with_name(f".{path.name}.partial-{os.getpid()}")
    try:
        nir.write(tmp, graph, compression=compression)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def hilbench_metadata(graph: Any, source: str = "graph") -> dict[str, Any]:
    """hilbench's facts about a graph (the JSON under ``metadata["hilbench"]``); ``{}`` if none."""
    meta = getattr(graph, "metadata", None) or {}
    text = meta.get(METADATA_KEY)
    if text is None:
        return {}
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except json.JSONDecodeError as exc:
        raise NirFileError(f"{source}: metadata key {METADATA_KEY!r} is not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise NirFileError(f"{source}: metadata key {METADATA_KEY!r} is not a JSON object")
    return value


def with_hilbench_metadata(meta: dict[str, Any]) -> dict[str, str]:
    """The graph metadata that carries ``meta`` (canonical JSON, keys sorted)."""
    return {METADATA_KEY: json.dumps(meta, sort_keys=True)}


def graph_hash(graph: Any) -> str:
    """SHA-256 of the graph's content (see the module docstring); hex, 64 characters."""
    h = hashlib.sha256(b"hilbench-nir-graph-hash/1\n")
    for chunk in _canonical(graph):
        h.update(chunk)
    return h.hexdigest()


def _canonical(graph: Any) -> Iterator[bytes]:
    yield b"graph\n"
    for name in sorted(graph.nodes):
        node = graph.nodes[name]
        yield f"node {len(name)}:{name} {type(node).__name__}\n".encode()
        if type(node).__name__ == "NIRGraph":
            yield from _canonical(node)
            continue
        yield from _fields(node)
    for src, dst in sorted((str(a), str(b)) for a, b in graph.edges):
        yield f"edge {len(src)}:{src} {len(dst)}:{dst}\n".encode()
    yield from _value("metadata", dict(getattr(graph, "metadata", None) or {}))
    yield b"end\n"


def _fields(node: Any) -> Iterator[bytes]:
    fields = dict(vars(node))
    kind = type(node).__name__
    # Input/Output nodes are defined by their shape; every other node's types follow from its
    # parameters, so they are left out (they are recomputed on read).
    if kind not in ("Input", "Output"):
        fields.pop("input_type", None)
        fields.pop("output_type", None)
    for key in sorted(fields):
        yield from _value(key, fields[key])


def _value(key: str, value: Any) -> Iterator[bytes]:
    if isinstance(value, dict):
        yield f"dict {len(key)}:{key} {len(value)}\n".encode()
        for k in sorted(value, key=str):
            yield from _value(str(k), value[k])
    elif isinstance(value, bytes | str):
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        data = text.encode()
        yield f"str {len(key)}:{key} {len(data)}\n".encode() + data
    elif value is None:
        yield f"none {len(key)}:{key}\n".encode()
    else:
        a = np.asarray(value)
        if a.dtype == object:
            raise NirFileError(f"graph field {key!r} holds objects, which have no stable hash")
        a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
        yield f"array {len(key)}:{key} {a.dtype.str} {list(a.shape)}\n".encode() + a.tobytes()
