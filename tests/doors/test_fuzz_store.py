"""Store files, generated damaged (issue 31): truncated, bytes flipped in the header or a page,
pages zeroed, a write-ahead log that is garbage or holds changes, not SQLite at all. `results`,
`summary`, `status` and `queue list` read them or refuse them in one line naming the file
(exit 2, or 4 when the store cannot be written), never sqlite3's traceback, and write nothing
outside the working folder."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.doors.fuzz import (
    check,
    example_folder,
    fuzz_settings,
    invoke,
    mutate_bytes,
    subprocess_check,
)
from tests.doors.stores import CAMPAIGN, make_store, with_pages_damaged, with_wal_pending
from tests.subprocesses import hilbench

COMMANDS = {"results": ["results"], "summary": ["summary", CAMPAIGN], "status": ["status"],
            "queue": ["queue", "list"]}
PAGE = 4096


class Files:
    """Store bytes, shown by their size (a failing example prints its arguments)."""

    def __init__(self, store: bytes, wal: bytes | None, pending: bytes | None = None) -> None:
        self.store, self.wal, self.pending = store, wal, pending

    def __repr__(self) -> str:
        return (f"Files(store={len(self.store)} bytes, "
                f"wal={None if self.wal is None else len(self.wal)} bytes)")


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """A store, and the same store with a change pending in its write-ahead log."""
    folder = tmp_path_factory.mktemp("stores")
    store = make_store(folder / "s.sqlite")
    pending = with_wal_pending(store, folder / "pending.sqlite")
    return Files(store.read_bytes(), (folder / "pending.sqlite-wal").read_bytes(),
                 pending.read_bytes())


@st.composite
def damaged_store(draw, stores):
    """The store's bytes and its -wal's (or none), damaged the ways disks and people damage
    them."""
    store, pending, wal = stores.store, stores.pending, stores.wal
    if draw(st.booleans()):
        store, log = pending, wal
    else:
        log = None
    where = draw(st.sampled_from(["header", "page", "anywhere", "wal", "both"]))
    if where == "header":
        store = mutate_bytes(draw, store[:100]) + store[100:]
    elif where == "page":
        page = draw(st.integers(0, len(store) // PAGE - 1)) * PAGE
        store = store[:page] + mutate_bytes(draw, store[page:page + PAGE]) + store[page + PAGE:]
    elif where == "anywhere":
        store = mutate_bytes(draw, store)
    if where in ("wal", "both"):
        log = mutate_bytes(draw, log if log is not None else draw(st.binary(max_size=64)))
        if where == "both":
            store = mutate_bytes(draw, store)
    return Files(store, log)


@fuzz_settings()
@given(data=st.data())
def test_a_damaged_store_is_read_or_refused_in_one_line_naming_it(tmp_path_factory, stores,
                                                                  data):
    with example_folder(tmp_path_factory) as (work, _):
        files = data.draw(damaged_store(stores))
        path = work / "s.sqlite"
        path.write_bytes(files.store)
        if files.wal is not None:
            (work / "s.sqlite-wal").write_bytes(files.wal)
        command = COMMANDS[data.draw(st.sampled_from(sorted(COMMANDS)))]
        outcome = invoke([*command, "--db", path], work)
        check(outcome, {0, 2, 4}, path)
        if outcome.code:
            assert len(outcome.errors) == 1, outcome.errors


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_truncated_store_is_one_line_as_a_user_runs_it(tmp_path, stores, command):
    path = tmp_path / "work" / "s.sqlite"  # SQLite's -wal and -shm go beside it
    path.parent.mkdir()
    path.write_bytes(stores.store[: 3 * PAGE - 7])
    line = subprocess_check([*COMMANDS[command], "--db", path], tmp_path, 2, path)
    assert "the store is damaged" in line


@pytest.mark.parametrize("command", [["queue", "list"], ["queue", "history"], ["status"],
                                     ["status", "--all"]], ids=" ".join)
def test_a_store_that_opens_but_has_a_damaged_queue_page_is_one_line(tmp_path, command):
    """Found by the fuzz test above: the file opens and its schema reads, and the damage is met
    only when the queue's rows are read."""
    work = tmp_path / "work"
    work.mkdir()
    store = make_store(tmp_path / "s.sqlite")
    path = with_pages_damaged(store, work / "d.sqlite", ("daemon_queue", "daemon_history"))
    outcome = invoke([*command, "--db", path], work)
    check(outcome, {2}, path)
    assert len(outcome.errors) == 1 and "the store is damaged" in outcome.errors[0], outcome


def test_a_missing_store_is_one_line_and_a_folder_a_usage_error_naming_it(tmp_path):
    subprocess_check(["results", "--db", tmp_path / "missing.sqlite"], tmp_path, 2,
                     tmp_path / "missing.sqlite")
    (tmp_path / "folder.sqlite").mkdir()
    done = hilbench("summary", CAMPAIGN, "--db", tmp_path / "folder.sqlite")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (  # click's usage error: usage, then the line
        "Error: Invalid value for '--db': "
        f"'{tmp_path / 'folder.sqlite'}' is a directory, not a store file")
