"""Campaigns refused before anything starts: files that are not text, and (below) campaigns
too large for the driver or the host. `hilbench run` and `campaign check` alike exit 2 and
name the file and what is wrong; no store is opened and no process started."""

from __future__ import annotations

from tests.campaign_toml import agent, campaign, qubo
from tests.subprocesses import hilbench


def test_a_file_that_is_not_utf8_is_refused_with_the_byte_offset(tmp_path):
    text = campaign(agent(), qubo(), name="t").encode()
    bad = text + b"# caf\xe9\n"  # Latin-1, as an old editor saves it
    offset = bad.index(b"\xe9")
    path = tmp_path / "latin1.toml"
    path.write_bytes(bad)
    db = tmp_path / "never.sqlite"
    for args in (("run", path, "--db", db), ("campaign", "check", path)):
        proc = hilbench(*args)
        assert proc.returncode == 2, proc.stderr
        assert f"error: {path} is not UTF-8 text (TOML must be): byte {offset} (0xe9)" \
            in proc.stderr
        assert "Traceback" not in proc.stderr
    assert not db.exists()
