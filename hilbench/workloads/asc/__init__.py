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
    "read_clip",
    "scan_dataset",
    "slice_clip",
    "split_counts",
]
