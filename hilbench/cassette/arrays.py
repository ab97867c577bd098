"""Sample streams as raw arrays beside the JSON lines: the values as float64 as they came, the
time stamps as their difference, in units in the last place, from the straight line through the
batch's first and last stamp (a meter's stamps are t0 + k·dt, so that difference is 0 or ±1 ulp
and fits one signed byte). The stamps are restored bit for bit, and a stream costs about 9/8 of
its values' float64 size.

Per stream three append-only files: ``S.values`` (``<f8``), ``S.stamps`` (residuals, each
batch in the narrowest of ``<i1``/``<i2``/``<f8`` raw stamps) and ``S.index`` (one row of
:data:`INDEX_DTYPE` per batch)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np

from hilbench.private_files import open_private

INDEX_DTYPE = np.dtype([("n", "<i8"), ("t_first", "<f8"), ("t_last", "<f8"), ("code", "<i8")])
# code: how the batch's stamps are kept in S.stamps
ZERO, INT8, INT16, RAW = 0, 1, 2, 8
_RESIDUAL = {INT8: np.dtype("<i1"), INT16: np.dtype("<i2")}
SUFFIXES = ("values", "stamps", "index")


def _line(t_first: float, t_last: float, n: int) -> np.ndarray:
    """The straight line both writer and reader compute, with the same float operations."""
    if n == 1:
        return np.array([t_first], dtype=np.float64)
    step = (t_last - t_first) / (n - 1)
    return t_first + step * np.arange(n, dtype=np.float64)


def encode_stamps(t: np.ndarray) -> tuple[int, bytes]:
    """``(code, bytes)`` holding ``t`` exactly given its first and last value."""
    t = np.ascontiguousarray(t, dtype=np.float64)
    line = _line(float(t[0]), float(t[-1]), len(t))
    with np.errstate(over="ignore"):
        residual = t.view(np.int64) - line.view(np.int64)
    if not np.all(np.isfinite(t)) or np.any(np.sign(t) != np.sign(line)):
        return RAW, t.astype("<f8").tobytes()
    if not residual.any():
        return ZERO, b""
    for code, dtype in _RESIDUAL.items():
        info = np.iinfo(dtype)
        if residual.min() >= info.min and residual.max() <= info.max:
            return code, residual.astype(dtype).tobytes()
    return RAW, t.astype("<f8").tobytes()


def decode_stamps(code: int, data: bytes, t_first: float, t_last: float, n: int) -> np.ndarray:
    if code == RAW:
        return np.frombuffer(data, dtype="<f8").astype(np.float64)
    line = _line(t_first, t_last, n)
    if code == ZERO:
        return line
    residual = np.frombuffer(data, dtype=_RESIDUAL[code]).astype(np.int64)
    return (line.view(np.int64) + residual).view(np.float64)


def stamp_bytes(code: int, n: int) -> int:
    return 0 if code == ZERO else n * (8 if code == RAW else _RESIDUAL[code].itemsize)


@dataclass
class StreamWriter:
    """Appends batches of one stream; each write is flushed (a killed recording keeps it)."""

    folder: Path
    name: str
    samples: int = 0
    _files: dict[str, IO[bytes]] = field(default_factory=dict)
    _hashes: dict[str, hashlib._Hash] = field(default_factory=dict)  # type: ignore[name-defined]

    def __post_init__(self) -> None:
        for suffix in SUFFIXES:
            self._files[suffix] = open_private(self.folder / f"{self.name}.{suffix}", "x",
                                               binary=True)
            self._hashes[suffix] = hashlib.sha256()

    def append(self, t: np.ndarray, values: np.ndarray) -> None:
        if len(t) != len(values):
            raise ValueError(f"stream {self.name}: {len(t)} stamps for {len(values)} values")
        if len(t) == 0:
            return
        code, stamps = encode_stamps(t)
        row = np.array([(len(t), t[0], t[-1], code)], dtype=INDEX_DTYPE)
        for suffix, data in (("values", np.ascontiguousarray(values, "<f8").tobytes()),
                             ("stamps", stamps), ("index", row.tobytes())):
            if data:
                self._files[suffix].write(data)
                self._files[suffix].flush()
                self._hashes[suffix].update(data)
        self.samples += len(t)

    def close(self) -> dict[str, str]:
        """Close the files; their sha256 by suffix."""
        for fh in self._files.values():
            fh.close()
        return {suffix: h.hexdigest() for suffix, h in self._hashes.items()}


def read_stream(folder: Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(t, values)`` of a stream, the stamps restored exactly. A file cut short by a killed
    recording yields the batches written whole before the cut."""
    index = np.frombuffer(_whole(folder / f"{name}.index", INDEX_DTYPE.itemsize),
                          dtype=INDEX_DTYPE)
    values_all = np.frombuffer((folder / f"{name}.values").read_bytes(), dtype="<u1")
    stamps_all = (folder / f"{name}.stamps").read_bytes()
    ts, vs = [], []
    v_at = s_at = 0
    for n, t_first, t_last, code in index.tolist():
        size = stamp_bytes(code, n)
        if v_at + 8 * n > len(values_all) or s_at + size > len(stamps_all):
            break
        vs.append(values_all[v_at: v_at + 8 * n].view("<f8").astype(np.float64))
        ts.append(decode_stamps(code, stamps_all[s_at: s_at + size], t_first, t_last, n))
        v_at += 8 * n
        s_at += size
    if not ts:
        return np.empty(0), np.empty(0)
    return np.concatenate(ts), np.concatenate(vs)


def _whole(path: Path, item: int) -> bytes:
    data = path.read_bytes()
    return data[: len(data) - len(data) % item]




# --- message and instrument arrays: one file per distinct content, named by its sha256 -------

BLOBS = "arrays"


def put_blob(folder: Path, data: bytes) -> str:
    """Store ``data`` under ``folder/arrays/<sha256>`` (once per content); its sha256."""
    digest = hashlib.sha256(data).hexdigest()
    path = folder / BLOBS / digest
    if not path.exists():
        tmp = path.with_name(f".{digest}.tmp")
        with open_private(tmp, "w", binary=True) as fh:
            fh.write(data)
            fh.flush()
        tmp.replace(path)  # whole or absent: a killed recording leaves no half blob
    return digest


def get_blob(folder: Path, digest: str) -> bytes:
    path = folder / BLOBS / digest
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != digest:
        raise ValueError(f"{path}: content does not match its sha256 name")
    return data


def put_array(folder: Path, array: np.ndarray, *, store: bool = True) -> dict[str, object]:
    """An array as a reference for a JSON line: ``{"sha256", "dtype", "shape"}``; its bytes
    are written to the array store unless ``store`` is False (the reference alone)."""
    array = np.asarray(array)
    data = np.ascontiguousarray(array).tobytes()
    digest = put_blob(folder, data) if store else hashlib.sha256(data).hexdigest()
    return {"sha256": digest, "dtype": array.dtype.str, "shape": list(array.shape)}


def get_array(folder: Path, ref: dict[str, object]) -> np.ndarray:
    data = get_blob(folder, str(ref["sha256"]))
    shape = tuple(int(n) for n in ref["shape"])  # type: ignore[attr-defined]
    return np.frombuffer(data, dtype=np.dtype(str(ref["dtype"]))).reshape(shape).copy()
