"""What the xylo driver declares about NIR graphs, and a graph load turned into its network.

A graph is mapped onto the Xylo Audio 2 specification by :mod:`hilbench_drivers.xylo.nir_import`
(exact, no torch) and runs in XyloSim or on the HDK. The chip's neurons are not NIR 1.0's
CubaLIF (hidden neurons fire up to 31 spikes a step and reset by subtraction; spikes reach the
next layer one step later), so the driver declares those conventions and the orchestrator
compares its classes with the reference run under them; what then remains is integer
arithmetic (docs-notes/nir.md: at most 3 output spikes per neuron and sample on the 80 packaged
samples, no class changed).
"""

from __future__ import annotations

from typing import Any

import numpy as np

EXECUTOR = ("XyloSim (or the HDK) after hilbench's exact mapping of the graph to the Xylo Audio "
            "2 specification (hilbench_drivers.xylo.nir_import; not Rockpool's from_nir, which "
            "needs torch and re-derives dt)")
QUANTISATION = ("integer weights and thresholds as in the graph; decays are bit shifts that "
                "truncate (measured on the 80 packaged samples: output counts within 3 spikes "
                "of the reference under these conventions, no class changed)")


def nir_support() -> dict[str, Any]:
    """The declaration (``nir`` in capabilities): it runs graphs when ``nir`` is installed."""
    from hilbench.workloads.asc.nir.model import nir_declaration
    from hilbench_drivers.xylo.nir_export import XYLO_SEMANTICS

    return nir_declaration(EXECUTOR, XYLO_SEMANTICS.to_dict(), QUANTISATION)


def network_from_load(meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    """The Xylo network of a NIR graph load (NirFileError in one line when it cannot be)."""
    from hilbench.workloads.asc.nir.model import graph_from_load
    from hilbench_drivers.xylo.nir_import import import_graph

    return import_graph(graph_from_load(meta, arrays))
