"""How a batch of samples is laid out in the store's ``t`` and ``vals`` blobs, near the size of
its values as they came, restored bit for bit.

Time stamps: an instrument stamps its samples ``t0 + k·dt``, so each stamp differs from the
straight line through the batch's first and last stamp (both kept in the row, ``t_first`` and
``t_last``) by 0 or a few units in the last place. The stamps are kept as that difference
(:func:`encode_stamps`): nothing when every one lies on the line, else one signed byte (or two)
per stamp, compressed (zlib, level 1: mostly zeros, ~2 % of a byte a stamp at 1 MS/s). Stamps
off any line (a meter whose readings come when they come) stay raw float64.

Values: float32 when every value is one (the JS220's stream, and any float32 source: four
bytes a sample, nothing lost), else float64. Noise does not compress, so values are not.

Which layout a blob has follows from its length and the row's sample count ``n``, so stores
written before keep reading as they were, with no new column: a ``t`` blob of ``8 n`` bytes is
raw float64 (every store before this module, and stamps off any line); any other ``t`` blob is
tagged (its first byte the residual code; its length is made to differ from ``8 n``). A ``vals``
blob of ``8 n`` bytes is float64, of ``4 n`` float32.
"""

from __future__ import annotations

import zlib

import numpy as np

from hilbench.store.errors import StoreDamaged

# How a batch's stamps are kept: residual codes (the cassette's stamp files use the same).
ZERO, INT8, INT16, RAW = 0, 1, 2, 8
RESIDUAL_DTYPES = {INT8: np.dtype("<i1"), INT16: np.dtype("<i2")}
_PAD = b"\x00"  # after a tagged blob whose length would read as raw float64


def stamp_line(t_first: float, t_last: float, n: int) -> np.ndarray:
    """The straight line both writer and reader compute, with the same float operations."""
    if n == 1:
        return np.array([t_first], dtype=np.float64)
    step = (t_last - t_first) / (n - 1)
    line = np.arange(n, dtype=np.float64)
    line *= step  # in place: the same float operations as t_first + step * k, one array
    line += t_first
    return line


def encode_stamps(t: np.ndarray) -> tuple[int, bytes]:
    """``(code, bytes)`` holding ``t`` exactly given its first and last value."""
    t = np.ascontiguousarray(t, dtype=np.float64)
    if not np.all(np.isfinite(t)):
        return RAW, t.astype("<f8").tobytes()
    line = stamp_line(float(t[0]), float(t[-1]), len(t))
    # Integer difference of the bit patterns: exact whatever the signs (a stamp across zero
    # from its line differs by far more than a residual holds, and stays raw below).
    residual = line.view(np.int64)
    with np.errstate(over="ignore"):
        np.subtract(t.view(np.int64), residual, out=residual)
    if not residual.any():
        return ZERO, b""
    for code, dtype in RESIDUAL_DTYPES.items():
        info = np.iinfo(dtype)
        if residual.min() >= info.min and residual.max() <= info.max:
            return code, residual.astype(dtype).tobytes()
    return RAW, t.astype("<f8").tobytes()


def decode_stamps(code: int, data: bytes, t_first: float, t_last: float, n: int) -> np.ndarray:
    if code == RAW:
        return np.frombuffer(data, dtype="<f8").astype(np.float64)
    line = stamp_line(t_first, t_last, n)
    if code == ZERO:
        return line
    bits = line.view(np.int64)
    with np.errstate(over="ignore"):
        np.add(bits, np.frombuffer(data, dtype=RESIDUAL_DTYPES[code]), out=bits)
    return line


def stamp_bytes(code: int, n: int) -> int:
    return 0 if code == ZERO else n * (8 if code == RAW else RESIDUAL_DTYPES[code].itemsize)


def stamps_blob(t: np.ndarray) -> bytes:
    """The ``t`` blob of a batch (see the module)."""
    n = len(t)
    if n == 0:
        return b""
    code, data = encode_stamps(t)
    if code == RAW:
        return data
    blob = bytes([code]) + (zlib.compress(data, 1) if data else b"")
    return blob + _PAD if len(blob) == 8 * n else blob


def stamps_from_blob(blob: bytes, n: int, t_first: float | None, t_last: float | None
                     ) -> np.ndarray:
    """A batch's stamps from its ``t`` blob and row (read-only when raw)."""
    if len(blob) == 8 * n:
        return np.frombuffer(blob, dtype="<f8")
    if not blob or blob[0] not in (ZERO, *RESIDUAL_DTYPES) or t_first is None or t_last is None:
        raise StoreDamaged(f"a stored batch of {n} sample(s) has {len(blob)} bytes of time "
                           "stamps: neither raw float64 nor a layout this hilbench writes")
    code = blob[0]
    data = b""
    if code != ZERO:
        inflate = zlib.decompressobj()
        try:
            data = inflate.decompress(blob[1:], stamp_bytes(code, n) + 1)
        except zlib.error as exc:
            raise StoreDamaged(f"a stored batch's time stamps do not decompress: {exc}") from None
    if len(data) != stamp_bytes(code, n):
        raise StoreDamaged(f"a stored batch of {n} sample(s) holds {len(data)} bytes of stamp "
                           f"residuals, not {stamp_bytes(code, n)}")
    return decode_stamps(code, data, float(t_first), float(t_last), n)


def values_blob(values: np.ndarray) -> bytes:
    """The ``vals`` blob: float32 when that loses nothing, else float64."""
    values = np.asarray(values)
    if values.dtype == np.float32:
        return values.astype("<f4").tobytes()
    wide = np.ascontiguousarray(values, dtype="<f8")
    with np.errstate(over="ignore", invalid="ignore"):
        narrow = wide.astype("<f4")
        exact = np.array_equal(narrow.astype("<f8"), wide, equal_nan=True)
    return narrow.tobytes() if exact and len(wide) else wide.tobytes()


def values_from_blob(blob: bytes, n: int) -> np.ndarray:
    """A batch's values as float64 (read-only when stored so)."""
    if len(blob) == 8 * n:
        return np.frombuffer(blob, dtype="<f8")
    if len(blob) == 4 * n:
        return np.frombuffer(blob, dtype="<f4").astype(np.float64)
    raise StoreDamaged(f"a stored batch of {n} sample(s) has {len(blob)} bytes of values: "
                       "neither float64 nor float32")
