"""NIR graphs in ASC campaigns (the closed category): the ``[[asc]] model`` key's checks, the
refusal of a device that cannot run a graph, and a run's label. The graph logic lives in
:mod:`hilbench.nir` and :mod:`hilbench.complexity`; this module only joins it to the procedure.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hilbench.workloads.asc.nir.model import graph_hash_of_file, is_nir_path

__all__ = ["PACKAGED_NIR", "category", "is_nir_path", "nir_model_path", "nir_refusal"]

# model = "packaged-nir": hilbench/workloads/asc/nir/data/asc-snn-fixture.nir
PACKAGED_NIR = "packaged-nir"
CLOSED, OPEN = "closed", "open"


def nir_model_path(value: str, base_dir: Path) -> str:
    """The graph file a ``model`` value names: inside the campaign file's folder (no absolute
    path, no ``..``, no link leading out), and a graph that loads. ValueError in one line."""
    from hilbench.nir.graph import NirFileError
    from hilbench.safe_paths import OutsideFolder, inside
    from hilbench.workloads.asc.nir.graph import AscGraph, packaged_graph_path

    if value == PACKAGED_NIR:
        path = packaged_graph_path()
    else:
        try:
            path = inside(base_dir, value).resolve()
        except OutsideFolder as exc:
            raise ValueError(f"a NIR graph must lie in the campaign file's folder {base_dir}: "
                             f"{exc}") from None
    try:
        AscGraph.read(path)
    except NirFileError as exc:
        raise ValueError(str(exc)) from None
    return str(path)


def category(model: str | None) -> dict[str, Any]:
    """A run's label: ``closed`` with the graph's content hash for a NIR graph (the same model
    on every device that runs it), else ``open`` (each device its own model)."""
    if is_nir_path(model):
        assert model is not None
        return {"category": CLOSED, "graph_sha256": graph_hash_of_file(model)}
    return {"category": OPEN}


def nir_refusal(nir: Mapping[str, Any] | None, who: str) -> str | None:
    """Why a device cannot run a NIR graph, from what its driver declares (``nir`` in its
    limits or capabilities: ``runs`` and ``reason``); None when it can."""
    if not isinstance(nir, Mapping):
        return f"{who} declares no NIR support, so it cannot run a NIR graph"
    if nir.get("runs") is True:
        return None
    reason = nir.get("reason") or "no reason given"
    return f"{who} cannot run NIR graphs: {reason}"


def nir_needs(model: str | None, limits: Mapping[str, Any] | None) -> Any:
    """A unit's needs for the campaign gate: refused when the driver of a spawned agent
    declares it cannot run NIR graphs (a remote agent is asked at load, by its capabilities)."""
    from hilbench.sdk import UnitNeeds

    if not is_nir_path(model) or limits is None:
        return UnitNeeds()
    return UnitNeeds(key="model", refusal=nir_refusal(limits.get("nir"), "the driver"))


def require_nir_device(device: Any) -> dict[str, Any]:
    """Before a graph is sent: what the device declares about NIR, or AgentError (one line)
    when it declares it cannot run one."""
    from hilbench.wire.link import AgentError

    caps = getattr(device, "capabilities", None)
    nir = getattr(caps, "nir", None)
    declared = None if nir is None else {f: getattr(nir, f) for f in nir.__struct_fields__}
    refusal = nir_refusal(declared, f"agent {device.name}")
    if refusal is not None:
        raise AgentError(device.name, "cannot_run_nir", refusal)
    assert declared is not None
    return declared


ALGORITHM_METRICS = (  # stored name, unit, how to read it from AlgorithmMetrics
    ("footprint_bytes", "B", lambda m: m.footprint_bytes),
    ("connection_sparsity", "", lambda m: m.connection_sparsity),
    ("activation_sparsity", "", lambda m: m.activation_sparsity),
    ("synaptic_ops_dense", "", lambda m: m.synaptic_operations.dense),
    ("synaptic_ops_effective_macs", "", lambda m: m.synaptic_operations.effective_macs),
    ("synaptic_ops_effective_acs", "", lambda m: m.synaptic_operations.effective_acs),
    ("neuron_updates", "", lambda m: m.neuron_updates),
)


def emit_reference_check(ctx: Any, res: Any, records: list[Any], device: Any) -> None:
    """After a single-stream run of a NIR graph: the device's classes against the reference
    execution of the samples it ran, the algorithm-track metrics of those samples and the
    modelled energy per inference — stored; then AgentError (the run fails) when the classes
    agree on fewer than 99 %."""
    from hilbench.workloads.asc.nir.model import NirAscModel

    if not isinstance(res.model, NirAscModel) or not records:
        return
    check_and_emit(ctx, res.model, res.test, records, require_nir_device(device), device.name,
                   res.spec.energy_model())


def check_and_emit(ctx: Any, model: Any, test: Any, records: list[Any],
                   declared: Mapping[str, Any], agent: str, energy: Any = None) -> None:
    """The reference check of :func:`emit_reference_check` for a NIR model (``NirAscModel``),
    the test split the records index and what the device declared; also what a replay runs."""
    from hilbench.documents import Metric
    from hilbench.wire.link import AgentError
    from hilbench.workloads.asc.nir.agreement import MIN_AGREEMENT, check_against_reference
    from hilbench.workloads.asc.nir.inputs import SpikeInputs

    inputs = SpikeInputs(model.asc)
    rasters = [inputs.raster(test.slices[r.index]) for r in records]
    check = check_against_reference(model.asc, rasters, [r.index for r in records],
                                    [r.predicted for r in records], declared.get("semantics"),
                                    energy)
    run = ctx.run_uid
    where = {"graph_sha256": model.sha256, "samples": check.samples,
             "measured_on": "the reference execution (NIR 1.0) of the samples this run ran"}
    ctx.emit(Metric(run, "nir_reference_agreement", check.fraction, "", meta={
        **where, "agree": check.agree, "threshold": MIN_AGREEMENT,
        "device_semantics": check.semantics, "nir_1_0_agreement": check.nir_fraction,
        "disagreeing_samples": check.disagreeing[:50], "executor": declared.get("executor"),
        "quantisation": declared.get("quantisation"),
        "definition": "share of samples whose predicted class equals the reference "
                      "execution's under the device's declared neuron conventions"}))
    for name, unit, read in ALGORITHM_METRICS:
        ctx.emit(Metric(run, name, float(read(check.metrics)), unit, meta={
            **where, "source": "NeuroBench algorithm track (hilbench.complexity), per sample"}))
    modelled = check.modelled.to_dict()
    ctx.emit(Metric(run, "modelled_energy_per_inference_j", modelled.pop("energy_j"), "J",
                    meta={**where, **modelled}))
    if not check.passed:
        raise AgentError(agent, "reference_mismatch", (
            f"predicted classes agree with the reference execution of graph "
            f"{model.sha256[:12]}… on {check.agree}/{check.samples} samples "
            f"({100 * check.fraction:.1f} %, below {100 * MIN_AGREEMENT:g} %); first "
            f"disagreeing samples {check.disagreeing[:5]}"))
