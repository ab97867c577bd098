"""The numpy reference against a maintained NIR runtime: Norse's ``from_nir`` (torch, float32)
runs the packaged graph at the graph's time step with NIR's reset-to-value, and must give the
same output spikes as hilbench's executor (float64) sample for sample. CI installs Norse with
``--no-deps`` (its declared torchvision would replace the CPU torch; .ci/run says why)."""

from __future__ import annotations

import numpy as np
import pytest

from hilbench.nir.reference import run_reference
from hilbench.workloads.asc.nir.graph import packaged_graph, packaged_test_spikes

pytestmark = pytest.mark.filterwarnings(
    "ignore:nirtorch.load is being deprecated:DeprecationWarning")

SAMPLES = 16  # about 0.35 s each in Norse


@pytest.mark.slow
def test_norse_and_the_reference_emit_the_same_output_spikes():
    # imported here, not at collection: torch costs every collecting worker about 3 s
    pytest.importorskip("nir")
    torch = pytest.importorskip("torch")
    norse_torch = pytest.importorskip("norse.torch")
    asc, samples = packaged_graph(), packaged_test_spikes()
    # half of them "park", the class whose samples make this network's readout fire
    park = np.flatnonzero(samples.labels == 3)[: SAMPLES // 2]
    rest = np.flatnonzero(samples.labels != 3)[: SAMPLES - len(park)]
    rasters = samples.rasters[np.concatenate([park, rest])]
    module = norse_torch.from_nir(asc.graph, dt=asc.dt)
    norse_spikes = []
    with torch.no_grad():
        for raster in rasters:
            state, steps = None, []
            for x in torch.as_tensor(raster, dtype=torch.float32):
                out, state = module(x, state)
                steps.append(out.numpy().copy())
            norse_spikes.append(np.stack(steps))
    reference = run_reference(asc.graph, rasters, asc.dt)
    for k in range(SAMPLES):
        assert np.array_equal(norse_spikes[k], reference.activity[k].spikes["lif_out"]), k
    assert reference.counts.sum() > 0  # the comparison saw spikes, not only silence
