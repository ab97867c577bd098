"""The closed category in summaries and reports: for the ASC systems of a campaign that ran a
NIR graph, the graph (by its content hash), how each device's classes agreed with the reference
execution, NeuroBench's algorithm-track metrics of the samples it ran, and the measured dynamic
energy per inference beside the energy the operation counts model, with their ratio — the
figure the algorithm and system tracks are meant to refine together (issue 36).

The measured figure is the inference stage's dynamic energy per inference from the power runs
with the shortest stream (as Table 6 reports it); the modelled one is MACs × E_MAC + ACs × E_AC
of the reference execution of the samples the device ran (the 45 nm figures unless configured).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hilbench.report.campaign_data import CampaignData
from hilbench.report.table import Cell, Column, Table
from hilbench.workloads.asc.report.table import AscGroup, asc_groups, combine, figure_cell

KEY = "asc.closed-category"
MEASURED = "energy_per_inference_j.inference"
MODELLED = "modelled_energy_per_inference_j"

# (row label, stored metric, kind): the algorithm-track figures a closed run stores
ALGORITHM_ROWS: tuple[tuple[str, str, str], ...] = (
    ("footprint (bytes)", "footprint_bytes", "count"),
    ("connection sparsity", "connection_sparsity", "number"),
    ("activation sparsity", "activation_sparsity", "number"),
    ("synaptic ops: dense / sample", "synaptic_ops_dense", "number"),
    ("synaptic ops: effective MACs / sample", "synaptic_ops_effective_macs", "number"),
    ("synaptic ops: effective ACs / sample", "synaptic_ops_effective_acs", "number"),
    ("neuron updates / sample", "neuron_updates", "number"),
)


@dataclass(frozen=True)
class EnergyComparison:
    measured_j: float | None
    measured_u95_j: float | None
    modelled_j: float | None
    reason: str = ""  # why there is no ratio

    @property
    def ratio(self) -> float | None:
        if self.measured_j is None or not self.modelled_j:
            return None
        return self.measured_j / self.modelled_j

    @property
    def ratio_u95(self) -> float | None:
        if self.ratio is None or self.measured_u95_j is None or not self.modelled_j:
            return None
        return self.measured_u95_j / self.modelled_j  # the model's figure is exact by definition


def category_of(group: AscGroup) -> str:
    return str(group.params.get("category") or "open")


def energy_comparison(group: AscGroup) -> EnergyComparison:
    modelled = combine(group.single, MODELLED)
    stream = min(group.power) if group.power else None
    measured = combine(group.power.get(stream, []), MEASURED) if stream is not None else None
    reason = ("no power runs" if stream is None
              else "" if measured is not None and measured.value is not None
              else (measured.reason if measured is not None else "not measured"))
    return EnergyComparison(
        None if measured is None else measured.value,
        None if measured is None else measured.uncertainty,
        None if modelled is None else modelled.value, reason)


def closed_fields(group: AscGroup) -> dict[str, Any]:
    """A leaderboard row's category fields: ``open``, or ``closed`` with the graph, the
    reference check and the measured vs modelled energy."""
    row: dict[str, Any] = {"asc_category": category_of(group)}
    if row["asc_category"] != "closed":
        return row
    row["asc_graph_sha256"] = group.params.get("graph_sha256")
    agreement = combine(group.single, "nir_reference_agreement")
    row["asc_reference_agreement"] = None if agreement is None else agreement.value
    for _, metric, _ in ALGORITHM_ROWS:
        fig = combine(group.single, metric)
        row[f"asc_{metric}"] = None if fig is None else fig.value
    energy = energy_comparison(group)
    row["asc_modelled_energy_per_inference_j"] = energy.modelled_j
    row["asc_measured_to_modelled_energy"] = energy.ratio
    return row


def order_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Closed ASC rows together, one block per graph (so devices compare on the same model),
    before the other rows, each block in the order found."""
    closed = [r for r in rows if r.get("asc_category") == "closed"]
    graphs = list(dict.fromkeys(r.get("asc_graph_sha256") for r in closed))
    grouped = [r for g in graphs for r in closed if r.get("asc_graph_sha256") == g]
    return grouped + [r for r in rows if r.get("asc_category") != "closed"]


def tables(data: CampaignData) -> list[Table]:
    """One table per NIR graph the campaign ran: its devices side by side."""
    closed = [g for g in asc_groups(data) if category_of(g) == "closed"]
    out = []
    for graph in dict.fromkeys(str(g.params.get("graph_sha256")) for g in closed):
        out.append(_table(graph, [g for g in closed if g.params.get("graph_sha256") == graph]))
    return out


def _table(graph: str, groups: list[AscGroup]) -> Table:
    labels = [g.agent for g in groups]
    table = Table(f"{KEY}/{graph[:12]}",
                  f"ASC closed category: NIR graph {graph[:12]}… on every device "
                  "(measured vs modelled energy)",
                  [Column("metric", key=True, align="left"), *(Column(a) for a in labels)])
    table.add(Cell.of_text("classes agree with the reference"),
              *(_agreement(g) for g in groups), ident="agreement", section=True)
    for label, metric, kind in ALGORITHM_ROWS:
        table.add(Cell.of_text(label), *(_plain(g, metric, kind) for g in groups), ident=metric)
    energies = [energy_comparison(g) for g in groups]
    table.add(Cell.of_text("modelled energy / inference"),
              *(_energy(e.modelled_j, None, "modelled") for e in energies),
              ident="modelled", section=True)
    table.add(Cell.of_text("measured dynamic energy / inference"),
              *(_measured(g, e) for g, e in zip(groups, energies, strict=True)),
              ident="measured")
    table.add(Cell.of_text("measured ÷ modelled"),
              *(Cell(e.ratio, e.ratio_u95, prefix=False, missing="" if e.ratio is not None
                     else e.reason or "no figure") for e in energies), ident="ratio")
    model = _meta(groups, MODELLED)
    table.notes += [
        f"graph sha256 {graph} (hilbench's content hash: the same on every device above)",
        "classes: share of the samples run whose predicted class equals the reference "
        "execution's under the neuron conventions the device declares (the run fails below "
        "99 %); each note gives the samples and the agreement with NIR 1.0's own definition",
        "algorithm metrics: NeuroBench's definitions on the reference execution (NIR 1.0) of "
        "the samples each device ran",
        f"modelled: MACs × {_pj(model.get('e_mac_j'))} + ACs × {_pj(model.get('e_ac_j'))} "
        f"({model.get('source', 'energy model')}); measured: the inference stage's dynamic "
        "energy per inference (± 95 %) from the power runs with the shortest stream",
    ]
    return table


def _meta(groups: list[AscGroup], metric: str) -> dict[str, Any]:
    for g in groups:
        fig = combine(g.single, metric)
        if fig is not None and fig.meta:
            return fig.meta
    return {}


def _pj(value: Any) -> str:
    return f"{float(value) * 1e12:g} pJ" if isinstance(value, int | float) else "?"


def _agreement(group: AscGroup) -> Cell:
    fig = combine(group.single, "nir_reference_agreement")
    if fig is None or fig.value is None:
        return figure_cell(fig, False)
    meta = fig.meta
    return Cell(fig.value, kind="percent",
                note=f"{meta.get('agree')}/{meta.get('samples')} samples; NIR 1.0: "
                     f"{100 * float(meta.get('nir_1_0_agreement', 0)):.1f} %")


def _plain(group: AscGroup, metric: str, kind: str) -> Cell:
    fig = combine(group.single, metric)
    if fig is None or fig.value is None:
        return figure_cell(fig, False)
    return Cell(fig.value, kind="count" if kind == "count" else "number", prefix=False)


def _energy(value: float | None, uncertainty: float | None, label: str) -> Cell:
    return Cell(value, uncertainty, "J", label=label, missing="" if value is not None
                else "no figure")


def _measured(group: AscGroup, energy: EnergyComparison) -> Cell:
    if energy.measured_j is None:
        return Cell(None, unit="J", missing=energy.reason or "not measured")
    stream = min(group.power)
    return Cell(energy.measured_j, energy.measured_u95_j, "J",
                simulated=group.simulated(stream))
