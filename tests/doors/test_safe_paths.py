"""`hilbench.safe_paths`: any text becomes one plain file name, and a relative path stays in its
folder, symbolic links, hard links, FIFOs and devices included."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hilbench.safe_paths import (
    MAX_LENGTH,
    OutsideFolder,
    inside,
    open_inside,
    safe_name,
    write_inside,
)

PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")
STEPS = st.lists(st.sampled_from(["..", ".", "", "a", "b", "/", "..\\..", "%2e%2e", "\x00"]),
                 max_size=6)


@settings(max_examples=500)
@given(st.text())
def test_any_text_is_one_plain_name(text: str) -> None:
    name = safe_name(text)
    assert PLAIN.fullmatch(name), name
    assert name not in (".", "..") and len(name) <= MAX_LENGTH + 9
    assert safe_name(text) == name  # the same name every time (byte-identical reports)
    if PLAIN.fullmatch(text) and len(text) <= MAX_LENGTH:
        assert name == text  # a plain name is kept as it is


@given(st.text(), st.text())
def test_two_texts_give_two_names(a: str, b: str) -> None:
    if a != b:
        assert safe_name(a) != safe_name(b)


def test_names_a_user_would_recognise() -> None:
    assert safe_name("qubo-cpu") == "qubo-cpu"
    assert safe_name("t/../../../tmp/x").startswith("t_.._.._.._tmp_x-")
    assert safe_name("..").startswith("_.-") and safe_name("").startswith("unnamed-")
    assert safe_name("-rf").startswith("_rf-") and safe_name(".hidden").startswith("_hidden-")


@settings(max_examples=300)
@given(STEPS)
def test_a_joined_path_stays_in_its_folder_or_is_refused(tmp_path_factory, steps) -> None:
    folder = tmp_path_factory.getbasetemp() / "inside"
    folder.mkdir(exist_ok=True)
    name = "/".join(steps)
    try:
        target = inside(folder, name)
    except OutsideFolder:
        return
    assert folder.resolve() in target.resolve().parents


def test_absolute_dotted_and_linked_paths_are_refused(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    (folder / "sub").mkdir(parents=True)
    outside = tmp_path / "secret"
    outside.write_text("keep")
    (folder / "link").symlink_to(outside)
    (folder / "linked-dir").symlink_to(tmp_path)
    for name in ("/etc/passwd", "../secret", "sub/../../secret", "link", "linked-dir/secret",
                 "", ".", "a//b", "a\\b"):
        with pytest.raises(OutsideFolder):
            inside(folder, name)
    assert inside(folder, "sub/x.svg") == folder / "sub" / "x.svg"
    (folder / "inner").symlink_to(folder / "sub")
    assert inside(folder, "inner/x") == folder / "inner" / "x"  # a link that stays inside
    assert outside.read_text() == "keep"


def test_a_folder_that_is_a_link_is_the_users_choice(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    assert write_inside(tmp_path / "alias", "r.html", "x") == tmp_path / "alias" / "r.html"
    assert (real / "r.html").read_text() == "x"


def test_writing_never_goes_through_a_link_a_hard_link_or_a_fifo(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep")
    os.link(victim, folder / "hard")
    os.mkfifo(folder / "fifo")
    for name in ("hard", "fifo"):
        with pytest.raises(OutsideFolder):
            write_inside(folder, name, "overwritten")
    (folder / "late").symlink_to(folder / "sub-missing")  # a dangling link inside
    with pytest.raises(OutsideFolder):
        write_inside(folder, "late", "x")  # never followed, even to a place inside
    assert victim.read_text() == "keep"
    assert not (folder / "sub-missing").exists()


def test_reading_takes_regular_files_only(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("data")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dir").mkdir()
    with open_inside(tmp_path, "f") as fh:
        assert fh.read() == b"data"
    for name in ("fifo", "dir"):
        with pytest.raises((OutsideFolder, IsADirectoryError)):
            open_inside(tmp_path, name).close()
    with pytest.raises(FileNotFoundError):
        open_inside(tmp_path, "missing")
