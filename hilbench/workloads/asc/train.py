"""Train the ASC baseline CNN on the train split and save it as an int8 model file.

Float training in PyTorch on the features the device will see (MFE, quantised to int8 and
dequantised back), then batch norm folded, then post-training quantisation calibrated on
training features (never on the test split). Optimiser settings follow Edge Impulse's defaults
for this network (Adam, learning rate 0.005, batch 32).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hilbench.workloads.asc.dataset import CLASSES, DatasetError, load_split
from hilbench.workloads.asc.features import (
    FEATURE_SCALE,
    FEATURE_ZERO_POINT,
    MfeConfig,
    dequantise_features,
    extract_features,
)
from hilbench.workloads.asc.quant import quantise_cnn

CALIBRATION_SAMPLES = 2000
FEATURE_CHUNK = 256
LEARNING_RATE = 0.005
BATCH_SIZE = 32


@dataclass(frozen=True)
class TrainReport:
    """What a training run produced; accuracies are fractions in [0, 1], None without a test
    split."""

    model_path: str
    data_root: str
    epochs: int
    seed: int
    train_slices: int
    test_slices: int
    train_accuracy_float: float
    test_accuracy_float: float | None
    test_accuracy_int8: float | None
    int8_float_agreement: float | None  # share of test slices where both predict the same class
    weight_bytes: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def features_int8(slices: np.ndarray, cfg: MfeConfig, chunk: int = FEATURE_CHUNK) -> np.ndarray:
    """int8 features (N, frames, filters) for audio slices (N, samples), in bounded memory."""
    parts = [extract_features(slices[i : i + chunk], cfg) for i in range(0, len(slices), chunk)]
    if not parts:
        return np.zeros((0, cfg.num_frames(slices.shape[-1]), cfg.num_filters), dtype=np.int8)
    return np.concatenate(parts)


def _chunks(features: np.ndarray, size: int = 4096) -> list[np.ndarray]:
    return [features[i : i + size] for i in range(0, len(features), size)]


def _calibration_subset(features: np.ndarray, count: int) -> np.ndarray:
    """Evenly spaced samples, so calibration sees every class of a class-grouped split."""
    if len(features) <= count:
        return features
    return features[np.linspace(0, len(features) - 1, count).astype(np.int64)]


@contextmanager
def _single_threaded(torch: Any) -> Iterator[None]:
    """A ~3 000-parameter net trains faster on one thread: hand-offs cost more than they save."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _fit(model: Any, x_q: np.ndarray, y: np.ndarray, epochs: int, seed: int) -> None:
    """Train on int8 features, dequantised batch by batch (the full float set would be GBs)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    inputs = torch.from_numpy(np.ascontiguousarray(x_q.transpose(0, 2, 1)))  # (N, filters, frames)
    targets = torch.from_numpy(y)
    optimiser = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()
    with _single_threaded(torch):
        for _ in range(epochs):
            order = torch.randperm(len(inputs), generator=generator)
            for start in range(0, len(order), BATCH_SIZE):
                batch = order[start : start + BATCH_SIZE]
                if len(batch) < 2:  # batch norm needs more than one sample
                    continue
                optimiser.zero_grad()
                x = (inputs[batch].float() - FEATURE_ZERO_POINT) * FEATURE_SCALE
                loss_fn(model(x), targets[batch]).backward()
                optimiser.step()
    model.eval()


def train_model(
    data_root: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    epochs: int = 30,
    seed: int = 0,
    sample_rate: int = 16000,
    limit_clips: int | None = None,
) -> TrainReport:
    """Train on ``data_root``'s train split, save the int8 model to ``out_path``, and report
    float and int8 accuracy on the test split. ``limit_clips`` caps clips per split for quick
    runs. Raises DatasetError for unusable data, ImportError without PyTorch."""
    import torch

    from hilbench.workloads.asc.model import build_float_model, to_float_cnn

    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    started = time.monotonic()
    torch.manual_seed(seed)
    cfg = MfeConfig(sample_rate=sample_rate)

    train = load_split(data_root, "train", sample_rate=sample_rate, limit=limit_clips)
    if len(train) == 0:
        raise DatasetError(f"{data_root}: the train split is empty", data_root)
    train_q = features_int8(train.slices, cfg)
    train_y = train.labels
    del train  # the raw audio of the real train split is gigabytes

    model = build_float_model(
        frames=train_q.shape[1], filters=train_q.shape[2], classes=len(CLASSES)
    )
    _fit(model, train_q, train_y, epochs, seed)
    float_cnn = to_float_cnn(model)
    train_pred = np.concatenate(
        [float_cnn.predict(dequantise_features(part)) for part in _chunks(train_q)]
    )
    train_accuracy = float(np.mean(train_pred == train_y))

    test = load_split(data_root, "test", sample_rate=sample_rate, limit=limit_clips)
    test_q, test_y = features_int8(test.slices, cfg), test.labels
    del test
    info: dict[str, Any] = {
        "trained_on": str(data_root),
        "epochs": epochs,
        "seed": seed,
        "train_slices": len(train_y),
        "torch": torch.__version__,
    }
    quantised = quantise_cnn(
        float_cnn,
        dequantise_features(_calibration_subset(train_q, CALIBRATION_SAMPLES)),
        classes=CLASSES,
        mfe_config=cfg,
        info=info,
    )
    test_float = test_int8 = agreement = None
    if len(test_y):
        float_pred = np.concatenate(
            [float_cnn.predict(dequantise_features(part)) for part in _chunks(test_q)]
        )
        int8_pred = quantised.predict(test_q)
        test_float = float(np.mean(float_pred == test_y))
        test_int8 = float(np.mean(int8_pred == test_y))
        agreement = float(np.mean(float_pred == int8_pred))
        quantised.info.update(
            test_slices=len(test_y), test_accuracy_int8=test_int8, test_accuracy_float=test_float
        )
    path = quantised.save(out_path)
    return TrainReport(
        model_path=str(path),
        data_root=str(data_root),
        epochs=epochs,
        seed=seed,
        train_slices=len(train_y),
        test_slices=len(test_y),
        train_accuracy_float=train_accuracy,
        test_accuracy_float=test_float,
        test_accuracy_int8=test_int8,
        int8_float_agreement=agreement,
        weight_bytes=quantised.weight_bytes,
        seconds=time.monotonic() - started,
    )
