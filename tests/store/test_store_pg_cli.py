"""A campaign run by `hilbench run --db postgresql://…`, read back, resumed, never showing the
password given in the URL."""

from __future__ import annotations

import pytest

from tests.campaign_toml import agent, campaign, qubo
from tests.postgres import fresh_database
from tests.subprocesses import hilbench


@pytest.mark.slow
def test_a_campaign_on_postgresql_runs_reads_back_and_resumes(tmp_path):
    toml = tmp_path / "c.toml"
    toml.write_text(campaign(agent("cpu0"), qubo(seeds=[0, 1]), name="pg-cli"))
    with fresh_database("hb_test") as url:
        # A password in the URL (the local socket's peer authentication does not need it).
        secret = "s3cret-do-not-print"
        db = url.replace("postgresql://", f"postgresql://root:{secret}@", 1)
        first = hilbench("run", toml, "--db", db, "-q", cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        assert "new store postgresql://root:***@" in first.stdout
        assert (tmp_path / f"hilbench-{url.rsplit('/', 1)[1]}.logs" / "pg-cli.log").exists()
        listed = hilbench("results", "--db", db, "--all", "--format", "csv")
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.count("qubo.fixed_timeout") >= 2
        again = hilbench("run", toml, "--db", db, "-q", cwd=tmp_path)
        assert again.returncode == 0 and "already finished" in again.stdout + again.stderr
        for out in (first, listed, again):
            assert secret not in out.stdout + out.stderr


def test_page_reading_commands_refuse_a_postgresql_url_without_showing_its_password(tmp_path):
    url = "postgresql://lab:hunter2@db.lab/hilbench"
    for args in (["store", "check", "--db", url],
                 ["store", "salvage", url, "--out", str(tmp_path / "new.sqlite")]):
        out = hilbench(*args)
        assert out.returncode == 2
        assert "SQLite stores only" in out.stderr and "lab:***@db.lab" in out.stderr
        assert "hunter2" not in out.stdout + out.stderr
