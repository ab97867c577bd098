"""Training the ASC baseline on the synthetic fixture, end to end through the int8 model file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hilbench.workloads.asc.cli_train import train
from hilbench.workloads.asc.dataset import load_split
from hilbench.workloads.asc.features import extract_features
from hilbench.workloads.asc.fixture import make_fixture
from hilbench.workloads.asc.quant import QuantisedModel
from hilbench.workloads.asc.train import TrainReport, train_model


@pytest.fixture(autouse=True, scope="module")
def _train_extra() -> None:
    """The train extra, imported when a test here runs (not at collection: torch costs every
    collecting worker about 3 s). CI installs it: a missing one fails there, never skips."""
    if os.environ.get("CI") == "true":
        import scipy  # noqa: F401
        import soundfile  # noqa: F401
        import torch  # noqa: F401
    else:
        pytest.importorskip("torch")
        pytest.importorskip("soundfile")
        pytest.importorskip("scipy")


# Fixture generation, audio decoding and the torch import take most of the time.
pytestmark = pytest.mark.slow

EPOCHS = 5


@pytest.fixture(scope="module")
def fixture_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_fixture(tmp_path_factory.mktemp("asc") / "data", seed=1)


@pytest.fixture(scope="module")
def trained(fixture_root: Path, tmp_path_factory: pytest.TempPathFactory) -> TrainReport:
    out = tmp_path_factory.mktemp("model") / "asc.npz"
    return train_model(fixture_root, out, epochs=EPOCHS, seed=0)


def test_training_on_the_fixture_beats_chance_by_far(trained: TrainReport) -> None:
    assert trained.train_slices == 160 and trained.test_slices == 80
    assert trained.test_accuracy_int8 is not None and trained.test_accuracy_int8 >= 0.75
    assert trained.int8_float_agreement is not None and trained.int8_float_agreement >= 0.9


def test_the_saved_model_alone_reproduces_the_reported_accuracy(
    trained: TrainReport, fixture_root: Path
) -> None:
    model = QuantisedModel.load(trained.model_path)
    assert model.weight_bytes < 64 * 1024  # Arduino-sized
    test = load_split(fixture_root, "test", sample_rate=model.mfe_config.sample_rate)
    features = extract_features(test.slices, model.mfe_config)
    accuracy = float(np.mean(model.predict(features) == test.labels))
    assert accuracy == pytest.approx(trained.test_accuracy_int8)


def test_the_same_seed_gives_the_same_model(
    trained: TrainReport, fixture_root: Path, tmp_path: Path
) -> None:
    again = train_model(fixture_root, tmp_path / "again.npz", epochs=EPOCHS, seed=0)
    first, second = QuantisedModel.load(trained.model_path), QuantisedModel.load(again.model_path)
    for name, arr in first.arrays().items():
        np.testing.assert_array_equal(second.arrays()[name], arr, err_msg=name)


def test_cli_trains_and_writes_the_model(fixture_root: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli.npz"
    args = ["--data", str(fixture_root), "--out", str(out), "--epochs", "2", "--limit-clips", "4"]
    result = CliRunner().invoke(train, [*args, "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["model_path"] == str(out) and report["epochs"] == 2
    assert report["train_slices"] == 40
    QuantisedModel.load(out)


def test_cli_refuses_a_directory_without_data(tmp_path: Path) -> None:
    result = CliRunner().invoke(train, ["--data", str(tmp_path), "--out", str(tmp_path / "m.npz")])
    assert result.exit_code == 2
    assert "--data" in result.output and "fold1_train.csv" in result.output
    assert not (tmp_path / "m.npz").exists()
