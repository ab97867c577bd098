"""A NIR graph on the CPU: the ASC model of the closed category, run by hilbench's reference
executor (:mod:`hilbench.nir.reference`, numpy).

Why the reference executor and not a maintained runtime (measured, docs-notes/nir.md):
snnTorch's NIR import fixes dt = 1e-4 s (the graph steps at 10 ms), nirtorch maps no neuron,
Norse runs the graph spike for spike like the executor but declares torchvision (a CUDA torch
beside the CPU one), and the default set-up installs no torch. So the CPU runs the graph as NIR
1.0 defines it, in float64 on the graph's own parameters: no quantisation.

Pre-processing: the graph's input is the Xylo AFE's spike counts (AFESim); the CPU's timed
pre-processing stage reads the raster AFESim made for the held audio
(:class:`hilbench.workloads.asc.nir.inputs.SpikeInputs`), which is all the CPU does to get its
input.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hilbench.agent.driver import DriverError

EXECUTOR = ("hilbench's numpy reference executor (hilbench.nir.reference, NIR 1.0 CubaLIF, "
            "forward Euler at the graph's dt); no maintained NIR runtime runs this graph at its "
            "time step without torch (docs-notes/nir.md)")


def nir_support() -> dict[str, Any]:
    """The cpu driver's NIR declaration: it runs graphs when the ``nir`` package is here."""
    from hilbench.workloads.asc.nir.model import nir_declaration

    return nir_declaration(EXECUTOR, {}, "none: float64 arithmetic on the graph's float32 "
                                         "parameters")


class NirCpuModel:
    """One loaded graph: its input lookup and its executor."""

    def __init__(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        from hilbench.nir.graph import NirFileError
        from hilbench.nir.reference import ReferenceExecutor
        from hilbench.workloads.asc.nir.inputs import SpikeInputs
        from hilbench.workloads.asc.nir.model import graph_from_load

        try:
            self.asc = graph_from_load(meta, arrays)
            self.executor = ReferenceExecutor(self.asc.graph, self.asc.dt)
        except NirFileError as exc:
            raise DriverError(f"NIR graph rejected: {exc}", "bad_arguments") from None
        self.inputs = SpikeInputs(self.asc)
        self.classes = list(self.asc.classes)
        self.sample_rate = int(self.asc.meta["input"]["sample_rate"])
        self.sample_values = round(self.sample_rate * float(self.asc.meta["input"]
                                                            .get("sample_seconds", 1.0)))

    @property
    def weight_bytes(self) -> int:
        from hilbench.complexity.metrics import connection_weights

        return int(sum(w.nbytes for w in connection_weights(self.asc.graph).values()))

    def detail(self) -> dict[str, Any]:
        return {"graph_sha256": self.asc.sha256, "executor": EXECUTOR,
                "input": self.inputs.source}

    def check_audio(self, audio: np.ndarray, what: str) -> None:
        if audio.dtype != np.float32 or audio.shape[-1] != self.sample_values:
            raise DriverError(f"{what}: the graph takes float32 audio of {self.sample_values} "
                              f"values ({self.sample_rate} Hz), got {audio.dtype} "
                              f"{list(audio.shape)}", "bad_arguments")
        from hilbench.nir.graph import NirFileError

        for row in np.atleast_2d(audio):  # refused at load, not in a timed stage
            try:
                self.inputs.raster(row)
            except NirFileError as exc:
                raise DriverError(f"{what}: {exc}", "bad_arguments") from None

    def preprocess(self, audio: np.ndarray) -> np.ndarray:
        return self.inputs.raster(audio)

    def infer(self, raster: np.ndarray) -> tuple[np.ndarray, int]:
        """Output spike counts per class and the class with the most (lowest on a tie)."""
        out, _ = self.executor.run_sample(np.asarray(raster, dtype=np.float64), record=False)
        counts = np.rint(out.sum(axis=0)).astype(np.int64)[: len(self.classes)]
        return counts, int(np.argmax(counts))
