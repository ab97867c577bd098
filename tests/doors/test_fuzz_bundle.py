"""Audit bundles, generated damaged (issue 31): payload files changed (as for cassettes), the
manifest's lines pointing outside the bundle, at kernel files, twice at one file or at none,
bag-info.txt's Payload-Oxum wrong, the bag's files missing; half of them re-tagged by a
tamperer who knows the format (the hashes and Payload-Oxum made to agree again), so that the
reading gets past the hashes. `audit verify` says what disagrees (exit 1), or all agrees (0),
or that the folder is no bundle (2, one line); never a traceback, never a read or a write
outside."""

from __future__ import annotations

import shutil

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.doors.fuzz import (
    HOSTILE_NAMES,
    check,
    damage_folder,
    example_folder,
    fuzz_settings,
    invoke,
    mutate_bytes,
    subprocess_check,
)
from tests.doors.inputs import make_bundle, rewrite_bag


@pytest.fixture(scope="module")
def clean_bundle(tmp_path_factory):
    return make_bundle(tmp_path_factory.mktemp("bundle") / "bundle")


def _damage_bag(draw, bundle) -> None:
    """The bag's own files: manifest lines, Payload-Oxum, a tag file missing or broken."""
    how = draw(st.sampled_from(["line", "line", "oxum", "missing", "bytes"]))
    manifest = bundle / "manifest-sha256.txt"
    if how == "line":
        digest = draw(st.sampled_from(["0" * 64, "x", "", "A" * 64]))
        name = draw(HOSTILE_NAMES | st.sampled_from(["data/documents.jsonl", "bagit.txt"]))
        with manifest.open("a", encoding="utf-8", errors="surrogateescape") as fh:
            fh.write(f"{digest}  {name}\n" if draw(st.booleans()) else f"{digest} {name}\n")
    elif how == "oxum":
        info = bundle / "bag-info.txt"
        value = draw(st.sampled_from(["1.1", "x.y", "", "99999999999999999999.3", "-5.2"]))
        info.write_text(info.read_text() + f"Payload-Oxum: {value}\n")
    elif how == "missing":
        (bundle / draw(st.sampled_from(["manifest-sha256.txt", "bag-info.txt",
                                        "bagit.txt"]))).unlink(missing_ok=True)
    else:
        target = bundle / draw(st.sampled_from(["manifest-sha256.txt", "bag-info.txt"]))
        target.write_bytes(mutate_bytes(draw, target.read_bytes()))


@fuzz_settings()
@given(data=st.data())
def test_a_damaged_bundle_is_verified_or_refused_naming_what_disagrees(
        tmp_path_factory, clean_bundle, data):
    with example_folder(tmp_path_factory) as (work, outside):
        bundle = work / "bundle"
        shutil.copytree(clean_bundle, bundle)
        if data.draw(st.booleans()):
            damage_folder(data.draw, bundle / "data", outside)
            if data.draw(st.booleans()):
                rewrite_bag(bundle)  # a tamperer who knows the format
        if data.draw(st.booleans()):
            _damage_bag(data.draw, bundle)
        outcome = invoke(["audit", "verify", bundle], work)
    check(outcome, {0, 1, 2}, bundle)
    if outcome.code == 2:
        assert len(outcome.errors) == 1, outcome.errors
    if outcome.code == 1:  # one line per mismatch on stdout, a count on stderr
        count = int(outcome.errors[-1].split()[0])
        assert count == len(outcome.stdout.splitlines()), outcome.stdout + outcome.stderr


def test_a_folder_with_no_bag_is_one_line_as_a_user_runs_it(tmp_path, clean_bundle):
    bundle = tmp_path / "bundle"
    shutil.copytree(clean_bundle / "data", bundle / "data")
    line = subprocess_check(["audit", "verify", bundle], tmp_path, 2, bundle)
    assert line.endswith("is not an audit bundle: it has no manifest-sha256.txt and no "
                         "bagit.txt (`hilbench audit export` writes them)")
