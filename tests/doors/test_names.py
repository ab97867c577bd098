"""Names are not paths: a campaign name, an agent id and a meter id made of ``../`` steps make
`hilbench report`, `hilbench serve` (one GET), `hilbench run --record` and `hilbench audit
export` write nothing outside their folders, not next to them and not in /tmp."""

from __future__ import annotations

import secrets
import threading
import urllib.request
from pathlib import Path

import pytest

from hilbench.cassette.bundle import check_bag
from hilbench.report.serve import make_server
from tests.campaign_toml import agent, campaign, qubo, write_campaign
from tests.doors.hostile import tree
from tests.report.qubo_store import write_qubo_store
from tests.subprocesses import hilbench, run_campaign

TMP = Path("/tmp")


def _names(token: str) -> dict[str, str]:
    """A few steps up (out of the output folder into the test's own) and many (to /)."""
    return {"campaign": f"t/../../../escape-campaign-{token}",
            "agent": "../" * 40 + f"tmp/escape-agent-{token}",
            "meter": f"../../escape-meter-{token}"}


@pytest.fixture
def work(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    folder = tmp_path / "a" / "b" / "work"
    folder.mkdir(parents=True)
    return folder, _names(secrets.token_hex(6))


def _written_outside(root: Path, before: set[Path], allowed: list[Path],
                     names: dict[str, str]) -> list[str]:
    """New files under ``root`` outside the ``allowed`` folders, and anything in /tmp named
    after the payloads."""
    token = names["campaign"].rsplit("-", 1)[1]
    found = [str(p) for p in tree(root) - before
             if not any(p == a or a in p.parents for a in allowed)]
    return found + [str(p) for p in TMP.glob(f"*{token}*")]


def _store(work: Path, names: dict[str, str]) -> tuple[Path, str]:
    db = work / "s.sqlite"
    uid = write_qubo_store(db, names["campaign"], agent=names["agent"], meter=names["meter"],
                           sizes=(10,), timeouts=(0.01,), solvers=("sa",), tts=False)
    return db, uid


def _store_files(db: Path) -> list[Path]:
    return [db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm"),
            db.with_name(db.name + ".logs"), db.with_name(db.name + "-journal")]


def _outside_after(command: str, folder: Path, names: dict[str, str], out: Path) -> list[str]:
    """`hilbench COMMAND UID --db S --out OUT` on a store holding ``names``: what it wrote
    outside OUT (and the store's own files)."""
    db, uid = _store(folder, names)
    root = folder.parents[2]
    before = tree(root)
    done = hilbench(*command.split(), uid, "--db", db, "--out", out, cwd=folder)
    assert done.returncode == 0, done.stderr
    return _written_outside(root, before, [out, *_store_files(db)], names)


@pytest.mark.slow  # a report (~3 s of matplotlib)
def test_report_writes_only_into_its_folder(work: tuple[Path, dict[str, str]]) -> None:
    folder, names = work
    out = folder / "report"
    assert _outside_after("report", folder, names, out) == []
    figures = sorted(p.name for p in (out / "figures").iterdir())
    assert any(n.startswith("workflow-t_.._.._.._escape-campaign") for n in figures), figures
    assert all(".." not in p.relative_to(out).parts for p in tree(out))


@pytest.mark.slow  # the served report (~3 s of matplotlib)
def test_a_get_makes_serve_write_only_into_its_report_folder(
        work: tuple[Path, dict[str, str]]) -> None:
    folder, names = work
    db, uid = _store(folder, names)
    root = folder.parents[2]
    reports = folder / "served"
    before = tree(root)
    server = make_server(db, "127.0.0.1", 0, report_dir=reports)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        with urllib.request.urlopen(f"{server.url()}campaign/{uid}/report/", timeout=120) as r:
            assert r.status == 200
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    assert any(reports.iterdir())  # the report was made, in its folder
    assert _written_outside(root, before, [reports, *_store_files(db)], names) == []


@pytest.mark.slow  # a real campaign with a spawned agent (~6 s)
def test_run_record_writes_only_into_its_cassette_and_the_stores_logs(
        work: tuple[Path, dict[str, str]]) -> None:
    folder, names = work
    path = write_campaign(folder, campaign(agent(names["agent"]), qubo(names["agent"]),
                                           name=names["campaign"]))
    root = folder.parents[2]
    before = tree(root)
    db, cassette = folder / "s.sqlite", folder / "cassette"
    done = run_campaign(path, db, "--record", str(cassette), timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _written_outside(root, before, [cassette, *_store_files(db)], names) == []
    channels = sorted(p.name for p in (cassette / "channels").iterdir())
    assert any(n.startswith("agent-.._.._") for n in channels), channels
    logs = sorted(p.name for p in db.with_name(db.name + ".logs").iterdir())
    assert any(n.startswith("t_.._.._.._escape-campaign") and n.endswith(".log")
               for n in logs), logs


def test_audit_export_writes_only_into_its_bundle(work: tuple[Path, dict[str, str]]) -> None:
    folder, names = work
    bundle = folder / "bundle"
    assert _outside_after("audit export", folder, names, bundle) == []
    streams = sorted(p.name for p in (bundle / "data" / "samples").iterdir())
    assert streams and all("-.._.._escape-meter-" in n for n in streams), streams
    assert check_bag(bundle) == []  # every file it wrote is in its manifest, hash and all
    info = (bundle / "bag-info.txt").read_text().splitlines()
    assert len(info) == 4  # the campaign's name is one line of it, whatever it holds


@pytest.mark.slow  # a report (~3 s of matplotlib)
def test_report_writes_through_no_link_planted_in_its_folder(
        work: tuple[Path, dict[str, str]]) -> None:
    """Another user who can write in a shared output folder plants report.html as a link to
    the owner's file: the report stops with one line naming it, the file is untouched."""
    folder, names = work
    victim = folder / "victim.txt"
    victim.write_text("keep")
    out = folder / "shared"
    out.mkdir()
    (out / "report.html").symlink_to(victim)
    db, uid = _store(folder, names)
    done = hilbench("report", uid, "--db", db, "--out", out, cwd=folder)
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "report.html" in last and "link" in last, last
    assert "Traceback" not in done.stderr and victim.read_text() == "keep"
