"""A long power trace is drawn decimated: per time bin its min..max band and its mean, so the
phases read as levels (not a solid block of noise) and every peak stays inside the band."""

from __future__ import annotations

import numpy as np

from hilbench.report.figures.trace import BINS, Trace, envelope, trace_figure


def _phases(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """20 s at 2 kHz: idle 12 W, active 38 W from 5 s to 15 s; 0.5 W noise, one 60 W spike."""
    t = np.arange(0.0, 20.0, 0.0005)
    w = np.where((t >= 5.0) & (t < 15.0), 38.0, 12.0) + rng.normal(0.0, 0.5, t.size)
    w[30_000] = 60.0
    return t, w


def test_the_envelope_keeps_the_levels_and_every_peak():
    t, w = _phases(np.random.default_rng(1))
    band = envelope(t, w)
    assert band is not None and len(band.t) == BINS
    idle, active = band.mean[band.t < 4.9], band.mean[(band.t > 5.1) & (band.t < 14.9)]
    assert np.all(np.abs(idle - 12.0) < 0.2) and np.all(np.abs(active - 38.0) < 0.2)
    assert band.high.max() == 60.0 and band.low.min() == w.min()
    assert np.all(band.low <= band.mean) and np.all(band.mean <= band.high)
    assert envelope(t[:2 * BINS], w[:2 * BINS]) is None  # short: drawn as it is


def test_the_trace_figure_starts_its_power_axis_at_zero(tmp_path):
    t, w = _phases(np.random.default_rng(2))
    trace = Trace("r" * 32, "asc/power/x", 0.0, {"dmm": (t, w)},
                  [("idle", 0.5, 4.5), ("active: inference", 5.5, 14.5)])
    png, svg = trace_figure(trace, tmp_path, "trace")
    text = svg.read_text()
    assert "<!-- power (W), axis from 0 -->" in text
    assert "dmm: mean (40000 readings)" in text and "min..max per 100 readings" in text
    assert png.stat().st_size > 0
