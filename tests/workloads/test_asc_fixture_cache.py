"""The ASC fixture in the cache folder (`ensure_fixture`) when two processes make it at once:
on a fresh machine two campaigns, or a test suite's workers, start together and both find it
missing. Seen in a run of the suite: the second rename failed ("Directory not empty") and that
campaign's ASC units could not be prepared."""

from __future__ import annotations

from pathlib import Path

import pytest

import hilbench.workloads.asc as asc
from hilbench.workloads.asc.procedures.run import ensure_fixture


def _fake_make(files: dict[str, str]):
    def make(root: Path, seed: int = 0) -> Path:
        root.mkdir(parents=True)
        for name, text in files.items():
            (root / name).write_text(text)
        return root
    return make


def test_a_fixture_another_process_renamed_into_place_first_is_kept(tmp_path, monkeypatch):
    root = tmp_path / "cache" / "asc-fixture-0"
    other = _fake_make({"meta.csv": "the other process's copy"})
    mine = _fake_make({"meta.csv": "this process's copy"})

    def make_while_the_other_finishes(partial: Path, seed: int = 0) -> Path:
        mine(partial, seed)
        other(root, seed)  # the other process renames its complete copy into place meanwhile
        return partial

    monkeypatch.setattr(asc, "make_fixture", make_while_the_other_finishes)
    assert ensure_fixture(root) == root
    assert (root / "meta.csv").read_text() == "the other process's copy"
    assert [p.name for p in root.parent.iterdir()] == ["asc-fixture-0"]  # no partial left


def test_an_empty_folder_is_filled_and_a_filled_one_is_not_made_again(tmp_path, monkeypatch):
    root = tmp_path / "asc-fixture-0"
    root.mkdir()
    monkeypatch.setattr(asc, "make_fixture", _fake_make({"meta.csv": "made"}))
    assert (ensure_fixture(root) / "meta.csv").read_text() == "made"

    def never(partial: Path, seed: int = 0) -> Path:
        raise AssertionError("made again")

    monkeypatch.setattr(asc, "make_fixture", never)
    assert (ensure_fixture(root) / "meta.csv").read_text() == "made"


def test_a_rename_that_fails_for_another_reason_is_not_hidden(tmp_path, monkeypatch):
    root = tmp_path / "asc-fixture-0"
    monkeypatch.setattr(asc, "make_fixture", _fake_make({"meta.csv": "made"}))

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied", str(dst))

    monkeypatch.setattr("hilbench.workloads.asc.procedures.run.os.replace", refuse)
    with pytest.raises(PermissionError):
        ensure_fixture(root)
