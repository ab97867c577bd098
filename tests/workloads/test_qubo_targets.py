"""Target lookup: exact below 50 nodes, the published table, else seeded and cached Tabu."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from hilbench.workloads.qubo import (
    TabuSettings,
    exact_optimum_cost,
    find_target,
    qubo_graph,
)
from hilbench.workloads.qubo.published import published_rows, published_target
from hilbench.workloads.qubo.target_cache import default_cache_path

QUICK_TABU = TabuSettings(num_reads=3, num_restarts=2)
# The shared reference folder is wherever this machine keeps it (not part of the repository).
REFERENCE_DIR = Path(os.environ.get("HILBENCH_REFERENCE_DIR", "/work/shared/reference"))
REFERENCE_CSV = REFERENCE_DIR / "qubo_targets.csv"


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Never touch the user's real cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "hilbench" / "qubo_targets.json"


def test_table_is_complete() -> None:
    rows = published_rows()
    assert len(rows) == 180
    keys = {(r.nodes, r.density, r.seed) for r in rows}
    assert len(keys) == 180
    assert {r.seed for r in rows} == {0, 1, 2, 3, 4}
    assert {r.density for r in rows} == {0.01, 0.05, 0.1, 0.25}
    assert all(r.cost < 0 for r in rows)


@pytest.mark.outside_ci
def test_shipped_table_is_the_reference_copy() -> None:
    if not REFERENCE_CSV.exists():
        if "HILBENCH_REFERENCE_DIR" in os.environ:  # asked for it: its absence is an error
            pytest.fail(f"HILBENCH_REFERENCE_DIR has no qubo_targets.csv: {REFERENCE_CSV}")
        pytest.skip(f"no shared reference at {REFERENCE_CSV} (set HILBENCH_REFERENCE_DIR)")
    shipped = Path(__file__).resolve().parents[2] / "hilbench/workloads/qubo/data/qubo_targets.csv"
    assert shipped.read_bytes() == REFERENCE_CSV.read_bytes()


@pytest.mark.parametrize(
    "row",
    [r for r in published_rows() if r.nodes <= 50],
    ids=lambda r: f"{r.nodes}-{r.density}-{r.seed}",
)
def test_exact_optimum_equals_published_small_rows(row) -> None:
    """n < 50 rows are NeuroBench's brute-force optima; n = 50 rows (Tabu) happen to be optimal.

    Agreement on all 60 rows also shows our generator draws the graphs NeuroBench used.
    """
    assert exact_optimum_cost(qubo_graph(row.nodes, row.density, row.seed)) == row.cost


def test_small_workloads_are_solved_exactly_even_when_tabulated() -> None:
    target = find_target(25, 0.1, 2)
    assert target.source == "exact"
    assert target.cost == published_target(25, 0.1, 2).cost == -14
    assert len(target.detail["independent_set"]) == 14


def test_the_exact_target_kept_for_a_workload_is_never_another_workloads() -> None:
    """Units of one workload share a computed target in a process; every other workload
    (nodes, density or seed differing) gets its own, and a caller changing its copy changes
    nobody else's."""
    from hilbench.workloads.qubo.exact import is_independent_set

    workloads = [(20, 0.05, 1), (20, 0.05, 2), (25, 0.05, 1), (20, 0.25, 1), (20, 0.05, 1)]
    for nodes, density, seed in workloads:
        target = find_target(nodes, density, seed)
        graph = qubo_graph(nodes, density, seed)
        assert target.cost == exact_optimum_cost(graph)
        assert is_independent_set(graph, target.detail["independent_set"])
        assert len(target.detail["independent_set"]) == -target.cost
        target.detail["independent_set"].append(999)
    assert 999 not in find_target(20, 0.05, 1).detail["independent_set"]
    assert find_target(20, 0.05, 1).cost != find_target(20, 0.25, 1).cost


def test_untabulated_small_workload_is_exact() -> None:
    target = find_target(30, 0.2, 99)
    assert target.source == "exact"
    assert target.cost == exact_optimum_cost(qubo_graph(30, 0.2, 99))


def test_tabulated_workload_uses_published_value() -> None:
    target = find_target(1000, 0.05, 2)
    assert (target.source, target.cost) == ("published", -109)
    assert "f9c0b4f" in target.detail["origin"]


def test_published_value_stays_official_where_later_beaten() -> None:
    target = find_target(250, 0.05, 0)
    assert target.cost == -67
    assert target.detail["later_optimum"] == -69
    assert "-69" in target.describe()


def test_untabulated_large_workload_runs_seeded_tabu(private_cache: Path) -> None:
    target = find_target(60, 0.1, 11, tabu_settings=QUICK_TABU)
    assert target.source == "tabu"
    assert target.cost >= exact_optimum_cost(qubo_graph(60, 0.1, 11))  # never below optimum
    assert target.detail["num_reads"] == 3
    assert target.detail["num_restarts"] == 2
    assert target.detail["sampler_seed"] == 11
    assert target.detail["published_parameters"] is False
    assert target.detail["is_independent_set"] is True
    assert target.detail["cached"] is False
    assert private_cache.exists()


def test_tabu_is_deterministic_for_a_seed() -> None:
    a = find_target(60, 0.25, 3, tabu_settings=QUICK_TABU, cache=False, tabu_seed=5)
    b = find_target(60, 0.25, 3, tabu_settings=QUICK_TABU, cache=False, tabu_seed=5)
    assert a.cost == b.cost
    assert a.detail["set_size"] == b.detail["set_size"]


def test_tabu_result_is_cached_and_reused(private_cache: Path) -> None:
    first = find_target(70, 0.1, 8, tabu_settings=QUICK_TABU)
    second = find_target(70, 0.1, 8, tabu_settings=QUICK_TABU)
    assert (first.detail["cached"], second.detail["cached"]) == (False, True)
    assert second.cost == first.cost
    stored = json.loads(private_cache.read_text())
    assert len(stored["entries"]) == 1
    assert "sampler_seed=8" in next(iter(stored["entries"]))


def test_cache_entry_is_specific_to_tabu_parameters(private_cache: Path) -> None:
    find_target(70, 0.1, 8, tabu_settings=QUICK_TABU)
    other = find_target(70, 0.1, 8, tabu_settings=QUICK_TABU, tabu_seed=1)
    assert other.detail["cached"] is False
    assert len(json.loads(private_cache.read_text())["entries"]) == 2


def test_cache_value_is_what_is_returned(private_cache: Path) -> None:
    """A cached entry is trusted as stored: campaigns read it instead of recomputing."""
    first = find_target(70, 0.1, 8, tabu_settings=QUICK_TABU)
    document = json.loads(private_cache.read_text())
    (key,) = document["entries"]
    document["entries"][key]["cost"] = first.cost - 1
    private_cache.write_text(json.dumps(document))
    assert find_target(70, 0.1, 8, tabu_settings=QUICK_TABU).cost == first.cost - 1


def test_damaged_cache_is_ignored_and_rewritten(private_cache: Path) -> None:
    private_cache.parent.mkdir(parents=True)
    private_cache.write_text("{ not json")
    target = find_target(70, 0.1, 8, tabu_settings=QUICK_TABU)
    assert target.detail["cached"] is False
    assert json.loads(private_cache.read_text())["format"] == 1


def test_cache_disabled_writes_nothing(private_cache: Path) -> None:
    find_target(70, 0.1, 8, tabu_settings=QUICK_TABU, cache=False)
    assert not private_cache.exists()


def test_default_cache_path_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_path() == tmp_path / "hilbench" / "qubo_targets.json"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_path() == tmp_path / "home" / ".cache" / "hilbench" / "qubo_targets.json"


def test_default_tabu_settings_are_the_published_ones() -> None:
    settings = TabuSettings()
    assert (settings.num_reads, settings.num_restarts, settings.timeout_ms) == (100, 50, None)
    assert settings.is_published


def test_invalid_workload_is_rejected_before_any_solver_runs() -> None:
    with pytest.raises(ValueError, match="density"):
        find_target(100, 0.0, 0)


def test_unwritable_cache_does_not_stop_a_campaign(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "plain-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # cache dir would be inside a file
    target = find_target(70, 0.1, 8, tabu_settings=QUICK_TABU)
    assert target.source == "tabu"
    assert target.cost < 0


def test_a_tabu_time_budget_is_recorded_with_the_target() -> None:
    settings = TabuSettings(num_reads=1000, num_restarts=50, time_budget_s=0.5)
    target = find_target(300, 0.05, 7, cache=False, tabu_settings=settings)
    d = target.detail
    assert d["time_budget_s"] == 0.5 and d["budget_exhausted"] is True
    assert 1 <= d["reads_done"] < 1000  # 1000 reads of 50 restarts do not fit in 0.5 s
    assert d["published_parameters"] is False and d["is_independent_set"] is True
    assert target.cost == -d["set_size"] < 0
    assert "cut short" in target.describe()
