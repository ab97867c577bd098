"""The results page an operator keeps open: the daemon's status as a page, a failed campaign's
reasons, a page per run with its power trace, and the live power plot; each fetched over real
HTTP and rendered in headless Chromium (no script runs: the CSP allows none)."""

from __future__ import annotations

import html
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from hilbench.report.figures.trace import Trace
from hilbench.report.serve import DaemonStatus
from hilbench.report.serve_trace import LIVE_WINDOW_S, last_seconds
from tests.report.page_check import browse
from tests.report.serve_store import (
    CAMPAIGN_REASON,
    FAIL_REASON,
    UNVERIFIED_REASON,
    PagesStore,
    write_pages_store,
)
from tests.report.test_serve import Served, get, serving

pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")

NEXT_FIRE = 1_800_000_000.0  # 2027-01-15 08:00:00 UTC


def daemon_status(pages: PagesStore) -> dict[str, object]:
    """What `hilbench status --json` prints while the daemon runs the running campaign."""
    return {
        "daemon": {"state": "running", "detail": "", "pid": 4242, "host": "benchhost"},
        "current": {"item": 7, "name": "qubo-test running", "campaign_uid": pages.running,
                    "started_at": time.time() - 60, "unit": "qubo/fixed_timeout/n=10/seed=2",
                    "done": 3, "total": 30, "failed": 1, "unverified": 0,
                    "last_unit": {"key": "qubo/fixed_timeout/n=10/seed=1", "status": "fail",
                                  "run_uid": pages.failed_run, "duration_s": 3.0},
                    "eta_s": 754.0, "eta_basis": "27 unit(s) from this campaign's own slots"},
        "agents": [{"id": "cpu0", "driver": "cpu", "host": "agenthost",
                    "address": "tcp://127.0.0.1:5555", "last_heard_s_ago": 0.4,
                    "clock_offset_s": 0.00012, "clock_offset_uncertainty_s": 0.00003}],
        "instruments": [{"id": "dmm", "identity": "Keysight 34465A (simulated)",
                         "resource": "TCPIP::127.0.0.1::5025::SOCKET",
                         "last_reading": time.time() - 1}],
        "last_error": "item 6 failed: agent cpu0 stopped answering",
        "queue": {"length": 2, "head": [{"id": 8, "name": "asc-nightly", "state": "queued"}]},
        "schedules": [{"id": 1, "name": "nightly", "cron": "0 2 * * *", "tz": "Europe/Berlin",
                       "next": [NEXT_FIRE]}],
    }


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> PagesStore:
    return write_pages_store(tmp_path_factory.mktemp("pages") / "s.sqlite")


@pytest.fixture
def served(pages: PagesStore, tmp_path: Path) -> Iterator[Served]:
    printed = json.dumps(daemon_status(pages))
    status = DaemonStatus(pages.path, [sys.executable, "-c", f"print({printed!r})"])
    with serving(pages.path, tmp_path / "reports", status=status) as server:
        yield server


def url(server: Served, path: str) -> str:
    return f"http://{server.host}:{server.port}/{server.token}{path}"


def rendered(server: Served, path: str) -> str:
    """The page's DOM after Chromium loaded it; nothing tried to run."""
    # within one refresh period: the DOM of the page as loaded, not of its next reload
    dom, console = browse(url(server, path), "--virtual-time-budget=3000")
    assert console == [], console
    assert "<script" not in dom
    return dom


def text_of(dom: str, section: str) -> str:
    """The text of the element with ``id=section`` (tags dropped, spaces collapsed)."""
    match = re.search(rf'<(\w+)[^>]* id="{section}"[^>]*>(.*?)</\1>', dom, re.S)
    assert match, f"no section {section}"
    return html.unescape(" ".join(re.sub(r"<[^>]+>", " ", match.group(2)).split()))


@pytest.mark.slow  # headless Chromium
def test_the_status_page_shows_campaign_unit_eta_agents_instruments_and_last_error(
        served: Served, pages: PagesStore) -> None:
    dom = rendered(served, "/status")
    current = text_of(dom, "current-campaign")
    assert "qubo-test running" in current and "qubo/fixed_timeout/n=10/seed=2" in current
    assert "3 of 30 unit(s), 1 failed" in current
    assert "13 min" in current  # 754 s, as hilbench.orchestrator.eta words it
    assert "27 unit(s) from this campaign's own slots" in current
    assert f"run {pages.running_run[:8]}" in current  # the run going on now, from the store
    agents = text_of(dom, "agents")
    assert "cpu0" in agents and "agenthost" in agents and "+0.120 ± 0.030 ms" in agents
    instruments = text_of(dom, "instruments")
    assert "Keysight 34465A (simulated)" in instruments and "s ago" in instruments
    assert "item 6 failed: agent cpu0 stopped answering" in text_of(dom, "last-error")
    assert "asc-nightly" in text_of(dom, "queue")
    assert "0 2 * * * (Europe/Berlin)" in text_of(dom, "schedules")
    assert 'http-equiv="refresh"' in dom  # the daemon runs: the page keeps itself current


@pytest.mark.slow  # headless Chromium
def test_a_failed_campaign_page_gives_its_reason_and_each_run_s(served: Served,
                                                               pages: PagesStore) -> None:
    dom = rendered(served, f"/campaign/{pages.failed}")
    assert CAMPAIGN_REASON in text_of(dom, "campaign-reason")
    problems = text_of(dom, "problem-runs")
    assert FAIL_REASON in problems and UNVERIFIED_REASON in problems
    assert pages.failed_run[:8] in problems and pages.unverified_run[:8] in problems
    assert f'href="/{served.token}/run/{pages.failed_run}"' in dom
    index = get(served, "/")[2].decode()
    assert f"fail: {CAMPAIGN_REASON}" in index  # the list of campaigns gives it too
    finished = get(served, f"/campaign/{pages.qubo}")[2].decode()
    assert 'id="campaign-reason"' not in finished and 'id="problem-runs"' not in finished


@pytest.mark.slow  # headless Chromium and a trace figure
def test_a_run_page_shows_phases_events_figures_and_its_power_trace(
        served: Served, pages: PagesStore) -> None:
    dom = rendered(served, f"/run/{pages.failed_run[:8]}")
    assert FAIL_REASON in text_of(dom, "run-reason")
    phases = text_of(dom, "phases")
    assert "solve" in phases and "fail" in phases and "0.0010 s" in phases
    figures = text_of(dom, "figures")
    assert "avg_power_w" in figures and "21.5" in figures and "± 0.05" in figures
    assert "source: dmm" in figures and "the run failed" in figures
    events = text_of(dom, "events")
    assert "agent_log" in events and "solution_check" in events
    # long data folded: the summary shows its start, the whole is inside <details>
    assert '<details><summary>{"trace": ["line 0' in html.unescape(dom)
    assert "line 39 of the agent" in events
    src = f"/{served.token}/run/{pages.failed_run}/power.svg"
    assert f'src="{src}"' in dom
    status, headers, body = get(served, src[len(served.token) + 1:])
    assert status == 200 and headers["Content-Type"] == "image/svg+xml"
    assert body.startswith(b"<?xml") and b"dmm: mean (3000 readings)" in body


@pytest.mark.slow  # headless Chromium and a trace figure
def test_the_live_plot_shows_the_running_run_and_refreshes_without_script(
        served: Served, pages: PagesStore) -> None:
    dom = rendered(served, "/live")
    assert f"run {pages.running_run[:8]}" in text_of(dom, "live-run")
    assert re.search(r'<meta http-equiv="refresh" content="\d+">', dom)
    src = f"/run/{pages.running_run}/power-live.svg"
    assert f'src="/{served.token}{src}"' in dom
    status, headers, body = get(served, src)
    assert status == 200 and headers["Content-Type"] == "image/svg+xml"
    assert b"readings)" in body
    run_page = get(served, f"/run/{pages.running_run}")[2].decode()
    assert "still running" in run_page and 'http-equiv="refresh"' in run_page


def test_the_live_window_keeps_only_the_last_seconds() -> None:
    t = np.arange(0.0, 200.0, 0.5)
    trace = Trace("r", "k", 0.0, {"dmm": (t, np.ones_like(t))},
                  [("idle", 0.0, 100.0), ("active", 100.0, 199.5)])
    cut = last_seconds(trace, LIVE_WINDOW_S)
    kept = cut.sources["dmm"][0]
    assert kept[0] >= 199.5 - LIVE_WINDOW_S and kept[-1] == 199.5
    assert len(kept) == int(LIVE_WINDOW_S / 0.5) + 1
    assert cut.windows == [("active", 199.5 - LIVE_WINDOW_S, 199.5)]


def test_without_a_running_run_the_live_page_says_so(tmp_path: Path) -> None:
    from tests.report.qubo_store import write_qubo_store

    db = tmp_path / "s.sqlite"
    write_qubo_store(db, sizes=(10,), timeouts=(0.01,), solvers=("sa",), tts=False)
    failing = DaemonStatus(db, [sys.executable, "-c", "import sys; sys.exit(3)"])
    with serving(db, tmp_path / "r", status=failing) as server:
        page = get(server, "/live")[2].decode()
        assert "No run is going on in this store now." in page and "<img" not in page
        assert "Daemon status: not available" in get(server, "/status")[2].decode()


@pytest.fixture
def kolkata() -> Iterator[None]:
    """The server's timezone set to India's (UTC+05:30, no daylight saving), then restored."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Kolkata"
    time.tzset()
    try:
        yield
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


def test_times_are_in_the_server_s_timezone_with_the_zone_named(
        kolkata: None, served: Served, pages: PagesStore) -> None:
    page = get(served, "/status")[2].decode()
    assert "2027-01-15 13:30:00 IST (UTC+0530)" in page  # the schedule's next fire
    assert "server's timezone, IST (UTC+0530)." in page
    campaign = get(served, f"/campaign/{pages.qubo}")[2].decode()
    assert "IST (UTC+0530)" in campaign and " UTC<" not in campaign


def test_the_live_plot_follows_a_run_as_its_writer_stores_readings(tmp_path: Path) -> None:
    """A run still being written (a real StoreWriter, committing as a campaign does): the
    live trace is drawn again once the store holds more readings, and only the last
    LIVE_WINDOW_S seconds of them."""
    from hilbench import __version__
    from hilbench.documents import PhaseStart, RunStart, Samples, new_uid
    from hilbench.store import StoreWriter
    from tests.report.qubo_store import SIMULATION, agents, write_qubo_store

    db = tmp_path / "s.sqlite"
    write_qubo_store(db, sizes=(10,), timeouts=(0.01,), solvers=("sa",), tts=False)
    campaign, run, phase = new_uid(), new_uid(), new_uid()
    failing = DaemonStatus(db, [sys.executable, "-c", "import sys; sys.exit(3)"])
    with StoreWriter(db) as writer, serving(db, tmp_path / "r", status=failing) as server:
        writer.begin_campaign(campaign, "live", {"name": "live"})
        writer(RunStart(run, campaign, "k/rep=0", "qubo.fixed_timeout", {}, agents(), 0.0,
                        time.time(), __version__, True, SIMULATION))
        writer(PhaseStart(phase, run, "solve", 0.0, {}))
        seen = []
        for second in range(0, 90, 30):  # three batches of 30 s at 10 readings a second
            t = second + np.arange(300) / 10
            writer(Samples(run, phase, "dmm", "W", t, np.full(300, 5.0 + second), {}))
            writer.flush()
            assert f"run {run[:8]}" in get(server, "/live")[2].decode()
            status, _, body = get(server, f"/run/{run}/power-live.svg")
            assert status == 200
            found = re.search(rb"dmm: mean \((\d+) readings\)|dmm \((\d+) readings\)", body)
            assert found, body[:200]
            seen.append(int(found.group(1) or found.group(2)))
        writer.end_campaign(campaign, "abort", "test over")
    # 300, 600, then not 900 but the last 60 s at 10 a second: 600, the reading exactly on
    # the window's edge in or out as the last digit of its time falls
    assert seen[0] == 300 and seen[1] == 600 and abs(seen[2] - 600) <= 1
