"""`hilbench run --record` on a campaign the store has finished already: nothing runs, so no
cassette is left behind to block the next --record into that folder."""

from __future__ import annotations

import pytest

from hilbench.cassette.manifest import MANIFEST
from tests.campaign_toml import agent, campaign, qubo, write_campaign
from tests.subprocesses import run_campaign

pytestmark = pytest.mark.slow


def test_record_on_a_finished_campaign_leaves_no_stub_and_the_next_record_works(tmp_path):
    path = write_campaign(tmp_path, campaign(agent(), qubo(), name="done"))
    db = tmp_path / "s.sqlite"
    first = run_campaign(path, db)
    assert first.returncode == 0, first.stderr
    cassette = tmp_path / "cassette"
    nothing = run_campaign(path, db, "--record", str(cassette))
    assert nothing.returncode == 0, nothing.stderr
    assert f"--record {cassette}: no run was recorded, so no cassette was left there" in (
        nothing.stderr)
    assert not cassette.exists()
    empty = tmp_path / "empty"
    empty.mkdir()  # a folder the user made stays, empty, as it was
    assert run_campaign(path, db, "--record", str(empty)).returncode == 0
    assert empty.is_dir() and list(empty.iterdir()) == []

    again = run_campaign(path, db, "--again", "--record", str(cassette))
    assert again.returncode == 0, again.stderr
    assert (cassette / MANIFEST).is_file() and (cassette / "documents.jsonl").stat().st_size > 0
