"""ASC model files of any kind: an ``.npz`` whose JSON ``meta`` names its ``format``; the reader
for that format comes from the entry-point group ``hilbench.asc_models``.

The ASC procedures only move a model from disk into a device (``metadata()`` and ``arrays()``
for the load message, ``sample_rate`` of its audio, ``info`` and a one-line ``description`` for
the record and the report), so a spiking
network for Xylo and the int8 CNN of the CPU and Arduino baselines travel the same way and the
core names neither.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from hilbench.entry_points import entry_points
from hilbench.private_files import open_private, private_dir

ENTRY_POINT_GROUP = "hilbench.asc_models"


class AscModel(Protocol):
    info: dict[str, Any]

    @property
    def sample_rate(self) -> int: ...

    @property
    def description(self) -> str: ...

    def metadata(self) -> dict[str, Any]: ...

    def arrays(self) -> dict[str, np.ndarray]: ...


def model_format(path: str | Path) -> str:
    """The ``format`` a model file declares; ValueError naming the file when it has none."""
    meta, _ = read_model_npz(path, ValueError)
    if not isinstance(meta, dict) or not isinstance(meta.get("format"), str):
        raise ValueError(f"{path}: no 'meta' with a 'format'; not a hilbench model file")
    return meta["format"]


def readers() -> dict[str, str]:
    """Installed model readers: format -> "module:Class"."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_model_file(path: str | Path) -> AscModel:
    """Read a model file with the reader registered for its format (a ``.nir`` file: a NIR
    graph, :class:`hilbench.workloads.asc.nir.model.NirAscModel`)."""
    if Path(path).suffix.lower() == ".nir":
        from hilbench.workloads.asc.nir.model import NirAscModel

        return NirAscModel(path)
    fmt = model_format(path)
    matches = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == fmt]
    if not matches:
        raise ValueError(f"{path}: model format {fmt!r} has no reader installed "
                         f"(installed: {sorted(readers()) or 'none'})")
    return matches[0].load().load(path)


def write_model_npz(path: str | Path, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> Path:
    """One ``.npz``: the arrays plus a JSON ``meta`` string (never a pickled object)."""
    path = Path(path)
    private_dir(path.parent, parents=True)
    with open_private(path, "w", binary=True) as fh:
        np.savez(fh, meta=np.array(json.dumps(meta, sort_keys=True)), **arrays)
    return path


def read_model_npz(
    path: str | Path, error: type[Exception], noun: str = "model", format_name: str = "hilbench"
) -> tuple[Any, dict[str, np.ndarray]]:
    """The JSON ``meta`` and the arrays of a model file; ``error`` (naming the file) when it is
    missing, not an ``.npz``, has no ``meta`` or a ``meta`` that is not JSON."""
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except FileNotFoundError:
        raise error(f"{path}: {noun} file not found") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise error(f"{path}: not a readable .npz {noun} file ({exc})") from None
    if "meta" not in arrays:
        raise error(f"{path}: no 'meta' entry; not a {format_name} {noun} file")
    try:
        meta = json.loads(str(arrays.pop("meta")))
    except (json.JSONDecodeError, TypeError) as exc:
        raise error(f"{path}: 'meta' is not valid JSON ({exc})") from None
    return meta, arrays

