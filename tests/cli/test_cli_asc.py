"""`hilbench asc`: make-fixture, inspect (JSON last line, exit codes) and fetch-instructions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("soundfile")
pytest.importorskip("scipy")

from hilbench.cli import EXIT_USAGE, cli


@pytest.fixture(scope="module")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("cli") / "asc"
    result = CliRunner().invoke(
        cli, ["asc", "make-fixture", str(target), "--clips", "1", "--test-clips", "1",
              "--unlisted", "2", "--seed", "3"]
    )
    assert result.exit_code == 0, result.output
    return target


@pytest.mark.slow
def test_inspect_prints_counts_as_json_on_the_last_line(fixture_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["asc", "inspect", str(fixture_dir)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["train"] == 1 * 10 * 4
    assert report["test"] == (1 + 2) * 10 * 4
    assert report["per_class"]["bus"] == {"train": 10, "test": 30}
    assert list(report["per_class"]) == ["airport", "street_traffic", "bus", "park"]
    assert report["sample_rate"] == 44100
    # A fixture is not the published split: inspect says where it differs, by how much.
    assert report["matches_published"] is False
    assert "train: 40 slices, published 41360 (-41320)" in report["differences"]
    assert "bus: 40 slices in train + test, device a holds 14400 (-14360)" in (
        report["differences"])
    assert "DIFFERS from NeuroBench's 41360 / 16240" in result.stdout
    assert report["padded_clips"] == {"train": 0, "test": 0}


def test_the_published_counts_are_recognised() -> None:
    from hilbench.workloads.asc.dataset import compare_with_published

    # Per class only train + test is known (1440 device-a clips of each scene); how a class
    # divides between the splits is not published, so uneven splits are not a difference.
    per_class = {"airport": {"train": 10_350, "test": 4_050},
                 "street_traffic": {"train": 10_330, "test": 4_070},
                 "bus": {"train": 10_340, "test": 4_060},
                 "park": {"train": 10_340, "test": 4_060}}
    assert compare_with_published({"train": 41360, "test": 16240, "per_class": per_class}) == []
    per_class["park"]["test"] = 4050
    assert compare_with_published({"train": 41360, "test": 16230, "per_class": per_class}) == [
        "test: 16230 slices, published 16240 (-10)",
        "park: 14390 slices in train + test, device a holds 14400 (-10)",
    ]


def test_inspect_of_a_broken_directory_exits_2_naming_the_file(
    fixture_dir: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    (broken / "evaluation_setup").mkdir(parents=True)
    (broken / "audio").mkdir()
    source = fixture_dir / "evaluation_setup" / "fold1_train.csv"
    (broken / "evaluation_setup" / "fold1_train.csv").write_text(source.read_text())
    result = CliRunner().invoke(cli, ["asc", "inspect", str(broken)])
    assert result.exit_code == EXIT_USAGE
    assert "fold1_evaluate.csv: missing" in result.stderr


def test_inspect_of_a_missing_directory_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["asc", "inspect", str(tmp_path / "nowhere")])
    assert result.exit_code == EXIT_USAGE
    assert "nowhere" in result.stderr


def test_make_fixture_onto_a_file_exits_2(tmp_path: Path) -> None:
    target = tmp_path / "a-file"
    target.write_text("x")
    result = CliRunner().invoke(cli, ["asc", "make-fixture", str(target)])
    assert result.exit_code == EXIT_USAGE
    assert "a-file" in result.stderr


def test_fetch_instructions_name_the_zenodo_record() -> None:
    result = CliRunner().invoke(cli, ["asc", "fetch-instructions"])
    assert result.exit_code == 0
    assert "10.5281/zenodo.3819968" in result.stdout
    assert "fold1_evaluate.csv" in result.stdout


def test_installed_entry_point_reaches_the_asc_group(fixture_dir: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hilbench", "asc", "inspect", str(fixture_dir)],
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.splitlines()[-1])["test"] == 120
