"""Where a power window comes from: cut by the device's marker in the instrument's samples when
both have one, else the software window with the reason; a marker-cut window's estimate uses
exactly the samples between its edges and carries the edge uncertainty in its budget."""

from __future__ import annotations

import numpy as np
import pytest

from hilbench.power.marker_windows import (
    MARKER_CUT,
    SOFTWARE,
    alignment_summary,
    marked_estimate,
    phase_alignment,
)
from hilbench.power.markers import MarkerEdges, edges_from_levels
from hilbench.power.source import SourceInfo

pytestmark = pytest.mark.timeout(30)

PERIOD, LATENCY = 1e-4, 2e-6


def info(**kw) -> SourceInfo:
    base = dict(name="fast", unit="W", time_resolution_s=PERIOD, accuracy_relative=0.005,
                sample_period_s=PERIOD, marker_latency_s=LATENCY, marker_channels=("gpi0",))
    return SourceInfo(**{**base, **kw})


def levels(*regions: tuple[int, int], n: int = 1000) -> np.ndarray:
    out = np.zeros(n, np.uint8)
    for a, b in regions:
        out[a:b] = 1
    return out


def test_one_marked_region_cuts_the_window_by_sample_index():
    edges = [edges_from_levels(levels((100, 900)), "gpi0")]
    found = phase_alignment(edges, info(), 1000, device_marks=True)
    assert found.method == MARKER_CUT
    assert (found.cut.start, found.cut.stop) == (100, 900)
    assert found.to_dict()["edge_uncertainty_s"] == pytest.approx(PERIOD + LATENCY)


@pytest.mark.parametrize(("edges", "source", "marks", "why"), [
    ([edges_from_levels(levels((100, 900)), "gpi0")], info(), False, "declares no marker"),
    (None, info(marker_channels=(), sample_period_s=None), True, "records no marker"),
    ([MarkerEdges.empty("gpi0")], info(), True, "0 marked regions"),
    ([edges_from_levels(levels((100, 300), (500, 900)), "gpi0")], info(), True,
     "2 marked regions"),
    ([edges_from_levels(levels((100, 1000)), "gpi0")], info(), True, "0 marked regions"),
])
def test_otherwise_the_window_stays_software_and_says_why(edges, source, marks, why):
    found = phase_alignment(edges, source, 1000, device_marks=marks)
    assert found.method == SOFTWARE and found.cut is None
    assert why in found.to_dict()["alignment_reason"]


def test_the_estimate_uses_the_samples_between_the_edges_and_states_their_uncertainty():
    watts = np.where(levels((200, 800)) == 1, 0.1, 0.08)
    cut = phase_alignment([edges_from_levels(levels((200, 800)), "gpi0")], info(), 1000,
                          True).cut
    estimate = marked_estimate("active", watts, cut, info(), boundary="exclude")
    assert estimate.mean_w == pytest.approx(0.1, rel=1e-12)  # no idle sample mixed in
    names = [c.name for c in estimate.budget.components]
    assert "marker edges" in names and "clock offset" not in names
    assert estimate.timing_half_width_s == pytest.approx(PERIOD + LATENCY)
    assert estimate.to_dict()["timing_source"] == "marker edges"


def test_a_figure_says_how_its_windows_were_placed():
    cut = phase_alignment([edges_from_levels(levels((1, 9), n=10), "gpi0")], info(), 10, True)
    soft = phase_alignment(None, info(), 10, False)
    assert alignment_summary([cut])["alignment"] == MARKER_CUT
    assert alignment_summary([soft])["alignment"] == SOFTWARE
    mixed = alignment_summary([cut, soft])
    assert mixed["alignment"] == "mixed" and mixed["marker_windows"] == 1
    assert "declares no marker" in mixed["alignment_reason"]


def test_events_of_one_kind_delimit_a_window_start_to_end():
    """An LPM01A reports each marker event with the same level: a start and an end event."""
    events = MarkerEdges(np.array([120, 870]), np.array([1, 1]), "event")
    found = phase_alignment([events], info(marker_channels=("event",)), 1000, True)
    assert found.method == MARKER_CUT and (found.cut.start, found.cut.stop) == (120, 870)
