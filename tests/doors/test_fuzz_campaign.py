"""Campaign files, generated broken (issue 31): `campaign check` and `queue add` exit 0 or 2,
every error line names the file, no traceback, nothing written outside the working folder;
`run`, `campaign check` and `queue add` on a 5 000-deep file, as a user runs them, say it in
one line."""

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
from tests.doors.inputs import EXAMPLES as EXAMPLE_FILES

BASES = {name: (EXAMPLE_FILES / name).read_bytes()
         for name in ("qubo-cpu.toml", "asc-cpu.toml", "qubo-largest.toml")}


@fuzz_settings()
@given(data=st.data())
def test_a_generated_campaign_file_is_checked_or_refused_in_lines_naming_it(tmp_path_factory,
                                                                            data):
    with example_folder(tmp_path_factory) as (work, _):
        base = BASES[data.draw(st.sampled_from(sorted(BASES)))]
        path = work / "campaign.toml"
        path.write_bytes(data.draw(toml_file(base)))
        check(invoke(["campaign", "check", path], work), {0, 2}, path)


@fuzz_settings(share=0.2)
@given(data=st.data())
def test_a_generated_campaign_file_is_queued_or_refused_in_lines_naming_it(tmp_path_factory,
                                                                           data):
    with example_folder(tmp_path_factory) as (work, _):
        path = work / "campaign.toml"
        path.write_bytes(data.draw(toml_file(BASES["qubo-cpu.toml"])))
        check(invoke(["queue", "add", path, "--db", work / "q.sqlite"], work), {0, 2}, path)


DEEP = {"arrays": "a = " + "[" * 5000 + "]" * 5000,
        "inline tables": "a = " + "{b = " * 5000 + "1" + "}" * 5000,
        "table headers": "[" + ".".join(["t"] * 5000) + "]"}


@pytest.mark.parametrize("command", [["run"], ["campaign", "check"], ["queue", "add"]])
@pytest.mark.parametrize("kind", sorted(DEEP))
def test_a_5000_deep_campaign_is_one_line_as_a_user_runs_it(tmp_path, command, kind):
    path = tmp_path / "deep.toml"
    path.write_text((EXAMPLE_FILES / "qubo-cpu.toml").read_text() + "\n" + DEEP[kind] + "\n")
    extra = [] if command == ["campaign", "check"] else ["--db", tmp_path / "work" / "s.sqlite"]
    line = subprocess_check([*command, path, *extra], tmp_path, 2, path)
    assert line.endswith("nested deeper than 64 levels")

