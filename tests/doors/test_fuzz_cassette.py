"""Cassettes, generated damaged (issue 31): a committed cassette with its documents, samples,
manifest, sample arrays and channels changed (values of other types, lines nested deep or very
long, names that leave the folder, files turned into symlinks, FIFOs or folders). `replay
--analysis-only` and `replay` compare it (exit 0 or 1) or refuse it in one line naming it
(exit 2), and `cassette export-pyvisa-sim` exports its instrument dialogue or refuses it;
never a traceback, never a write outside the working folder."""

from __future__ import annotations

import shutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.doors.fuzz import (
    check,
    damage_folder,
    example_folder,
    fuzz_settings,
    invoke,
    subprocess_check,
)
from tests.doors.inputs import CASSETTE


def _damaged(work, outside, data, times: int = 3):
    cassette = work / "cassette"
    shutil.copytree(CASSETTE, cassette)
    damage_folder(data.draw, cassette, outside, times)
    return cassette


@fuzz_settings()
@given(data=st.data())
def test_a_damaged_cassette_is_recomputed_or_refused_in_one_line(tmp_path_factory, data):
    with example_folder(tmp_path_factory) as (work, outside):
        cassette = _damaged(work, outside, data)
        outcome = invoke(["replay", "--analysis-only", cassette], work)
    check(outcome, {0, 1, 2}, cassette)
    if outcome.code == 2:
        assert len(outcome.errors) == 1, outcome.errors


@fuzz_settings(share=0.1)
@given(data=st.data())
def test_a_damaged_cassette_is_replayed_or_refused_in_one_line(tmp_path_factory, data):
    with example_folder(tmp_path_factory) as (work, outside):
        cassette = _damaged(work, outside, data, times=2)
        outcome = invoke(["replay", cassette], work)
    check(outcome, {0, 1, 2}, cassette)
    if outcome.code == 2:  # a line per problem: a recorded campaign file may hold several
        assert all(line.startswith("error: ") for line in outcome.errors), outcome.errors


@fuzz_settings(share=0.2)
@given(data=st.data())
def test_a_damaged_cassettes_instrument_dialogue_is_exported_or_refused_in_one_line(
        tmp_path_factory, data):
    with example_folder(tmp_path_factory) as (work, outside):
        cassette = work / "cassette"
        shutil.copytree(CASSETTE, cassette)
        damage_folder(data.draw, cassette / "channels", outside, times=2)
        outcome = invoke(["cassette", "export-pyvisa-sim", cassette, "--out",
                          work / "dmm.yaml"], work)
    check(outcome, {0, 2}, cassette)
    if outcome.code == 2:
        assert len(outcome.errors) == 1, outcome.errors


@pytest.mark.parametrize("args", [["replay"], ["replay", "--analysis-only"]])
def test_a_cassette_with_a_line_nested_5000_deep_is_one_line_as_a_user_runs_it(tmp_path,
                                                                                args):
    cassette = tmp_path / "cassette"
    shutil.copytree(CASSETTE, cassette)
    documents = cassette / "documents.jsonl"
    deep_line = len(documents.read_text().splitlines()) + 1
    with documents.open("a") as fh:
        fh.write('{"kind": "event", "data": ' + "[" * 5000 + "]" * 5000 + "}\n")
    line = subprocess_check([*args, cassette], tmp_path, 2, documents)
    assert line.endswith(f"line {deep_line}: JSON nested deeper than 64 levels")
