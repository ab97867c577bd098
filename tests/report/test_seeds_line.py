"""The report says how many seeds each QUBO mean is over, beside the paper's five, and says it
plainly when a campaign used fewer; the shipped CPU example uses the paper's five."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import tomllib

from hilbench.workloads.qubo.report.methodology import PAPER_SEEDS, _seeds_line

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _data(seeds):
    return SimpleNamespace(runs=[
        {"procedure": "qubo.fixed_timeout", "params": {"nodes": n, "density": 0.05, "seed": s}}
        for n in (10, 25) for s in seeds])


def test_fewer_seeds_than_the_paper_are_said_plainly():
    line = _seeds_line(_data([0, 1]))
    assert line.startswith("seeds: FEWER THAN THE PAPER'S 5: as few as 2 per graph size")
    assert "not a NeuroBench-comparable figure until run with seeds 0-4" in line


def test_the_papers_five_seeds_are_said_as_such():
    assert _seeds_line(_data(range(5))).startswith("seeds: 5 or more per graph size and density")
    assert _seeds_line(SimpleNamespace(runs=[])) == ""


def test_the_shipped_cpu_examples_use_the_papers_five_seeds():
    for path in (EXAMPLES / "qubo-cpu.toml",
                 EXAMPLES.parent / "hilbench" / "campaigns" / "demo.toml"):
        tables = tomllib.loads(path.read_text())["qubo"]
        assert all(t["seeds"] == list(range(PAPER_SEEDS)) for t in tables), path
