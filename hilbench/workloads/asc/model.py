"""The float PyTorch CNN for the ASC baseline, and its export to the numpy :class:`FloatCnn`.

Shape (matched to Edge Impulse's default 1-D CNN for MFE features, which the Arduino baseline
used): the (frames, filters) spectrogram is read as a time series with one channel per mel
filter; conv1d(40 -> 8, kernel 3, same) -> ReLU -> max-pool 2 -> dropout 0.25 -> conv1d(8 -> 16,
kernel 3, same) -> ReLU -> max-pool 2 -> dropout 0.25 -> flatten -> dense(classes). We add batch
norm after each convolution (as the ASC issue asks); it is folded into the convolution for
inference. Max-pooling keeps a short last window (Keras "same" pooling), so 99 frames -> 50 -> 25.
About 3 000 parameters, 3 KB as int8.

Provenance: NeuroBench/system_benchmarks (main, f9c0b4f) publishes the ASC rules and data loader
but not the Arduino project; the paper describes it as Edge Impulse MFE features and a 2-conv
CNN. The layer sizes above are Edge Impulse's generated default for an MFE block with 40 filters
(Conv1D 8 / 16, kernel 3, "same" max-pool 2, dropout 0.25, dense softmax); the batch norm, the
int8 scheme and the training length (30 epochs by default; Edge Impulse defaults to 100) are
our choices.

torch is imported inside the functions, so the inference path (features, quant) never needs it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hilbench.workloads.asc.quant import FloatCnn, FloatConv

if TYPE_CHECKING:  # pragma: no cover
    import torch

BN_EPS = 1e-5


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "training the ASC model needs PyTorch; install it with "
            "`pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu`"
        ) from exc
    return torch


def build_float_model(
    frames: int = 99,
    filters: int = 40,
    classes: int = 4,
    channels: tuple[int, ...] = (8, 16),
    kernel: int = 3,
    dropout: float = 0.25,
) -> torch.nn.Sequential:
    """The trainable network; its input is (N, filters, frames), i.e. channels first."""
    if kernel % 2 == 0:
        raise ValueError(f"kernel must be odd for 'same' padding, got {kernel}")
    nn = _torch().nn
    layers: list[Any] = []
    in_ch, time = filters, frames
    for out_ch in channels:
        layers += [
            nn.Conv1d(in_ch, out_ch, kernel, padding=kernel // 2, bias=False),
            nn.BatchNorm1d(out_ch, eps=BN_EPS),
            nn.ReLU(),
            nn.MaxPool1d(2, stride=2, ceil_mode=True),
            nn.Dropout(dropout),
        ]
        in_ch, time = out_ch, -(-time // 2)
    layers += [nn.Flatten(), nn.Linear(in_ch * time, classes)]
    return nn.Sequential(*layers)


def to_float_cnn(model: torch.nn.Sequential) -> FloatCnn:
    """Fold batch norm into the convolutions and reorder into our time-major layout."""
    nn = _torch().nn
    convs: list[FloatConv] = []
    modules = list(model)
    linear = modules[-1]
    if not isinstance(linear, nn.Linear):
        raise TypeError("the model must end in a Linear layer (built by build_float_model)")
    for i, module in enumerate(modules):
        if not isinstance(module, nn.Conv1d):
            continue
        bn = modules[i + 1]
        if not isinstance(bn, nn.BatchNorm1d):
            raise TypeError(f"layer {i} (Conv1d) must be followed by BatchNorm1d")
        w = module.weight.detach().double().numpy()  # (out, in, kernel)
        gamma = bn.weight.detach().double().numpy()
        beta = bn.bias.detach().double().numpy()
        mean = bn.running_mean.detach().double().numpy()
        var = bn.running_var.detach().double().numpy()
        factor = gamma / np.sqrt(var + bn.eps)
        folded = (w * factor[:, None, None]).transpose(0, 2, 1)  # (out, kernel, in)
        convs.append(
            FloatConv(
                weight=folded.astype(np.float32),
                bias=(beta - mean * factor).astype(np.float32),
            )
        )
    channels = convs[-1].weight.shape[0]
    dense = linear.weight.detach().double().numpy()  # (classes, channels * time), channel-major
    time = dense.shape[1] // channels
    dense = dense.reshape(len(dense), channels, time).transpose(0, 2, 1).reshape(len(dense), -1)
    return FloatCnn(
        convs=tuple(convs),
        dense_weight=dense.astype(np.float32),
        dense_bias=linear.bias.detach().numpy().astype(np.float32),
    )
