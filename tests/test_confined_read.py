"""hilbench.confined_read: what a folder handed in may make hilbench read — nothing outside it,
nothing but regular files, nothing past a file's size."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from hilbench.confined_read import ConfinedError, ConfinedFolder, entry_parts


@pytest.mark.parametrize(("name", "why"), [
    ("../x", "'..' leaves the folder"), ("a/../../x", "'..' leaves the folder"),
    ("/etc/passwd", "an absolute path"), ("a//b", "not a normalised name"),
    ("./a", "not a normalised name"), ("a/", "not a normalised name"), ("", "not a file name"),
    ("a\x00b", "control characters"), ("a\nb", "control characters"),
])
def test_a_name_that_is_not_relative_and_normalised_is_refused_saying_why(name, why):
    with pytest.raises(ConfinedError, match=why):
        entry_parts(name)


def test_a_plain_name_is_its_parts():
    assert entry_parts("data/samples/000001-dmm0.values") == (
        "data", "samples", "000001-dmm0.values")


@pytest.fixture
def folder(tmp_path: Path) -> ConfinedFolder:
    (tmp_path / "in" / "sub").mkdir(parents=True)
    (tmp_path / "in" / "sub" / "a.txt").write_text("inside\n")
    (tmp_path / "secret.txt").write_text("outside\n")
    return ConfinedFolder(tmp_path / "in")


def test_a_file_inside_reads_and_hashes(folder):
    assert folder.read("sub/a.txt") == b"inside\n"
    assert folder.sha256("sub/a.txt") == hashlib.sha256(b"inside\n").hexdigest()
    assert folder.sub("sub").read("a.txt") == b"inside\n"


def test_a_symlink_is_never_followed_as_the_file_or_on_the_way(folder, tmp_path):
    (folder.path / "link.txt").symlink_to(tmp_path / "secret.txt")
    (folder.path / "up").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(ConfinedError, match=r"link\.txt: a symlink, not a regular file"):
        folder.read("link.txt")
    with pytest.raises(ConfinedError, match="up: a symlink, not a folder"):
        folder.read("up/secret.txt")
    with pytest.raises(ConfinedError, match="up: a symlink"):
        folder.sub("up").read("secret.txt")


def test_the_folder_the_user_named_may_itself_be_a_symlink(folder, tmp_path):
    (tmp_path / "named").symlink_to(folder.path, target_is_directory=True)
    assert ConfinedFolder(tmp_path / "named").read("sub/a.txt") == b"inside\n"


def test_a_fifo_is_refused_at_once_without_waiting_for_a_writer(folder):
    os.mkfifo(folder.path / "fifo")
    done = threading.Event()

    def read() -> None:
        with pytest.raises(ConfinedError, match="a FIFO, not a regular file"):
            folder.read("fifo")
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(5)


def test_a_kernel_file_is_refused_whatever_its_type_says():
    with pytest.raises(ConfinedError, match="a kernel file"):
        ConfinedFolder(Path("/proc/self")).read("status")


def test_a_file_larger_than_allowed_is_refused_before_a_byte_is_read(folder):
    with pytest.raises(ConfinedError, match="7 bytes, more than the 6 it may hold"):
        folder.read("sub/a.txt", max_bytes=6)


def test_a_file_that_grows_while_read_fails_instead_of_being_read_on(folder):
    path = folder.path / "grows"
    path.write_bytes(b"x" * 3_000_000)
    with folder.open("grows") as f:
        blocks = f.blocks()
        next(blocks)
        with path.open("ab") as fh:
            fh.write(b"more")
        with pytest.raises(ConfinedError, match="more bytes than its size 3000000"):
            list(blocks)


def test_lines_longer_than_the_bound_fail_without_reading_them_whole(folder):
    path = folder.path / "lines.jsonl"
    path.write_bytes(b"short\n" + b"x" * 5_000_000 + b"\nafter\n")
    with folder.open("lines.jsonl") as f:
        lines = f.lines(4_000_000)
        assert next(lines) == b"short\n"
        with pytest.raises(ConfinedError, match="a line longer than 4000000 bytes"):
            next(lines)
    with pytest.raises(ConfinedError, match="a line longer than 4000000 bytes"):
        folder.sha256("lines.jsonl", max_line_bytes=4_000_000)
    with folder.open("lines.jsonl") as f:
        assert [len(x) for x in f.lines(6_000_000)] == [6, 5_000_001, 6]


def test_a_walk_lists_every_entry_by_kind_and_follows_no_symlink(folder, tmp_path):
    (folder.path / "up").symlink_to(tmp_path, target_is_directory=True)
    os.mkfifo(folder.path / "sub" / "fifo")
    assert sorted(folder.walk()) == [("sub", "folder", 0), ("sub/a.txt", "file", 7),
                                     ("sub/fifo", "a FIFO", 0), ("up", "a symlink", 0)]


def test_a_missing_entry_is_named(folder):
    with pytest.raises(ConfinedError, match=r"in/sub/none.txt: missing"):
        folder.read("sub/none.txt")
    assert not folder.exists("sub/none.txt") and folder.exists("sub/a.txt")
