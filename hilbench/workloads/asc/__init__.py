"""ASC workload: the DCASE 2020 data set loader and a synthetic fixture in the same layout."""

from hilbench.workloads.asc.dataset import (
    CLASSES,
    AscClip,
    AscSlice,
    AscSplit,
    DatasetError,
    DatasetIndex,
    iter_clips,
    iter_slices,
    load_split,
    read_clip,
    scan_dataset,
    slice_clip,
    split_counts,
)
from hilbench.workloads.asc.fixture import make_fixture


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
