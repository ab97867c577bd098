"""System description files (system.toml), generated broken (issue 31): `leaderboard --system`
reads them before anything else; exit 2 with every error line naming the file, no traceback,
nothing written outside the working folder. A valid one gets as far as the store (whose
campaign has no leaderboard rows: that line names no system file)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.doors.fuzz import (
    check,
    example_folder,
    fuzz_settings,
    invoke,
    subprocess_check,
    toml_file,
)
from tests.doors.inputs import EXAMPLES
from tests.doors.stores import CAMPAIGN, make_store

BASE = (EXAMPLES / "system.toml").read_bytes()
NO_ROWS = "the campaigns hold no ASC or QUBO"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return make_store(tmp_path_factory.mktemp("store") / "s.sqlite")


@fuzz_settings()
@given(data=st.data())
def test_a_generated_system_file_is_read_or_refused_in_one_line_naming_it(
        tmp_path_factory, store, data):
    from hilbench.report.system import SystemFileError, load_system

    with example_folder(tmp_path_factory) as (work, _):
        path = work / "system.toml"
        path.write_bytes(data.draw(toml_file(BASE)))
        outcome = invoke(["leaderboard", CAMPAIGN, "--system", path, "--db", store], work)
        try:
            load_system(path)
        except SystemFileError:
            check(outcome, {2}, path)
            assert len(outcome.errors) == 1, outcome.errors  # the system file's one line
        else:
            check(outcome, {2}, NO_ROWS)


SYSTEM_FILES = {
    "5000-deep": BASE + b"\n[system.x]\na = " + b"[" * 5000 + b"]" * 5000 + b"\n",
    "not UTF-8": BASE.replace(b"system", b"syst\xe9m", 1),
    "NUL byte": BASE.replace(b"=", b"= \x00", 1),
    "300 KB string": BASE + b'\n[system.y]\nbig = "' + b"x" * 300_000 + b'"\n',
}


@pytest.mark.parametrize("kind", sorted(SYSTEM_FILES))
def test_a_broken_system_file_is_one_line_as_a_user_runs_it(tmp_path, store, kind):
    path = tmp_path / "system.toml"
    path.write_bytes(SYSTEM_FILES[kind])
    subprocess_check(["leaderboard", CAMPAIGN, "--system", path, "--db", store], tmp_path, 2,
                     path)


@pytest.mark.parametrize("kind", ["5000-deep", "not UTF-8"])
def test_a_broken_daemon_config_is_one_line_before_the_daemon_starts(tmp_path, kind):
    path = tmp_path / "daemon.toml"
    path.write_bytes({"5000-deep": b"a = " + b"[" * 5000 + b"]" * 5000 + b"\n",
                      "not UTF-8": b'[daemon]\nbench = "\xff"\n'}[kind])
    store = tmp_path / "work" / "s.sqlite"
    subprocess_check(["daemon", "--config", path, "--db", store, "--control",
                      "tcp://127.0.0.1:*"], tmp_path, 2, path)
    assert not store.exists()
