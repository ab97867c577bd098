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
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import numpy as np

from hilbench.confined_read import ConfinedFolder, confined
from hilbench.filehash import sha256_file
from hilbench.private_files import open_private
from hilbench.store.sample_blobs import (
    RAW,
    RESIDUAL_DTYPES,
    ZERO,
    decode_stamps,
    encode_stamps,
    stamp_bytes,
)

INDEX_DTYPE = np.dtype([("n", "<i8"), ("t_first", "<f8"), ("t_last", "<f8"), ("code", "<i8")])
# code: how the batch's stamps are kept in S.stamps (the store keeps its stamps the same way)
_RESIDUAL = RESIDUAL_DTYPES
SUFFIXES = ("values", "stamps", "index")
HEX64 = re.compile(r"[0-9a-f]{64}\Z")


@dataclass
class StreamWriter:
    """Appends batches of one stream; each write is flushed (a killed recording keeps it).

    An append and the close exclude each other (samples come from the acquisition, the close
    with the phase's end), and the close hashes and counts the files as they are: a stream
    once sealed in the middle of an append, after its values were written and hashed and
    before its stamps were, and its recorded sha256 was not its file's (a README test run,
    2026-12-01)."""

    folder: Path
    name: str
    samples: int = 0  # what the close sealed: the index's whole batches
    _files: dict[str, IO[bytes]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        for suffix in SUFFIXES:
            self._files[suffix] = open_private(self._path(suffix), "x", binary=True)

    def _path(self, suffix: str) -> Path:
        return self.folder / f"{self.name}.{suffix}"

    def append(self, t: np.ndarray, values: np.ndarray) -> None:
        if len(t) != len(values):
            raise ValueError(f"stream {self.name}: {len(t)} stamps for {len(values)} values")
        if len(t) == 0:
            return
        code, stamps = encode_stamps(t)
        row = np.array([(len(t), t[0], t[-1], code)], dtype=INDEX_DTYPE)
        with self._lock:
            for suffix, data in (("values", np.ascontiguousarray(values, "<f8").tobytes()),
                                 ("stamps", stamps), ("index", row.tobytes())):
                if data:
                    self._files[suffix].write(data)
                    self._files[suffix].flush()

    def close(self) -> dict[str, str]:
        """Close the files and seal what the index holds whole; the sha256 of each file by
        suffix. An append a stop signal cut short leaves values or stamps its index row does not
        count (or a row it did not count): the files are cut back to the index's whole batches,
        and the samples are theirs."""
        with self._lock:
            for fh in self._files.values():
                fh.close()
            rows = _whole_rows(self._path("index").read_bytes())
            self.samples = sum(n for n, *_ in rows)
            sizes = {"index": len(rows) * INDEX_DTYPE.itemsize, "values": 8 * self.samples,
                     "stamps": sum(stamp_bytes(code, n) for n, _, _, code in rows)}
            for suffix, size in sizes.items():
                if self._path(suffix).stat().st_size > size:
                    os.truncate(self._path(suffix), size)
            return {suffix: sha256_file(self._path(suffix)) for suffix in SUFFIXES}


def _whole_rows(index: bytes) -> list[tuple[int, float, float, int]]:
    """The index's rows written whole, as (n, t_first, t_last, code): a file cut short by a
    kill ends in part of a row."""
    item = INDEX_DTYPE.itemsize
    return np.frombuffer(index[: len(index) - len(index) % item], dtype=INDEX_DTYPE).tolist()


def read_stream(folder: Path | ConfinedFolder, name: str,
                samples: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(t, values)`` of a stream, the stamps restored exactly. A file cut short by a killed
    recording yields the batches written whole before the cut.

    Read inside ``folder`` (:mod:`hilbench.confined_read`) with every size bounded before the
    file is read: the index by ``samples`` (the count its stream's end recorded: a batch
    holds one sample or more), the values and stamps by what the index says they hold. A
    larger file, or an index row that cannot be, is a ValueError naming it."""
    files = confined(folder)
    item = INDEX_DTYPE.itemsize
    data = files.read(f"{name}.index",
                      max_bytes=None if samples is None else item * max(samples, 1))
    rows = _whole_rows(data)
    for row, (n, _, _, code) in enumerate(rows, start=1):
        if n < 1 or code not in (ZERO, RAW, *_RESIDUAL):
            raise ValueError(f"{files.label(name + '.index')}: batch {row} holds {n} "
                             f"sample(s) with stamp code {code}: not an index this hilbench "
                             "wrote")
    total = sum(n for n, *_ in rows)
    values_all = np.frombuffer(files.read(f"{name}.values", max_bytes=8 * total), dtype="<u1")
    stamps_all = files.read(f"{name}.stamps",
                            max_bytes=sum(stamp_bytes(code, n) for n, _, _, code in rows))
    ts, vs = [], []
    v_at = s_at = 0
    for n, t_first, t_last, code in rows:
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


def get_blob(folder: Path | ConfinedFolder, digest: str) -> bytes:
    """The bytes stored under ``digest`` (read inside ``folder``), checked against it."""
    files = confined(folder)
    if not isinstance(digest, str) or not HEX64.match(digest):
        raise ValueError(f"{files}: array reference {digest!r:.80} is not a sha256")
    name = f"{BLOBS}/{digest}"
    data = files.read(name)
    if hashlib.sha256(data).hexdigest() != digest:
        raise ValueError(f"{files.label(name)}: content does not match its sha256 name")
    return data


def put_array(folder: Path, array: np.ndarray, *, store: bool = True) -> dict[str, object]:
    """An array as a reference for a JSON line: ``{"sha256", "dtype", "shape"}``; its bytes
    are written to the array store unless ``store`` is False (the reference alone)."""
    array = np.asarray(array)
    data = np.ascontiguousarray(array).tobytes()
    digest = put_blob(folder, data) if store else hashlib.sha256(data).hexdigest()
    return {"sha256": digest, "dtype": array.dtype.str, "shape": list(array.shape)}


def get_array(folder: Path | ConfinedFolder, ref: dict[str, object]) -> np.ndarray:
    """The array a reference names; a reference that is not one is a ValueError."""
    if not isinstance(ref, dict) or not isinstance(ref.get("shape"), list) \
            or not all(isinstance(n, int) and n >= 0 for n in ref["shape"]) \
            or not isinstance(ref.get("dtype"), str):
        raise ValueError(f"{folder}: {ref!r:.80} is not an array reference")
    data = get_blob(folder, ref.get("sha256"))  # type: ignore[arg-type]
    try:
        dtype = np.dtype(ref["dtype"])
    except TypeError:
        dtype = np.dtype(object)
    if dtype.hasobject:
        raise ValueError(f"{folder}: array {ref['sha256']}: dtype {ref['dtype']!r} is not "
                         "a plain number type")
    shape = tuple(ref["shape"])
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()
