"""`hilbench qubo generate|target` as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from hilbench.cli import EXIT_USAGE, cli
from hilbench.workloads.qubo import generate_qubo, matrix_sha256, qubo_graph
from hilbench.workloads.qubo.exact import maximum_independent_set


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "hilbench" / "qubo_targets.json"


def run(*args: str):
    return CliRunner().invoke(cli, ["qubo", *args])


def test_generate_writes_the_neurobench_matrix(tmp_path: Path) -> None:
    out = tmp_path / "w.npy"
    result = run("generate", "--nodes", "120", "--density", "0.1", "--seed", "3", "--out", str(out))
    assert result.exit_code == 0, result.output
    loaded = np.load(out, allow_pickle=False)
    expected = generate_qubo(120, 0.1, 3)
    assert loaded.dtype == np.int8
    assert np.array_equal(loaded, expected)
    assert matrix_sha256(expected) in result.output
    assert "720 edges" in result.output
    assert [p.name for p in tmp_path.iterdir()] == ["w.npy"]  # no temporary left behind


def test_generate_overwrites_an_existing_file(tmp_path: Path) -> None:
    out = tmp_path / "w.npy"
    out.write_text("old")
    assert run("generate", "--nodes", "10", "--density", "0.25", "--out", str(out)).exit_code == 0
    assert np.array_equal(np.load(out), generate_qubo(10, 0.25, 0))


@pytest.mark.parametrize(
    ("args", "option", "message"),
    [
        (["--nodes", "1", "--density", "0.1"], "--nodes", "at least 2"),
        (["--nodes", "10", "--density", "0"], "--density", "(0, 1]"),
        (["--nodes", "10", "--density", "1.01"], "--density", "(0, 1]"),
        (["--nodes", "10", "--density", "0.1", "--seed", "-3"], "--seed", ">= 0"),
        (["--nodes", "ten", "--density", "0.1"], "--nodes", "not a valid integer"),
    ],
)
def test_generate_rejects_bad_workloads(tmp_path: Path, args, option, message) -> None:
    result = run("generate", *args, "--out", str(tmp_path / "w.npy"))
    assert result.exit_code == EXIT_USAGE
    assert option in result.output
    assert message in result.output
    assert not (tmp_path / "w.npy").exists()


def test_generate_rejects_missing_directory(tmp_path: Path) -> None:
    out = tmp_path / "missing" / "w.npy"
    result = run("generate", "--nodes", "10", "--density", "0.1", "--out", str(out))
    assert result.exit_code == EXIT_USAGE
    assert "--out" in result.output
    assert "does not exist" in result.output


def test_generate_rejects_a_file_as_parent_directory(tmp_path: Path) -> None:
    blocker = tmp_path / "plain-file"
    blocker.write_text("")
    out = blocker / "w.npy"
    result = run("generate", "--nodes", "10", "--density", "0.1", "--out", str(out))
    assert result.exit_code == EXIT_USAGE
    assert "is not a directory" in result.output


def test_generate_rejects_a_directory_as_out(tmp_path: Path) -> None:
    result = run("generate", "--nodes", "10", "--density", "0.1", "--out", str(tmp_path))
    assert result.exit_code == EXIT_USAGE
    assert "--out" in result.output


def test_generate_rejects_unwritable_directory(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    if os.access(locked, os.W_OK):  # root (CAP_DAC_OVERRIDE) ignores the mode bits
        locked = Path("/proc")  # where nobody can create a file
    result = run("generate", "--nodes", "10", "--density", "0.1", "--out", str(locked / "w.npy"))
    assert result.exit_code == EXIT_USAGE
    assert "cannot write" in result.output


def test_target_small_workload_is_exact() -> None:
    result = run("target", "--nodes", "25", "--density", "0.25", "--seed", "3")
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[-1] == "-10"  # published NeuroBench optimum for (25, 25 %, 3)
    assert lines[-2].startswith("source: exact")


def test_target_tabulated_workload_is_published() -> None:
    result = run("target", "--nodes", "5000", "--density", "0.01", "--seed", "1")
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert int(lines[-1]) == -528
    assert "published" in lines[-2]


def test_target_json() -> None:
    result = run("target", "--nodes", "100", "--density", "0.1", "--seed", "4", "--json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert (document["cost"], document["source"], document["edges"]) == (-30, "published", 500)


def test_target_rejects_bad_density() -> None:
    result = run("target", "--nodes", "100", "--density", "-0.1")
    assert result.exit_code == EXIT_USAGE
    assert "--density" in result.output


def test_help_explains_each_command() -> None:
    for command in ("generate", "target"):
        result = run(command, "--help")
        assert result.exit_code == 0
        assert "--density" in result.output
    assert "last line" in run("target", "--help").output


@pytest.mark.slow
def test_real_process_generate_and_target(tmp_path: Path) -> None:
    """Through the installed entry point, as scripts and campaigns call it."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    out = tmp_path / "q.npy"
    base = [sys.executable, "-m", "hilbench", "qubo"]
    generated = subprocess.run(
        [*base, "generate", "--nodes", "50", "--density", "0.05", "--seed", "2", "--out", str(out)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert generated.returncode == 0, generated.stderr
    assert np.array_equal(np.load(out), generate_qubo(50, 0.05, 2))

    quick = ["--tabu-reads", "2", "--tabu-restarts", "1"]
    tabu = subprocess.run(
        [*base, "target", "--nodes", "64", "--density", "0.1", "--seed", "9", *quick],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert tabu.returncode == 0, tabu.stderr
    lines = tabu.stdout.strip().splitlines()
    assert "D-Wave Tabu: 2 reads, 1 restarts" in lines[-2]
    assert int(lines[-1]) < 0
    assert "Tabu" in tabu.stderr
    assert (tmp_path / "xdg" / "hilbench" / "qubo_targets.json").exists()

    bad = subprocess.run(
        [*base, "target", "--nodes", "1", "--density", "0.1"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert bad.returncode == EXIT_USAGE
    assert "--nodes" in bad.stderr


@pytest.mark.slow
@pytest.mark.parametrize("solver", ["anytime", "tabu"])
def test_solve_json_last_line_reports_a_checked_answer(solver: str) -> None:
    result = run(
        "solve", "--nodes", "40", "--density", "0.1", "--seed", "2", "--solver", solver,
        "--timeout", "0.05", "--json",
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.output.strip().splitlines()[-1])
    assert {"cost", "feasible", "set_size", "requested_s", "actual_s", "overrun", "gap"} <= set(out)
    assert out["requested_s"] == 0.05 and out["actual_s"] > 0
    assert out["target_source"] == "exact"
    if out["feasible"]:
        assert out["cost"] == -out["set_size"] and out["gap"] >= 0  # never beats the optimum
    else:
        assert out["gap"] is None


def test_solve_names_an_unknown_solver() -> None:
    result = run(
        "solve", "--nodes", "40", "--density", "0.1", "--solver", "magic", "--timeout", "0.01"
    )
    assert result.exit_code != 0
    assert "unknown solver 'magic'" in result.output


def test_target_bound_says_it_is_a_proven_bound(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HILBENCH_BEST_KNOWN", str(tmp_path / "bk.json"))
    result = run("target", "--nodes", "30", "--density", "0.1", "--kind", "bound")
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert "proven bound (OR-Tools CP-SAT" in lines[-2] and "certified" in lines[-2]
    assert int(lines[-1]) == -len(maximum_independent_set(qubo_graph(30, 0.1, 0)))


def test_target_best_known_without_a_record_says_how_to_get_one(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HILBENCH_BEST_KNOWN", str(tmp_path / "bk.json"))
    result = run("target", "--nodes", "60", "--density", "0.1", "--kind", "best-known")
    assert result.exit_code != 0
    assert "no best-known value recorded" in result.output and "qubo targets" in result.output


@pytest.mark.slow
def test_target_grid_on_dask_records_best_known_values(tmp_path: Path) -> None:
    env = {**os.environ, "HILBENCH_BEST_KNOWN": str(tmp_path / "bk.json")}
    grid = subprocess.run(
        # n=25: exact official target; n=100: published (no minutes of Tabu for the official one)
        [sys.executable, "-m", "hilbench", "qubo", "targets", "--nodes", "25,100", "--seeds", "0",
         "--densities", "0.05", "--budget", "0.05", "--workers", "1", "--json"],
        capture_output=True, text=True, timeout=180, env=env,
    )
    assert grid.returncode == 0, grid.stderr
    cells = [json.loads(line) for line in grid.stdout.strip().splitlines()]
    assert sorted(c["nodes"] for c in cells) == [25, 100]
    assert all(c["feasible"] and c["recorded"] for c in cells)
    lookup = subprocess.run(
        [sys.executable, "-m", "hilbench", "qubo", "target", "--nodes", "100", "--density",
         "0.05", "--kind", "best-known"],
        capture_output=True, text=True, timeout=60, env=env,
    )
    assert lookup.returncode == 0, lookup.stderr
    lines = lookup.stdout.strip().splitlines()
    assert "best known" in lines[-2] and "anytime" in lines[-2]
    assert int(lines[-1]) == next(c["cost"] for c in cells if c["nodes"] == 100)


def test_solve_answers_before_it_computes_a_missing_target(monkeypatch, private_cache) -> None:
    """n = 60, seed 23 has no published target: the answer is printed first, then the Tabu
    target is computed (its sampler seed shown and recorded) and cached; the next solve takes
    it from the cache. Tabu itself is replaced by a quick stand-in: only the order is tested."""
    import hilbench.workloads.qubo.targets as targets
    from hilbench.workloads.qubo.tabu import TabuResult

    calls = []

    def quick_tabu(sparse, settings, seed):
        calls.append(seed)
        return TabuResult(cost=-20, best_sample=np.zeros(sparse.nodes, dtype=np.int8),
                          independent=True, elapsed_s=0.0)

    monkeypatch.setattr(targets, "run_tabu", quick_tabu)
    args = ("solve", "--nodes", "60", "--density", "0.1", "--seed", "23", "--timeout", "0.01")
    first = run(*args, "--json")
    assert first.exit_code == 0, first.output
    lines = first.stderr.splitlines()
    assert lines[0].startswith("anytime on n=60") and "cost -" in lines[0]  # the answer
    assert "computing the official target" in lines[1] and "sampler seed 23" in lines[1]
    out = json.loads(first.stdout.strip().splitlines()[-1])
    assert calls == [23] and out["tabu_seed"] == 23 and out["target"] == -20
    assert out["target_source"] == "tabu" and "seed 23" in out["target_note"]
    assert private_cache.exists()
    second = run(*args)
    assert second.exit_code == 0 and calls == [23]  # from the cache: nothing computed
    assert "computing" not in second.output
    assert "seed 23, from cache" in second.output


def test_solve_with_target_none_computes_nothing(monkeypatch, private_cache) -> None:
    import hilbench.workloads.qubo.targets as targets

    monkeypatch.setattr(targets, "run_tabu", lambda *a: pytest.fail("Tabu ran"))
    result = run("solve", "--nodes", "300", "--density", "0.05", "--seed", "23",
                 "--timeout", "0.01", "--target", "none", "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["target"] is None and out["gap"] is None and out["target_source"] == "none"
    assert out["feasible"] and out["cost"] < 0
    assert not private_cache.exists()


def test_solve_best_known_target_is_the_recorded_cost(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HILBENCH_BEST_KNOWN", str(tmp_path / "bk.json"))
    args = ("solve", "--nodes", "60", "--density", "0.1", "--seed", "23", "--timeout", "0.01",
            "--target", "best-known", "--json")
    empty = json.loads(run(*args).stdout.strip().splitlines()[-1])
    assert empty["target"] is None and "no best-known cost" in empty["target_note"]
    recorded = json.loads(run(*args, "--record").stdout.strip().splitlines()[-1])
    assert recorded["target"] == recorded["cost"] and recorded["gap"] == 0.0
