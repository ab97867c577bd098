"""ASC workload: the DCASE 2020 data set loader and a synthetic fixture in the same layout."""

# Imported on first use: the registry loads this package's plugin (plugin.py) on every
# start, which must not pull in the heavy parts (networkx, the data set reader).
from __future__ import annotations

from hilbench.workloads.lazy import lazy_exports

_LAZY = {
    "CLASSES": "hilbench.workloads.asc.dataset",
    "AscClip": "hilbench.workloads.asc.dataset",
    "AscSlice": "hilbench.workloads.asc.dataset",
    "AscSplit": "hilbench.workloads.asc.dataset",
    "DatasetError": "hilbench.workloads.asc.dataset",
    "DatasetIndex": "hilbench.workloads.asc.dataset",
    "iter_clips": "hilbench.workloads.asc.dataset",
    "iter_slices": "hilbench.workloads.asc.dataset",
    "load_split": "hilbench.workloads.asc.dataset",
    "read_clip": "hilbench.workloads.asc.dataset",
    "scan_dataset": "hilbench.workloads.asc.dataset",
    "slice_clip": "hilbench.workloads.asc.dataset",
    "split_counts": "hilbench.workloads.asc.dataset",
    "make_fixture": "hilbench.workloads.asc.fixture",
}


__getattr__ = lazy_exports(__name__, _LAZY)


def packaged_model_path():  # -> pathlib.Path
    """The int8 model shipped with hilbench, trained on the synthetic fixture (seed 0, 16 kHz,
    see data/PROVENANCE.md): the ASC example runs without PyTorch."""
    from pathlib import Path

    return Path(__file__).resolve().parent / "data" / "asc-int8-fixture.npz"


__all__ = [
    "CLASSES",
    "AscClip",
    "AscSlice",
    "AscSplit",
    "DatasetError",
    "DatasetIndex",
    "iter_clips",
    "iter_slices",
    "load_split",
    "make_fixture",
    "packaged_model_path",
    "read_clip",
    "scan_dataset",
    "slice_clip",
    "split_counts",
]
