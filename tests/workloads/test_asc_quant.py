"""The int8 ASC model: reference vectors, the documented arithmetic, float agreement, the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from hilbench.workloads.asc.features import MfeConfig, extract_features
from hilbench.workloads.asc.quant import (
    ModelFileError,
    QuantisedModel,
    quantise_multiplier,
    requantise,
)
from hilbench.workloads.asc.vectors import (
    check_vectors,
    fixed_float_model,
    fixed_model,
    load_vector_input,
)
from hilbench.workloads.asc.vectors import main as vectors_main

VECTORS = Path(__file__).resolve().parents[2] / "protocols" / "vectors" / "asc_int8"
VECTOR_FILES = sorted(VECTORS.glob("vector_*.json"))


@pytest.fixture(scope="module")
def vector_model() -> QuantisedModel:
    return QuantisedModel.load(VECTORS / "model.npz")


def test_there_are_vectors_to_check() -> None:
    assert len(VECTOR_FILES) == 6


@pytest.mark.parametrize("path", VECTOR_FILES, ids=lambda p: p.stem)
def test_integer_inference_reproduces_every_stored_vector_exactly(
    vector_model: QuantisedModel, path: Path
) -> None:
    doc = json.loads(path.read_text("utf-8"))
    outputs = vector_model.layer_outputs(load_vector_input(doc))
    for layer, got in zip(doc["layers"], outputs, strict=False):
        assert got.dtype == np.dtype(layer["dtype"])
        assert got.shape == tuple(layer["shape"])
        assert got.ravel().tolist() == layer["data"], layer["layer"]
    logits, predicted = vector_model.infer(load_vector_input(doc))
    assert logits.tolist() == doc["logits"]["data"]
    assert predicted == doc["class"]


# A literal, loop-by-loop transcription of the README's arithmetic in plain Python integers: if
# it and the numpy reference agree with the stored vectors, the README says what the code does.
def _readme_inference(model_doc: dict, features: list[list[int]]) -> tuple[list, list[int]]:
    arrays = {k: v for k, v in model_doc["arrays"].items()}

    def get(name: str) -> list[int]:
        return arrays[name]["data"]

    x = features
    layer_outputs = []
    for layer in model_doc["meta"]["layers"][:-1]:
        name, k_size = layer["name"], layer["kernel"]
        c_in, c_out = layer["in_channels"], layer["out_channels"]
        zi, zo = layer["input_zero_point"], layer["output_zero_point"]
        w, bias = get(f"{name}.weight"), get(f"{name}.bias")
        mult, shift = get(f"{name}.multiplier"), get(f"{name}.shift")
        t_len, pad = len(x), k_size // 2
        y = [[0] * c_out for _ in range(t_len)]
        for t in range(t_len):
            for o in range(c_out):
                acc = bias[o]
                for k in range(k_size):
                    s = t + k - pad
                    if 0 <= s < t_len:
                        for c in range(c_in):
                            acc += w[(o * k_size + k) * c_in + c] * (x[s][c] - zi)
                v = ((acc * mult[o] + (1 << (shift[o] - 1))) >> shift[o]) + zo
                y[t][o] = min(max(v, max(-128, zo)), 127)
        x = [
            [max(y[t][o] for t in range(2 * u, min(2 * u + 2, t_len))) for o in range(c_out)]
            for u in range((t_len + 1) // 2)
        ]
        layer_outputs.append(x)
    dense = model_doc["meta"]["layers"][-1]
    flat = [v for row in x for v in row]
    w, bias, n_in = get("dense.weight"), get("dense.bias"), dense["in_features"]
    logits = [
        bias[j] + sum(w[j * n_in + i] * (flat[i] - dense["input_zero_point"]) for i in range(n_in))
        for j in range(dense["out_features"])
    ]
    return layer_outputs, logits


@pytest.mark.parametrize("path", VECTOR_FILES, ids=lambda p: p.stem)
def test_the_readme_arithmetic_in_plain_python_gives_the_stored_vectors(path: Path) -> None:
    """The independent oracle on every vector, not a chosen few."""
    model_doc = json.loads((VECTORS / "model.json").read_text("utf-8"))
    doc = json.loads(path.read_text("utf-8"))
    layer_outputs, logits = _readme_inference(model_doc, load_vector_input(doc).tolist())
    for layer, got in zip(doc["layers"], layer_outputs, strict=True):
        assert [v for row in got for v in row] == layer["data"], layer["layer"]
    assert logits == doc["logits"]["data"]
    assert logits.index(max(logits)) == doc["class"]


def test_the_vector_checker_accepts_the_stored_files_and_catches_a_change(
    tmp_path: Path,
) -> None:
    assert check_vectors(VECTORS) == []
    copy = tmp_path / "asc_int8"
    shutil.copytree(VECTORS, copy)
    victim = sorted(copy.glob("vector_*.json"))[0]
    doc = json.loads(victim.read_text("utf-8"))
    doc["logits"]["data"][0] += 1
    victim.write_text(json.dumps(doc), "utf-8")
    problems = check_vectors(copy)
    assert len(problems) == 1 and victim.name in problems[0]


@pytest.mark.parametrize("real", [1e-6, 0.0123, 0.5, 0.999999, 1.0, 3.7, 1e-20])
def test_multiplier_and_shift_represent_the_real_multiplier(real: float) -> None:
    mult, shift = quantise_multiplier(real)
    assert 1 <= shift <= 62
    assert 0 <= mult < 2**31
    if shift < 62:
        assert mult >= 2**30
        assert abs(mult * 2.0**-shift - real) <= real * 2**-30
    else:
        assert abs(mult * 2.0**-shift - real) <= 2.0**-63


def test_requantisation_rounds_halves_towards_plus_infinity() -> None:
    acc = np.array([1, -1, 3, -3, 5, -5, 4, -4], dtype=np.int32)
    halves = requantise(acc, np.int32(2**30), np.int32(31))  # acc * 0.5
    assert halves.tolist() == [1, 0, 2, -1, 3, -2, 2, -2]


def test_quantised_model_agrees_with_its_float_model_on_most_inputs() -> None:
    cfg = MfeConfig()
    rng = np.random.default_rng(5)
    t = np.arange(cfg.sample_rate) / cfg.sample_rate
    audio = []
    for _ in range(120):
        freqs = rng.uniform(50, 7000, 3)
        mix = sum(rng.uniform(0.01, 0.3) * np.sin(2 * np.pi * f * t) for f in freqs)
        audio.append(mix + rng.uniform(0.001, 0.1) * rng.standard_normal(t.size))
    features = extract_features(np.array(audio, np.float32), cfg)
    float_model = fixed_float_model(cfg)
    model = fixed_model(cfg)
    real = (features.astype(np.float32) + 128) / 256
    float_logits = float_model.activations(real)[-1]
    int8_logits = model.layer_outputs(features)[-1] * model.dense.logit_scale
    agreement = np.mean(model.predict(features) == float_logits.argmax(axis=1))
    assert agreement >= 0.9
    spread = float_logits.max() - float_logits.min()
    assert np.abs(int8_logits - float_logits).max() < 0.1 * spread


def test_save_and_load_round_trip(vector_model: QuantisedModel, tmp_path: Path) -> None:
    path = vector_model.save(tmp_path / "sub" / "m.npz")
    loaded = QuantisedModel.load(path)
    assert loaded.metadata() == vector_model.metadata()
    for name, arr in vector_model.arrays().items():
        np.testing.assert_array_equal(loaded.arrays()[name], arr)
        assert loaded.arrays()[name].dtype == arr.dtype
    features = np.random.default_rng(0).integers(-128, 128, (99, 40)).astype(np.int8)
    assert loaded.infer(features)[0].tolist() == vector_model.infer(features)[0].tolist()


def _write_npz(path: Path, meta: object, arrays: dict[str, np.ndarray]) -> Path:
    with path.open("wb") as fh:
        np.savez(fh, meta=np.array(json.dumps(meta)), **arrays)
    return path


def test_a_file_that_is_not_npz_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "model.npz"
    path.write_text("this is not a model")
    with pytest.raises(ModelFileError, match=r"model\.npz: not a readable \.npz"):
        QuantisedModel.load(path)
    with pytest.raises(ModelFileError, match="not found"):
        QuantisedModel.load(tmp_path / "missing.npz")


def test_an_npz_with_pickled_objects_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "evil.npz"
    with path.open("wb") as fh:
        np.savez(fh, meta=np.array([{"format": "x"}], dtype=object))
    with pytest.raises(ModelFileError, match=r"evil\.npz"):
        QuantisedModel.load(path)


def test_an_npz_of_something_else_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.npz"
    with path.open("wb") as fh:
        np.savez(fh, weights=np.zeros(3))
    with pytest.raises(ModelFileError, match="no 'meta' entry"):
        QuantisedModel.load(path)


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        (lambda m, a: m.update(format="keras"), "format is 'keras'"),
        (lambda m, a: m.update(version=99), "version 99 is not supported"),
        (
            lambda m, a: a.update({"conv0.weight": a["conv0.weight"].astype(np.int16)}),
            "'conv0.weight' is int16",
        ),
        (
            lambda m, a: a.update({"dense.bias": a["dense.bias"][:3]}),
            r"'dense.bias' is int32\[3\]",
        ),
        (lambda m, a: a.pop("conv1.shift"), "missing array 'conv1.shift'"),
        (lambda m, a: a.update(extra=np.zeros(2)), "unexpected array"),
        (lambda m, a: a.update({"conv0.shift": np.zeros(8, np.int32)}), "shift must be in 1..62"),
        (lambda m, a: m["layers"][1].update(in_channels=9), "conv1: in_channels"),
        (lambda m, a: m["layers"][0].update(output_zero_point=300), "outside -128..127"),
        (lambda m, a: m["mfe"].update(fft_length=100), "not a valid MfeConfig"),
    ],
)
def test_a_model_file_that_is_not_what_it_claims_is_refused(
    vector_model: QuantisedModel, tmp_path: Path, tamper, message: str
) -> None:
    meta, arrays = vector_model.metadata(), dict(vector_model.arrays())
    tamper(meta, arrays)
    path = _write_npz(tmp_path / "bad.npz", meta, arrays)
    with pytest.raises(ModelFileError, match=message) as info:
        QuantisedModel.load(path)
    assert "bad.npz" in str(info.value)


def test_inference_refuses_float_or_misshapen_features(vector_model: QuantisedModel) -> None:
    with pytest.raises(TypeError, match="int8"):
        vector_model.infer(np.zeros((99, 40), np.float32))
    with pytest.raises(ValueError, match=r"\(99, 40\)"):
        vector_model.infer(np.zeros((98, 40), np.int8))


def test_batch_prediction_matches_single_inference(vector_model: QuantisedModel) -> None:
    batch = np.random.default_rng(3).integers(-128, 128, (5, 99, 40)).astype(np.int8)
    singles = [vector_model.infer(sample)[1] for sample in batch]
    assert vector_model.predict(batch, chunk=2).tolist() == singles


def test_the_generator_writes_a_self_consistent_set(tmp_path: Path) -> None:
    out = tmp_path / "vectors"
    assert vectors_main(["--out", str(out)]) == 0
    assert (out / "model.npz").is_file() and (out / "model.json").is_file()
    assert len(list(out.glob("vector_*.json"))) == len(VECTOR_FILES)
    assert vectors_main(["--out", str(out), "--check"]) == 0
