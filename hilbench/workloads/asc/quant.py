"""Int8 CNN for ASC: the folded float reference, post-training quantisation, integer inference.

The integer inference here is the contract the Arduino firmware must match bit for bit
(``protocols/vectors/asc_int8/README.md`` states it for C programmers). Per layer:

Tensors are time-major, channels last: activations are (time, channels) int8, features are
(frames, filters) int8; convolution weights are (out_channels, kernel, in_channels) int8.

conv1d ("same" zero padding, stride 1, odd kernel K, P = K // 2), then ReLU, then max-pool::

    acc[t, o] = bias[o] + sum_{k < K, c} w[o, k, c] * (x[t + k - P, c] - zp_in)   (int32)
        where x outside 0..T-1 counts as zp_in (so it adds nothing)
    y[t, o]   = zp_out + ((acc * mult[o] + 2**(shift[o] - 1)) >> shift[o])      (int64 product,
        arithmetic right shift: rounds half towards +infinity)
    y         = clamp(y, max(-128, zp_out), 127)                                (ReLU + int8)
    pooled[t] = max(y[2t], y[2t + 1]) over the valid rows (last window may hold one row),
        output length ceil(T / 2)

dense after flattening (time, channels) row-major (index t * C + c)::

    logits[j] = bias[j] + sum_i w[j, i] * (x[i] - zp_in)                          (int32)
    class     = the lowest j with the largest logit

The accumulators provably fit in int32 for the shapes we build (the reference raises if not).
Weights are symmetric (zero point 0): per output channel for convolutions, one scale for the
dense layer so that int32 logits compare directly. ``mult`` is in [2**30, 2**31) and ``shift`` in
1..62, so ``real_multiplier ~= mult * 2**-shift``.

Arrays are computed with int64 numpy arithmetic, the integer matrix products via float64 BLAS,
which is exact because every partial sum is an integer far below 2**53.

Quantisation gives the same bits on every machine. Scales, multipliers and shifts come from
IEEE-754 float64 operations (each correctly rounded, round half to even) on the float weights and
on the largest activation the calibration features reach, and that activation is computed by
:func:`ordered_dot`: every sum term by term in index order, never BLAS or numpy's pairwise/SIMD
reductions, whose order (and so whose last bits) depends on the machine, the library and the
thread count. A float model and calibration set thus quantise to one model file everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hilbench.workloads.asc.features import FEATURE_SCALE, FEATURE_ZERO_POINT, MfeConfig
from hilbench.workloads.asc.model_files import read_model_npz, write_model_npz

FORMAT_NAME = "hilbench.asc.int8-cnn"
FORMAT_VERSION = 1
DEFAULT_CLASSES = ("airport", "street_traffic", "bus", "park")
INT8_MIN, INT8_MAX = -128, 127
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
_EXACT_LIMIT = 2**52  # float64 represents every integer below this exactly


class ModelFileError(ValueError):
    """A model file is missing, unreadable, or not the int8 ASC model it claims to be."""


# ----------------------------------------------------------------------------------------------
# Fixed-point helpers


def quantise_multiplier(real: float) -> tuple[int, int]:
    """A positive real multiplier as (mult, shift): real ~= mult * 2**-shift, mult in [2^30, 2^31).

    Multipliers too small for shift 62 keep shift 62 and a smaller ``mult`` (possibly 0).
    """
    if not (real > 0 and math.isfinite(real)):
        raise ValueError(f"requantisation multiplier must be positive and finite, got {real}")
    fraction, exponent = math.frexp(real)  # real = fraction * 2**exponent, fraction in [0.5, 1)
    mult = round(fraction * 2**31)
    shift = 31 - exponent
    if mult == 2**31:
        mult //= 2
        shift -= 1
    if shift < 1:
        raise ValueError(f"requantisation multiplier {real} is too large (needs shift {shift} < 1)")
    if shift > 62:
        mult = round(real * 2**62)
        shift = 62
    return int(mult), int(shift)


def requantise(acc: np.ndarray, mult: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """(acc * mult + 2**(shift-1)) >> shift in int64, per last-axis channel; see module doc."""
    acc64 = acc.astype(np.int64)
    mult64 = np.asarray(mult, dtype=np.int64)
    shift64 = np.asarray(shift, dtype=np.int64)
    rounding = np.left_shift(np.int64(1), shift64 - 1)
    return np.right_shift(acc64 * mult64 + rounding, shift64)


def _int_matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Exact integer a @ b for small integers (see module doc), returned as int64."""
    bound = float(np.abs(a).max(initial=0)) * float(np.abs(b).max(initial=0)) * a.shape[-1]
    if bound >= _EXACT_LIMIT:
        raise OverflowError(f"integer product bound {bound:.3g} exceeds exact float64 range")
    return np.rint(a.astype(np.float64) @ b.astype(np.float64)).astype(np.int64)


def ordered_dot(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """``bias + x @ weight.T`` in float64, each output summed term by term in index order.

    Starts from the bias and adds ``x[..., k] * weight[:, k]`` for k = 0, 1, … with elementwise
    IEEE operations only, so the result does not depend on how a BLAS or numpy splits a sum
    across SIMD lanes and threads (which moved calibrated scales in their 7th digit between
    machines). Products of float32 values are exact in float64; only the additions round.
    """
    x64 = np.asarray(x, dtype=np.float64)
    w64 = np.asarray(weight, dtype=np.float64)
    acc = np.empty((*x64.shape[:-1], w64.shape[0]), dtype=np.float64)
    acc[...] = np.asarray(bias, dtype=np.float64)
    for k in range(x64.shape[-1]):
        acc += x64[..., k, None] * w64[:, k]
    return acc


def _check_int32(acc: np.ndarray, where: str) -> None:
    if acc.size and (acc.min() < INT32_MIN or acc.max() > INT32_MAX):
        raise OverflowError(f"{where}: int32 accumulator overflow ({acc.min()}..{acc.max()})")


def _same_windows(x: np.ndarray, kernel: int, pad_value: float | int) -> np.ndarray:
    """(N, T, C) -> (N, T, kernel * C) sliding windows with 'same' padding on the time axis."""
    pad = kernel // 2
    padded = np.pad(x, ((0, 0), (pad, pad), (0, 0)), constant_values=pad_value)
    windows = np.lib.stride_tricks.sliding_window_view(padded, kernel, axis=1)  # (N, T, C, K)
    n, t, c, k = windows.shape
    return windows.transpose(0, 1, 3, 2).reshape(n, t, k * c)


def _max_pool_time(x: np.ndarray, pool: int, pad_value: float | int) -> np.ndarray:
    """Max over non-overlapping windows of ``pool`` rows; a short last window uses what exists."""
    if pool == 1:
        return x
    n, t, c = x.shape
    out_t = -(-t // pool)
    padded = np.pad(x, ((0, 0), (0, out_t * pool - t), (0, 0)), constant_values=pad_value)
    return padded.reshape(n, out_t, pool, c).max(axis=2)


# ----------------------------------------------------------------------------------------------
# Float reference (batch norm already folded in)


@dataclass(frozen=True)
class FloatConv:
    """A float conv1d + ReLU + max-pool block with batch norm folded into weight and bias."""

    weight: np.ndarray  # (out, kernel, in) float32
    bias: np.ndarray  # (out,) float32
    pool: int = 2


@dataclass(frozen=True)
class FloatCnn:
    """The float network in our layout; the quantiser's input and the accuracy yardstick."""

    convs: tuple[FloatConv, ...]
    dense_weight: np.ndarray  # (classes, time * channels), time-major flatten
    dense_bias: np.ndarray  # (classes,)

    def activations(self, features: np.ndarray) -> list[np.ndarray]:
        """Every block's output and the logits (float32) for float features (N, frames, filters),
        the same bits on every machine (sums in a fixed order, :func:`ordered_dot`)."""
        x = np.asarray(features, dtype=np.float32)
        outputs = []
        for conv in self.convs:
            kernel = conv.weight.shape[1]
            cols = _same_windows(x, kernel, 0.0)
            y = ordered_dot(cols, conv.weight.reshape(conv.weight.shape[0], -1), conv.bias)
            x = _max_pool_time(np.maximum(y, 0.0), conv.pool, 0.0).astype(np.float32)
            outputs.append(x)
        logits = ordered_dot(x.reshape(x.shape[0], -1), self.dense_weight, self.dense_bias)
        outputs.append(logits.astype(np.float32))
        return outputs

    def predict(self, features: np.ndarray, chunk: int = 256) -> np.ndarray:
        """Class indices for float features (N, frames, filters), in chunks to bound memory."""
        parts = [
            np.argmax(self.activations(features[i : i + chunk])[-1], axis=1)
            for i in range(0, len(features), chunk)
        ]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


# ----------------------------------------------------------------------------------------------
# The quantised model


@dataclass(frozen=True)
class QuantConv:
    """One int8 conv1d + requantise + ReLU + max-pool block (see module doc for the arithmetic)."""

    weight: np.ndarray  # (out, kernel, in) int8
    bias: np.ndarray  # (out,) int32
    multiplier: np.ndarray  # (out,) int32
    shift: np.ndarray  # (out,) int32
    input_zero_point: int
    output_zero_point: int
    output_scale: float
    pool: int = 2

    def __call__(self, x: np.ndarray) -> np.ndarray:
        out_ch, kernel, _ = self.weight.shape
        cols = _same_windows(x, kernel, self.input_zero_point).astype(np.int64)
        cols -= self.input_zero_point
        acc = _int_matmul(cols, self.weight.reshape(out_ch, -1).T) + self.bias.astype(np.int64)
        _check_int32(acc, "conv")
        y = requantise(acc, self.multiplier, self.shift) + self.output_zero_point
        y = np.clip(y, max(INT8_MIN, self.output_zero_point), INT8_MAX)
        return _max_pool_time(y, self.pool, INT8_MIN).astype(np.int8)


@dataclass(frozen=True)
class QuantDense:
    """The int8 dense layer producing int32 logits (one weight scale, so logits compare)."""

    weight: np.ndarray  # (classes, features) int8
    bias: np.ndarray  # (classes,) int32
    input_zero_point: int
    logit_scale: float  # real logit = int32 logit * logit_scale

    def __call__(self, x: np.ndarray) -> np.ndarray:
        flat = x.reshape(x.shape[0], -1).astype(np.int64) - self.input_zero_point
        acc = _int_matmul(flat, self.weight.T) + self.bias.astype(np.int64)
        _check_int32(acc, "dense")
        return acc.astype(np.int32)


@dataclass(frozen=True)
class QuantisedModel:
    """The int8 ASC model: features int8 (frames, filters) -> int32 logits and a class index."""

    convs: tuple[QuantConv, ...]
    dense: QuantDense
    input_frames: int
    input_filters: int
    classes: tuple[str, ...] = DEFAULT_CLASSES
    mfe_config: MfeConfig = field(default_factory=MfeConfig)
    input_scale: float = FEATURE_SCALE
    input_zero_point: int = FEATURE_ZERO_POINT
    info: dict[str, Any] = field(default_factory=dict)  # provenance (training), not arithmetic

    # -- inference ----------------------------------------------------------------------------

    def layer_outputs(self, features: np.ndarray) -> list[np.ndarray]:
        """Each block's int8 output, then the int32 logits, for (frames, filters) or a batch."""
        x = self._check_input(features)
        single = x.ndim == 2
        if single:
            x = x[None]
        outputs = []
        for conv in self.convs:
            x = conv(x)
            outputs.append(x)
        outputs.append(self.dense(x))
        return [o[0] for o in outputs] if single else outputs

    def infer(self, features: np.ndarray) -> tuple[np.ndarray, int]:
        """One sample: int32 logits (classes,) and the predicted class index."""
        x = self._check_input(features)
        if x.ndim != 2:
            raise ValueError(f"infer takes one sample (frames, filters), got shape {x.shape}")
        logits = self.layer_outputs(x)[-1]
        return logits, int(np.argmax(logits))

    def predict(self, features: np.ndarray, chunk: int = 256) -> np.ndarray:
        """Class indices for a batch (N, frames, filters), processed in chunks to bound memory."""
        x = self._check_input(features)
        if x.ndim != 3:
            raise ValueError(f"predict takes a batch (N, frames, filters), got shape {x.shape}")
        parts = [
            np.argmax(self.layer_outputs(x[i : i + chunk])[-1], axis=1)
            for i in range(0, len(x), chunk)
        ]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

    def _check_input(self, features: np.ndarray) -> np.ndarray:
        x = np.asarray(features)
        if x.dtype != np.int8:
            raise TypeError(f"the int8 model takes int8 features, got {x.dtype}")
        if x.shape[-2:] != (self.input_frames, self.input_filters):
            raise ValueError(
                f"features of shape {x.shape} do not end in the model's input shape "
                f"({self.input_frames}, {self.input_filters})"
            )
        return x

    @property
    def sample_rate(self) -> int:
        """Audio rate the model's features are computed at (the ASC procedures read this)."""
        return self.mfe_config.sample_rate

    @property
    def description(self) -> str:
        """What the model computes, one line for reports."""
        m = self.mfe_config
        return (f"MFE features ({m.num_filters} filters × {self.input_frames} frames) + int8 CNN "
                f"({len(self.convs)} conv blocks, {len(self.classes)} classes)")

    @property
    def weight_bytes(self) -> int:
        """Bytes of weights, biases and requantisation constants (what a firmware must store)."""
        arrays = [a for c in self.convs for a in (c.weight, c.bias, c.multiplier, c.shift)]
        return sum(a.nbytes for a in [*arrays, self.dense.weight, self.dense.bias])

    # -- file format ----------------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        layers: list[dict[str, Any]] = []
        for i, conv in enumerate(self.convs):
            out_ch, kernel, in_ch = conv.weight.shape
            layers.append(
                {
                    "name": f"conv{i}",
                    "kind": "conv1d_relu_maxpool",
                    "in_channels": int(in_ch),
                    "out_channels": int(out_ch),
                    "kernel": int(kernel),
                    "pool": int(conv.pool),
                    "input_zero_point": int(conv.input_zero_point),
                    "output_zero_point": int(conv.output_zero_point),
                    "output_scale": float(conv.output_scale),
                }
            )
        layers.append(
            {
                "name": "dense",
                "kind": "dense",
                "in_features": int(self.dense.weight.shape[1]),
                "out_features": int(self.dense.weight.shape[0]),
                "input_zero_point": int(self.dense.input_zero_point),
                "logit_scale": float(self.dense.logit_scale),
            }
        )
        return {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "classes": list(self.classes),
            "input": {
                "frames": self.input_frames,
                "filters": self.input_filters,
                "scale": self.input_scale,
                "zero_point": self.input_zero_point,
            },
            "mfe": self.mfe_config.to_dict(),
            "layers": layers,
            "info": self.info,
        }

    def arrays(self) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        for i, conv in enumerate(self.convs):
            out[f"conv{i}.weight"] = conv.weight
            out[f"conv{i}.bias"] = conv.bias
            out[f"conv{i}.multiplier"] = conv.multiplier
            out[f"conv{i}.shift"] = conv.shift
        out["dense.weight"] = self.dense.weight
        out["dense.bias"] = self.dense.bias
        return out

    def save(self, path: str | Path) -> Path:
        """Write one ``.npz``: integer arrays plus a JSON ``meta`` string (no pickled objects)."""
        return write_model_npz(path, self.metadata(), self.arrays())

    @classmethod
    def load(cls, path: str | Path) -> QuantisedModel:
        """Read and validate a file written by :meth:`save`; raises ModelFileError otherwise."""
        meta, arrays = read_model_npz(path, ModelFileError, "model", FORMAT_NAME)
        try:
            return cls.from_parts(meta, arrays)
        except ModelFileError as exc:
            raise ModelFileError(f"{Path(path)}: {exc}") from None

    @classmethod
    def from_parts(cls, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> QuantisedModel:
        """Build from metadata and arrays, checking every shape, type and range."""
        return _ModelReader(meta, arrays).read()


class _ModelReader:
    """Validates metadata + arrays against each other; every complaint names the entry."""

    def __init__(self, meta: Any, arrays: dict[str, np.ndarray]) -> None:
        if not isinstance(meta, dict):
            raise ModelFileError("'meta' must be a JSON object")
        self.meta = meta
        self.arrays = dict(arrays)

    def read(self) -> QuantisedModel:
        meta = self.meta
        if meta.get("format") != FORMAT_NAME:
            raise ModelFileError(f"format is {meta.get('format')!r}, expected {FORMAT_NAME!r}")
        if meta.get("version") != FORMAT_VERSION:
            raise ModelFileError(
                f"format version {meta.get('version')!r} is not supported (expected "
                f"{FORMAT_VERSION})"
            )
        inp = self._dict(meta, "input")
        frames, filters = self._int(inp, "frames", 1), self._int(inp, "filters", 1)
        in_zp = self._int(inp, "zero_point", INT8_MIN, INT8_MAX)
        classes = meta.get("classes")
        if not (isinstance(classes, list) and classes and all(isinstance(c, str) for c in classes)):
            raise ModelFileError("'classes' must be a non-empty list of names")
        try:
            mfe_config = MfeConfig.from_dict(self._dict(meta, "mfe"))
        except (TypeError, ValueError) as exc:
            raise ModelFileError(f"'mfe' is not a valid MfeConfig ({exc})") from None
        layers = meta.get("layers")
        if not (isinstance(layers, list) and len(layers) >= 2):
            raise ModelFileError("'layers' must list the conv blocks and the dense layer")

        convs = []
        time, channels, zero_point = frames, filters, in_zp
        for i, layer in enumerate(layers[:-1]):
            conv = self._conv(i, layer, channels, zero_point)
            convs.append(conv)
            time, channels = -(-time // conv.pool), conv.weight.shape[0]
            zero_point = conv.output_zero_point
        dense = self._dense(layers[-1], time * channels, len(classes), zero_point)
        if self.arrays:
            raise ModelFileError(f"unexpected array(s): {', '.join(sorted(self.arrays))}")
        return QuantisedModel(
            convs=tuple(convs),
            dense=dense,
            input_frames=frames,
            input_filters=filters,
            classes=tuple(classes),
            mfe_config=mfe_config,
            input_scale=self._float(inp, "scale"),
            input_zero_point=in_zp,
            info=meta.get("info") or {},
        )

    def _conv(self, i: int, layer: Any, in_channels: int, in_zp: int) -> QuantConv:
        name = f"conv{i}"
        layer = self._dict({name: layer}, name)
        if layer.get("kind") != "conv1d_relu_maxpool" or layer.get("name") != name:
            raise ModelFileError(f"layer {i} must be conv1d_relu_maxpool named {name!r}")
        out_ch = self._int(layer, "out_channels", 1)
        kernel = self._int(layer, "kernel", 1)
        if kernel % 2 == 0:
            raise ModelFileError(f"{name}: kernel must be odd for 'same' padding, got {kernel}")
        if self._int(layer, "in_channels", 1) != in_channels:
            raise ModelFileError(f"{name}: in_channels does not match the previous layer")
        if self._int(layer, "input_zero_point", INT8_MIN, INT8_MAX) != in_zp:
            raise ModelFileError(f"{name}: input_zero_point does not match the previous layer")
        shift = self._array(f"{name}.shift", np.int32, (out_ch,))
        mult = self._array(f"{name}.multiplier", np.int32, (out_ch,))
        if shift.size and (shift.min() < 1 or shift.max() > 62):
            raise ModelFileError(f"{name}.shift must be in 1..62")
        if mult.size and mult.min() < 0:
            raise ModelFileError(f"{name}.multiplier must not be negative")
        return QuantConv(
            weight=self._array(f"{name}.weight", np.int8, (out_ch, kernel, in_channels)),
            bias=self._array(f"{name}.bias", np.int32, (out_ch,)),
            multiplier=mult,
            shift=shift,
            input_zero_point=in_zp,
            output_zero_point=self._int(layer, "output_zero_point", INT8_MIN, INT8_MAX),
            output_scale=self._float(layer, "output_scale"),
            pool=self._int(layer, "pool", 1),
        )

    def _dense(self, layer: Any, in_features: int, classes: int, in_zp: int) -> QuantDense:
        layer = self._dict({"dense": layer}, "dense")
        if layer.get("kind") != "dense":
            raise ModelFileError("the last layer must be kind 'dense'")
        if self._int(layer, "in_features", 1) != in_features:
            raise ModelFileError(f"dense: in_features must be {in_features} for these conv blocks")
        if self._int(layer, "out_features", 1) != classes:
            raise ModelFileError(f"dense: out_features must equal the {classes} classes")
        if self._int(layer, "input_zero_point", INT8_MIN, INT8_MAX) != in_zp:
            raise ModelFileError("dense: input_zero_point does not match the previous layer")
        return QuantDense(
            weight=self._array("dense.weight", np.int8, (classes, in_features)),
            bias=self._array("dense.bias", np.int32, (classes,)),
            input_zero_point=in_zp,
            logit_scale=self._float(layer, "logit_scale"),
        )

    def _array(self, name: str, dtype: type, shape: tuple[int, ...]) -> np.ndarray:
        if name not in self.arrays:
            raise ModelFileError(f"missing array {name!r}")
        arr = self.arrays.pop(name)
        if arr.dtype != dtype or arr.shape != shape:
            raise ModelFileError(
                f"array {name!r} is {arr.dtype}{list(arr.shape)}, expected "
                f"{np.dtype(dtype)}{list(shape)}"
            )
        return arr

    @staticmethod
    def _dict(parent: dict[str, Any], key: str) -> dict[str, Any]:
        value = parent.get(key)
        if not isinstance(value, dict):
            raise ModelFileError(f"{key!r} must be a JSON object")
        return value

    @staticmethod
    def _int(d: dict[str, Any], key: str, lo: int | None = None, hi: int | None = None) -> int:
        value = d.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ModelFileError(f"{key!r} must be an integer, got {value!r}")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ModelFileError(f"{key!r} = {value} is outside {lo}..{hi}")
        return value

    @staticmethod
    def _float(d: dict[str, Any], key: str) -> float:
        value = d.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ModelFileError(f"{key!r} must be a positive number, got {value!r}")
        return float(value)


# ----------------------------------------------------------------------------------------------
# Post-training quantisation


def quantise_cnn(
    model: FloatCnn,
    calibration_features: np.ndarray,
    classes: Sequence[str] = DEFAULT_CLASSES,
    mfe_config: MfeConfig | None = None,
    info: dict[str, Any] | None = None,
) -> QuantisedModel:
    """Post-training quantisation calibrated on float features (N, frames, filters) in [0, 1].

    Weights: symmetric int8, per output channel for convolutions, per tensor for the dense layer.
    Activations after each ReLU block: int8 with zero point -128 covering [0, calibrated max].
    The calibration features should be dequantised int8 features, i.e. what the device sees.
    """
    calib = np.asarray(calibration_features, dtype=np.float32)
    if calib.ndim != 3 or len(calib) == 0:
        raise ValueError(f"calibration features must be (N, frames, filters), got {calib.shape}")
    in_scale, in_zp = FEATURE_SCALE, FEATURE_ZERO_POINT
    convs = []
    for conv, act_max in zip(model.convs, _activation_maxima(model, calib), strict=True):
        w = conv.weight.astype(np.float64)
        w_scale = np.abs(w).reshape(len(w), -1).max(axis=1) / 127.0
        w_scale[w_scale == 0] = 1.0
        w_q = np.clip(np.rint(w / w_scale[:, None, None]), -127, 127).astype(np.int8)
        bias_q = _quantise_bias(conv.bias, in_scale * w_scale)
        out_scale = max(act_max, 1e-6) / 255.0
        pairs = [quantise_multiplier(in_scale * s / out_scale) for s in w_scale]
        convs.append(
            QuantConv(
                weight=w_q,
                bias=bias_q,
                multiplier=np.array([m for m, _ in pairs], dtype=np.int32),
                shift=np.array([s for _, s in pairs], dtype=np.int32),
                input_zero_point=in_zp,
                output_zero_point=INT8_MIN,
                output_scale=out_scale,
                pool=conv.pool,
            )
        )
        in_scale, in_zp = out_scale, INT8_MIN
    dense_w = model.dense_weight.astype(np.float64)
    dense_scale = float(np.abs(dense_w).max()) / 127.0 or 1.0
    dense = QuantDense(
        weight=np.clip(np.rint(dense_w / dense_scale), -127, 127).astype(np.int8),
        bias=_quantise_bias(model.dense_bias, np.full(len(dense_w), in_scale * dense_scale)),
        input_zero_point=in_zp,
        logit_scale=in_scale * dense_scale,
    )
    return QuantisedModel(
        convs=tuple(convs),
        dense=dense,
        input_frames=calib.shape[1],
        input_filters=calib.shape[2],
        classes=tuple(classes),
        mfe_config=mfe_config or MfeConfig(),
        info=dict(info or {}),
    )


def _activation_maxima(model: FloatCnn, calib: np.ndarray, chunk: int = 256) -> list[float]:
    """Each conv block's largest activation over the calibration features, in bounded memory
    (a maximum is exact, so chunking changes no bit)."""
    maxima = [-math.inf] * len(model.convs)
    for i in range(0, len(calib), chunk):
        outputs = model.activations(calib[i : i + chunk])
        maxima = [max(m, float(a.max())) for m, a in zip(maxima, outputs, strict=False)]
    return maxima


def _quantise_bias(bias: np.ndarray, scale: np.ndarray) -> np.ndarray:
    q = np.rint(bias.astype(np.float64) / scale)
    return np.clip(q, INT32_MIN, INT32_MAX).astype(np.int32)
