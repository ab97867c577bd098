"""Reference vectors for the int8 ASC model: what the Arduino firmware must reproduce exactly.

``python -m hilbench.workloads.asc.vectors`` writes, into ``protocols/vectors/asc_int8/``:

- ``model.npz``: a small fixed model (the baseline's shapes, pseudo-random weights from SHAKE-256
  quantised by :func:`quant.quantise_cnn`), loadable with ``QuantisedModel.load``; it is the same
  bits on every machine (no numpy random stream, no BLAS sum decides a bit), so ``fixed_model()``
  and the stored file agree everywhere, and the agent-protocol vectors use the same model;
- ``model.json``: the same model as plain JSON (metadata plus every integer array, flattened
  row-major with its shape) for code that cannot read ``.npz``;
- ``vector_NN_<name>.json``: an int8 input feature tensor, each conv block's int8 output, the
  int32 logits and the class, all computed by :class:`quant.QuantisedModel`.

``--check`` recomputes the model and every output from the stored inputs and exits 1 when a
file differs, so a change to the quantisation or the integer arithmetic cannot slip through
unnoticed. The inputs are stored, not recomputed: the MFE ones pass through an FFT and a
logarithm, whose last bits differ between machines, so regenerating keeps each stored input.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hilbench.workloads.asc.features import MfeConfig, extract_features
from hilbench.workloads.asc.quant import FloatCnn, FloatConv, QuantisedModel, quantise_cnn

# The first seed from 20240607 on whose model puts the six vectors in three classes (a random
# model that answers one class to everything would test the argmax little).
MODEL_SEED = 20240614
INPUT_SEED = 20240609  # the stored inputs' (regenerating keeps them; see the module doc)
MODEL_FILE = "model.npz"
MODEL_JSON = "model.json"
VECTOR_GLOB = "vector_*.json"


def default_out_dir() -> Path:
    """``protocols/vectors/asc_int8`` of the source tree this module lives in."""
    return Path(__file__).resolve().parents[3] / "protocols" / "vectors" / "asc_int8"


def uniform_weights(seed: int, label: str, shape: tuple[int, ...], bound: float) -> np.ndarray:
    """float32 values in (-bound, bound) the same on every machine: SHAKE-256 of
    ``"<seed>:<label>"`` read as little-endian uint32 ``u``, mapped to ``(u + 0.5) / 2**31 - 1``
    (exact in float64), times ``bound`` (one correctly rounded product), rounded to float32."""
    count = math.prod(shape)
    stream = hashlib.shake_256(f"{seed}:{label}".encode()).digest(4 * count)
    u = np.frombuffer(stream, dtype="<u4").astype(np.float64)
    return (((u + 0.5) / 2.0**31 - 1.0) * bound).astype(np.float32).reshape(shape)


def fixed_float_model(cfg: MfeConfig | None = None, seed: int = MODEL_SEED) -> FloatCnn:
    """Baseline-shaped float network, He-scaled uniform weights from ``seed`` (uniform on
    (-b, b) has variance b**2 / 3: b = sqrt(6 / fan_in) gives He's 2 / fan_in)."""
    cfg = cfg or MfeConfig()
    convs = []
    in_ch, time = cfg.num_filters, cfg.num_frames()
    for i, out_ch in enumerate((8, 16)):
        weight = uniform_weights(seed, f"conv{i}.weight", (out_ch, 3, in_ch),
                                 math.sqrt(6.0 / (3 * in_ch)))
        bias = uniform_weights(seed, f"conv{i}.bias", (out_ch,), 0.1 * math.sqrt(3.0))
        convs.append(FloatConv(weight, bias))
        in_ch, time = out_ch, -(-time // 2)
    return FloatCnn(
        convs=tuple(convs),
        dense_weight=uniform_weights(seed, "dense.weight", (4, time * in_ch),
                                     math.sqrt(3.0 / (time * in_ch))),
        dense_bias=uniform_weights(seed, "dense.bias", (4,), 0.1 * math.sqrt(3.0)),
    )


def fixed_model(cfg: MfeConfig | None = None, seed: int = MODEL_SEED) -> QuantisedModel:
    """The vectors' model, calibrated on 32 pseudo-random int8 feature tensors (SHAKE-256 bytes:
    the same on every machine, as every step of the quantisation is)."""
    cfg = cfg or MfeConfig()
    shape = (32, cfg.num_frames(), cfg.num_filters)
    stream = hashlib.shake_256(f"{seed}:calibration".encode()).digest(math.prod(shape))
    calib = (np.frombuffer(stream, dtype=np.uint8).reshape(shape) / 256.0).astype(np.float32)
    return quantise_cnn(
        fixed_float_model(cfg, seed),
        calib,
        mfe_config=cfg,
        info={"purpose": "reference vectors; random weights, not a trained model", "seed": seed},
    )


def vector_inputs(cfg: MfeConfig | None = None) -> list[tuple[str, str, np.ndarray]]:
    """(name, description, int8 features) for each vector: real MFE output and edge cases."""
    cfg = cfg or MfeConfig()
    rng = np.random.default_rng(INPUT_SEED)
    t = np.arange(cfg.sample_rate) / cfg.sample_rate
    tone = 0.3 * np.sin(2 * np.pi * 440.0 * t) + 0.01 * rng.standard_normal(t.size)
    chirp = 0.5 * np.sin(2 * np.pi * (100.0 * t + 3000.0 * t**2))
    noise = 0.05 * rng.standard_normal(t.size)
    shape = (cfg.num_frames(), cfg.num_filters)
    return [
        ("tone", "MFE of a 440 Hz tone at 0.3 full scale plus faint noise", _feat(tone, cfg)),
        ("chirp", "MFE of a 100 Hz -> 6.1 kHz chirp at 0.5 full scale", _feat(chirp, cfg)),
        ("noise", "MFE of white noise at 0.05 RMS", _feat(noise, cfg)),
        ("floor", "every feature at the noise floor (int8 -128)", np.full(shape, -128, np.int8)),
        ("saturated", "every feature at full scale (int8 127)", np.full(shape, 127, np.int8)),
        ("random", "uniform pseudo-random int8", rng.integers(-128, 128, shape).astype(np.int8)),
    ]


def _feat(audio: np.ndarray, cfg: MfeConfig) -> np.ndarray:
    return extract_features(audio.astype(np.float32), cfg)


def _array_json(arr: np.ndarray) -> dict[str, Any]:
    return {"dtype": str(arr.dtype), "shape": list(arr.shape), "data": arr.ravel().tolist()}


def vector_document(
    model: QuantisedModel, name: str, description: str, features: np.ndarray
) -> dict[str, Any]:
    """The JSON content of one vector file: input, every layer's output, logits, class."""
    outputs = model.layer_outputs(features)
    names = [f"conv{i}" for i in range(len(model.convs))]
    logits, predicted = model.infer(features)
    return {
        "name": name,
        "description": description,
        "input": _array_json(features),
        "layers": [{"layer": n, **_array_json(o)} for n, o in zip(names, outputs, strict=False)],
        "logits": _array_json(logits),
        "class": predicted,
    }


def model_document(model: QuantisedModel) -> dict[str, Any]:
    return {
        "meta": model.metadata(),
        "arrays": {name: _array_json(arr) for name, arr in model.arrays().items()},
    }


def _dump(doc: dict[str, Any]) -> str:
    return json.dumps(doc, separators=(",", ":"), sort_keys=True) + "\n"


def stored_inputs(out_dir: Path) -> dict[str, np.ndarray]:
    """The input of each vector file in ``out_dir``, by vector name."""
    docs = (json.loads(path.read_text("utf-8")) for path in sorted(out_dir.glob(VECTOR_GLOB)))
    return {doc["name"]: load_vector_input(doc) for doc in docs}


def write_vectors(out_dir: Path) -> list[Path]:
    """Generate the model and every vector into ``out_dir``, keeping each stored input (see the
    module doc); returns the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    kept = stored_inputs(out_dir)
    for stale in out_dir.glob(VECTOR_GLOB):
        stale.unlink()
    model = fixed_model()
    written = [model.save(out_dir / MODEL_FILE)]
    model = QuantisedModel.load(written[0])  # vectors come from the file as stored
    written.append(out_dir / MODEL_JSON)
    written[-1].write_text(_dump(model_document(model)), encoding="utf-8")
    for i, (name, description, features) in enumerate(vector_inputs(model.mfe_config)):
        features = kept.get(name, features)
        path = out_dir / f"vector_{i:02d}_{name}.json"
        path.write_text(_dump(vector_document(model, name, description, features)), "utf-8")
        written.append(path)
    return written


def load_vector_input(doc: dict[str, Any]) -> np.ndarray:
    spec = doc["input"]
    return np.asarray(spec["data"], dtype=spec["dtype"]).reshape(spec["shape"])


def check_vectors(out_dir: Path) -> list[str]:
    """Problems found when recomputing the stored vectors from the stored model (empty: OK)."""
    try:
        model = QuantisedModel.load(out_dir / MODEL_FILE)
    except ValueError as exc:
        return [str(exc)]
    problems = []
    if model_document(model) != model_document(fixed_model(model.mfe_config)):
        problems.append(f"{out_dir / MODEL_FILE}: is not the model fixed_model() computes")
    model_json = out_dir / MODEL_JSON
    if not model_json.is_file() or model_json.read_text("utf-8") != _dump(model_document(model)):
        problems.append(f"{model_json}: does not match {MODEL_FILE}")
    paths = sorted(out_dir.glob(VECTOR_GLOB))
    if not paths:
        problems.append(f"{out_dir}: no {VECTOR_GLOB} files")
    for path in paths:
        doc = json.loads(path.read_text("utf-8"))
        expected = vector_document(model, doc["name"], doc["description"], load_vector_input(doc))
        if doc != json.loads(_dump(expected)):
            problems.append(f"{path}: stored outputs differ from the model's integer inference")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="output directory")
    parser.add_argument("--check", action="store_true", help="verify instead of writing")
    args = parser.parse_args(argv)
    out_dir = args.out or default_out_dir()
    if args.check:
        problems = check_vectors(out_dir)
        for problem in problems:
            print(problem, file=sys.stderr)
        print("vectors OK" if not problems else f"{len(problems)} problem(s)")
        return 1 if problems else 0
    for path in write_vectors(out_dir):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
