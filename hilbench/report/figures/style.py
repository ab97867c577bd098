"""One look for every report figure, and files that come out byte-identical from the same store.

matplotlib is used through its object API on the Agg canvas (no pyplot, no display, no global
state), inside an ``rc_context`` built from matplotlib's defaults, so a user's matplotlibrc
cannot change a report. What would differ between two runs on the same data is fixed: the SVG
id salt (``svg.hashsalt``), the SVG ``Date`` and the PNG ``Software`` metadata are left out,
the SVG ``Creator`` is hilbench's own, and fonts are drawn as paths (DejaVu Sans, shipped with
matplotlib).

Figures must read in grayscale: each series differs by line style and marker, not only colour.
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hilbench.safe_paths import open_inside, safe_name
from hilbench.simulation import LABEL

if TYPE_CHECKING:
    from matplotlib.figure import Figure as MplFigure

# A colour-blind safe palette (Okabe-Ito) whose grey levels differ, with line styles and
# markers that tell the series apart without colour.
COLOURS = ("#000000", "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)))
MARKERS = ("o", "s", "^", "D", "v", "P", "*")
DPI = 110
RC = {
    "svg.hashsalt": "hilbench",
    "svg.fonttype": "path",
    "font.family": "DejaVu Sans",
    "font.size": 9.0,
    "axes.grid": True,
    "grid.alpha": 0.35,
    "axes.titlesize": 9.5,
    "legend.fontsize": 8.0,
    "legend.frameon": True,
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "path.simplify": False,  # simplification depends on the backend's chunking: keep it plain
    "text.parse_math": False,  # a "$" in a campaign name or agent id is text, not mathtext
}


@dataclass(frozen=True)
class Series:
    """How one series (a solver, a system) is drawn."""

    colour: str
    linestyle: Any
    marker: str

    def kw(self) -> dict[str, Any]:
        return {"color": self.colour, "linestyle": self.linestyle, "marker": self.marker,
                "markersize": 5, "linewidth": 1.4, "markerfacecolor": "white",
                "markeredgewidth": 1.2}


def series_styles(names: list[str]) -> dict[str, Series]:
    """A style per name, in the order given; the same name list gives the same styles."""
    combos = zip(itertools.cycle(COLOURS), itertools.cycle(LINESTYLES),
                 itertools.cycle(MARKERS))
    return {name: Series(*combo) for name, combo in zip(names, combos, strict=False)}


@contextmanager
def figure_context() -> Iterator[None]:
    """matplotlib's defaults plus :data:`RC`, whatever the user's matplotlibrc says."""
    import matplotlib

    with matplotlib.rc_context(rc={**matplotlib.rcParamsDefault, **RC}):
        yield


def new_figure(width_in: float, height_in: float) -> MplFigure:
    """A figure on the Agg canvas (no pyplot: nothing global to close or leak)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, height_in), dpi=DPI)
    FigureCanvasAgg(fig)
    return fig


def set_title(fig: MplFigure, title: str, simulation: list[str]) -> None:
    """The figure's title; when its data rest on a simulation, the lines under it say what is
    (wrapped to the figure's width, never cut; only the simulated parts' names when the whole
    description would take more than two lines — the report's banner has it in full)."""
    if simulation:
        width = max(40, int(fig.get_figwidth() * 10.5))
        parts = sorted({p.strip() for line in simulation for p in line.split("; ") if p})
        what = f"{LABEL.upper()}: " + "; ".join(parts)
        lines = textwrap.wrap(what, width)
        if len(lines) > 2:
            names = dict.fromkeys(p.split(":")[0] for p in parts)
            lines = textwrap.wrap(f"{LABEL.upper()}: " + ", ".join(names)
                                  + " (details in the report)", width)
        title = title + "\n" + "\n".join(lines)
    fig.suptitle(title)


def ratio_text(ratio: float) -> str:
    """``60.9``: a ratio with three significant digits (plain notation from 1 up)."""
    if ratio >= 100:
        return f"{ratio:.0f}"
    return f"{ratio:.1f}" if ratio >= 10 else f"{ratio:.2f}" if ratio >= 1 else f"{ratio:.3g}"


def versus(ratio: float) -> str:
    """reference / system as words: ``60.9× below the reference``."""
    if ratio >= 1:
        return f"{ratio_text(ratio)}× below the reference"
    return f"{ratio_text(1 / ratio)}× the reference"


def log_ticks(ax: Any, axis: str, unit: str) -> None:
    """SI-prefixed tick labels on a log axis (``300 mW``, not ``3×10⁻¹``); minor ticks are
    labelled too when the axis spans less than about a decade and a half."""
    from matplotlib.ticker import EngFormatter, NullFormatter

    target = ax.yaxis if axis == "y" else ax.xaxis
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    target.set_major_formatter(EngFormatter(unit=unit, sep=" "))
    narrow = lo > 0 and hi / lo < 30
    target.set_minor_formatter(EngFormatter(unit=unit, sep=" ") if narrow else NullFormatter())


def save(fig: MplFigure, out_dir: Path, stem: str, *, layout: bool = True) -> tuple[Path,
                                                                                 Path]:
    """Write ``stem.png`` and ``stem.svg`` in ``out_dir`` (``stem`` made a safe file name,
    the files checked to stay in the folder); the same figure gives the same bytes every
    time."""
    out_dir.mkdir(parents=True, exist_ok=True)
    name = safe_name(stem)
    # Lay the figure out once, then keep those positions for both files (the constrained
    # layout is most of the drawing time and would otherwise run per file).
    if layout:
        fig.canvas.draw()
        fig.set_layout_engine("none")
    paths = []
    for kind, metadata in (("png", {"Software": None}),
                           ("svg", {"Date": None, "Creator": "hilbench"})):
        with open_inside(out_dir, f"{name}.{kind}", "wb") as fh:
            fig.savefig(fh, format=kind, metadata=metadata)
        paths.append(out_dir / f"{name}.{kind}")
    return paths[0], paths[1]
