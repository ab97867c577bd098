"""Markup in a campaign name, an agent id, a host, a meter id and every field of the system
file reaches no page as markup: `hilbench report`'s files and every `hilbench serve` page hold
it only escaped, and headless Chromium runs none of it (the pages' titles stay, no element gets
the payloads' mark, no Content-Security-Policy refusal is even needed)."""

from __future__ import annotations

import json
import re
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hilbench.cli import cli
from hilbench.report.serve import DaemonStatus, make_server
from tests.doors.hostile import (
    COMMENT,
    FRAME,
    IMG,
    LINK,
    MD_LINK,
    PAYLOADS,
    SCRIPT,
    SVG,
    hostile_texts,
    inert_problems,
    markdown_html,
    raw_in,
    system_keys,
    system_toml,
)
from tests.report.page_check import browse, open_page
from tests.report.qubo_store import write_qubo_store
from tests.report.serve_store import PagesStore, write_pages_store

pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")

CAMPAIGN = f"{SCRIPT}{IMG}campaign"
AGENT = f"{SVG}agent"
HOST = f"{FRAME}host"
METER = f"{COMMENT}dmm"
SYSTEM = {key: f"{PAYLOADS[i % len(PAYLOADS)]} {key}" for i, key in enumerate(system_keys())}
SYSTEM["url"] = LINK
SYSTEM["name"] = f"{SCRIPT}{MD_LINK} system"
NAMES = [CAMPAIGN, AGENT, HOST, METER, *SYSTEM.values()]
SMALL = {"sizes": (10,), "timeouts": (0.01,), "solvers": ("sa",), "tts": False}


def _report(db: Path, uid: str, system: Path, out: Path) -> None:
    result = CliRunner().invoke(cli, ["report", uid, "--db", str(db), "--system", str(system),
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """A store and a system file with markup everywhere, and the report made of them."""
    tmp = tmp_path_factory.mktemp("hostile")
    db, system, out = tmp / "s.sqlite", tmp / "system.toml", tmp / "report"
    uid = write_qubo_store(db, CAMPAIGN, agent=AGENT, host=HOST, meter=METER,
                           sizes=(10,), timeouts=(0.01, 0.1), solvers=("sa",))
    system.write_text(system_toml(SYSTEM))
    _report(db, uid, system, out)
    return db, uid, out


def _files_problems(out: Path, names: list[str]) -> list[str]:
    """Raw input or live markup in the report's HTML, its Markdown as a renderer shows it, and
    its SVG figures (served as images by `hilbench serve`)."""
    page = (out / "report.html").read_text()
    md = (out / "report.md").read_text()
    problems = [f"report.html holds {s!r}" for s in raw_in(page, names)]
    problems += [f"report.html: {p}" for p in inert_problems(page)]
    problems += [f"report.md: {p}" for p in inert_problems(markdown_html(md))]
    for svg in sorted((out / "figures").glob("*.svg")):
        text = svg.read_text()
        problems += [f"{svg.name} holds {s!r}" for s in raw_in(text, names, "<")]
        problems += [f"{svg.name}: {p}" for p in inert_problems(text, None)]
    return problems


@pytest.mark.slow  # the module's store and report
def test_the_report_files_hold_every_name_escaped(hostile: tuple[Path, str, Path]) -> None:
    _, _, out = hostile
    assert _files_problems(out, NAMES) == []
    page = (out / "report.html").read_text()
    assert "&lt;script&gt;" in page  # the names are there, as text
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', page)
    assert csp and "script-src 'none'" in _unescape(csp.group(1))


@pytest.mark.slow  # headless Chromium
def test_no_script_of_theirs_runs_in_the_report(hostile: tuple[Path, str, Path]) -> None:
    _, _, out = hostile
    loaded = open_page(out / "report.html")
    assert loaded.title == f"NeuroBench system-track report: {SYSTEM['name']}"
    assert inert_problems(loaded.dom) == []
    assert loaded.console == []  # nothing even tried to run
    assert loaded.images_total >= 3 and loaded.images_loaded == loaded.images_total


@contextmanager
def _serving(db: Path, reports: Path) -> Iterator[str]:
    server = make_server(db, "127.0.0.1", 0, report_dir=reports)
    # shutdown() waits for the loop's next poll: 0.5 s by default, per example
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    try:
        yield server.url()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _fetch(url: str) -> str:
    from urllib.request import urlopen

    with urlopen(url, timeout=120) as response:
        return response.read().decode()


@pytest.mark.slow  # headless Chromium, and the served report
def test_no_script_of_theirs_runs_in_any_served_page(hostile: tuple[Path, str, Path],
                                                      tmp_path: Path) -> None:
    db, uid, _ = hostile
    with _serving(db, tmp_path / "reports") as url:
        pages = {"hilbench results": url, f"hilbench: {CAMPAIGN}": f"{url}campaign/{uid}",
                 f"NeuroBench system-track report: {CAMPAIGN}":
                     f"{url}campaign/{uid}/report/"}
        for title, address in pages.items():
            body = _fetch(address)
            assert raw_in(body, NAMES) == [] and inert_problems(body) == [], address
            dom, console = browse(address)
            shown = re.search(r"<title>(.*?)</title>", dom, re.S)
            assert shown and _unescape(shown.group(1)) == title, address
            assert inert_problems(dom) == [] and console == [], (address, console)


def _unescape(text: str) -> str:
    import html

    return html.unescape(text)


@pytest.mark.slow  # a report per example (~2-5 s each)
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.fixed_dictionaries({key: hostile_texts() for key in
                              ["campaign", "agent", "host", "meter", *system_keys()]}))
def test_generated_markup_in_every_name_and_field_reaches_no_page_raw(generated: dict[str, str]
                                                                     ) -> None:
    # Each value led by its key: one value's escaped form (``&lt;b&gt;``) can never be
    # another value as it is (a generated ``&lt;b&gt;`` would look raw without it).
    texts = {key: f"{key}={text}" for key, text in generated.items()}
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        db, system = tmp / "s.sqlite", tmp / "system.toml"
        uid = write_qubo_store(db, texts["campaign"], agent=texts["agent"], host=texts["host"],
                               meter=texts["meter"], **SMALL)  # type: ignore[arg-type]
        system.write_text(system_toml(texts))
        _report(db, uid, system, tmp / "report")
        names = list(texts.values())
        assert _files_problems(tmp / "report", names) == []
        with _serving(db, tmp / "served") as url:
            for address in (url, f"{url}campaign/{uid}"):
                body = _fetch(address)
                assert raw_in(body, names) == [] and inert_problems(body) == [], address


def _hostile_status(pages: PagesStore) -> dict[str, object]:
    """`hilbench status --json` as a daemon with markup in every name would print it."""
    return {
        "daemon": {"state": f"running{IMG}", "detail": COMMENT, "pid": SCRIPT, "host": HOST},
        "current": {"item": SVG, "name": CAMPAIGN, "campaign_uid": pages.running,
                    "started_at": 0.0, "unit": FRAME, "done": 1, "total": 2, "failed": IMG,
                    "unverified": SVG, "eta_s": 12.0, "eta_basis": SCRIPT,
                    "last_unit": {"key": COMMENT, "status": IMG, "run_uid": LINK}},
        "agents": [{"id": AGENT, "driver": SCRIPT, "host": HOST, "address": LINK,
                    "last_heard_s_ago": 1.0, "clock_offset_s": None}],
        "instruments": [{"id": METER, "identity": IMG, "resource": FRAME,
                         "last_reading": SCRIPT}],
        "last_error": f"{SCRIPT} failed",
        "queue": {"length": SVG, "head": [{"id": IMG, "name": CAMPAIGN, "state": COMMENT}]},
        "schedules": [{"id": SCRIPT, "name": IMG, "cron": FRAME, "tz": SVG,
                       "next": [1.8e9, SCRIPT]}],
    }


@pytest.mark.slow  # headless Chromium on six pages and two trace figures
def test_no_script_of_theirs_runs_in_the_status_run_and_live_pages(tmp_path: Path) -> None:
    """The results pages an operator keeps open: the daemon's status, a failed campaign with
    a hostile reason, a finished and a running run, the live plot and the trace figures."""
    reason = f"{SCRIPT}{SVG} agent died"
    pages = write_pages_store(tmp_path / "s.sqlite", CAMPAIGN, agent=AGENT, host=HOST,
                              meter=METER, reason=reason)
    names = [*NAMES, reason]
    printed = json.dumps(_hostile_status(pages))
    status = DaemonStatus(pages.path, [sys.executable, "-c", f"print({printed!r})"])
    server = make_server(pages.path, "127.0.0.1", 0, report_dir=tmp_path / "r", status=status)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = server.url()
    try:
        visits = {"hilbench: daemon status": "status", "hilbench: live power": "live",
                  f"hilbench: {CAMPAIGN} failed": f"campaign/{pages.failed}",
                  f"hilbench: run {pages.failed_run[:8]}": f"run/{pages.failed_run}",
                  f"hilbench: run {pages.running_run[:8]}": f"run/{pages.running_run}",
                  "hilbench results": ""}
        for title, path in visits.items():
            body = _fetch(url + path)
            assert raw_in(body, names) == [] and inert_problems(body) == [], path
            dom, console = browse(url + path, "--virtual-time-budget=3000")
            shown = re.search(r"<title>(.*?)</title>", dom, re.S)
            assert shown and _unescape(shown.group(1)) == title, path
            assert inert_problems(dom) == [] and console == [], (path, console)
        assert "&lt;script&gt;" in _fetch(url + "status")  # the values are there, as text
        for path in (f"run/{pages.failed_run}/power.svg",
                     f"run/{pages.running_run}/power-live.svg"):
            svg = _fetch(url + path)
            assert raw_in(svg, names, "<") == [] and inert_problems(svg, None) == [], path
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
