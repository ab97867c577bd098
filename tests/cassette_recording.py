"""The ``cassette`` fixture: a test names a cassette and the campaign it is recorded from, and
gets the cassette folder, recorded or not according to the record mode (pytest-recording's and
VCR.py's modes, ``--record-mode``):

- ``none`` (the default under ``CI=true``): never record; a missing cassette fails the test;
- ``once`` (the default elsewhere): record when the cassette does not exist yet, else use it;
- ``rewrite``: record it again, replacing the old one.

Recording runs the campaign for real (``hilbench run --record``). Under ``CI=true`` a campaign
that would open a real instrument or talk to an agent off this host is refused before anything
starts: CI must never reach a lab."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported when used: every test session (vendor environments too) loads this
    from hilbench.orchestrator.campaign import Campaign

MODES = ("none", "once", "rewrite")
CASSETTES = Path(__file__).resolve().parent / "cassettes"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--record-mode", choices=MODES, default=None,
                     help="cassette fixture: none (never record; default under CI=true), once "
                          "(record missing cassettes; default elsewhere), rewrite (record all "
                          "used cassettes again)")


def under_ci() -> bool:
    return os.environ.get("CI") == "true"


class RecordingRefused(RuntimeError):
    """Recording this campaign here would reach outside the simulated, loopback bench."""


def off_bench(campaign: Campaign) -> list[str]:
    """What in ``campaign`` reaches a real device, instrument or another host: one line each."""
    from hilbench.wire.keys import is_loopback

    found = []
    for spec in campaign.instruments:
        if spec.simulate is None and spec.resource is not None:
            found.append(f"instrument {spec.id} opens the real instrument {spec.resource}")
    for agent in campaign.agents:
        if agent.address is not None and not is_loopback(agent.address):
            found.append(f"agent {agent.id} is at {agent.address}, not on loopback")
        if agent.connects and not (campaign.listen and is_loopback(campaign.listen)):
            found.append(f"agent {agent.id} dials in to {campaign.listen}, not on loopback")
        options = agent.options or {}
        if options.get("port") not in (None, "emulate"):
            found.append(f"agent {agent.id} opens the device at port {options['port']!r}")
        if options.get("backend") == "hardware":
            found.append(f"agent {agent.id} drives hardware (backend = \"hardware\")")
    return found


def slim(folder: Path) -> int:
    """Drop the stored arrays that only the orchestrator's own messages carry (the ASC audio
    and model it sends: generated from the fixture, and a replay compares what it sends by
    sha256 only, which the message lines keep); returns the bytes freed. Keeps the repository's
    cassettes at tens of KB."""
    import json

    needed: set[str] = set()
    for channel in (folder / "channels").glob("*.jsonl"):
        for line in channel.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if record.get("dir") == "out":
                continue
            needed.update(_hashes(record))
    freed = 0
    for blob in (folder / "arrays").glob("*"):
        if blob.name not in needed:
            freed += blob.stat().st_size
            blob.unlink()
    return freed


def _hashes(value: object) -> set[str]:
    """Every sha256 a channel line refers to."""
    if isinstance(value, dict):
        found = {str(v) for k, v in value.items() if k.endswith("sha256")}
        return found.union(*(_hashes(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_hashes(v) for v in value))
    return set()


def use_cassette(name: str, campaign_file: Path, mode: str, *, ci: bool,
                 root: Path = CASSETTES) -> Path:
    """The cassette ``root/name`` as ``mode`` wants it, recorded from ``campaign_file`` when
    the mode says so."""
    from hilbench.orchestrator.campaign import load_campaign
    from tests.subprocesses import run_campaign

    folder = root / name
    exists = (folder / "manifest.json").is_file()
    if mode == "none" or (mode == "once" and exists):
        if not exists:
            raise FileNotFoundError(f"cassette {folder} does not exist and the record mode is "
                                    "none: record it with --record-mode once")
        return folder
    if ci:
        problems = off_bench(load_campaign(campaign_file))
        if problems:
            raise RecordingRefused(f"not recording {campaign_file} under CI=true: "
                                   + "; ".join(problems))
    with tempfile.TemporaryDirectory(prefix="cassette-") as tmp:
        fresh = Path(tmp) / name
        done = run_campaign(campaign_file, Path(tmp) / "store.sqlite", "--record", str(fresh))
        if done.returncode != 0:
            raise RuntimeError(f"recording {campaign_file} failed (exit {done.returncode}): "
                               f"{done.stderr[-2000:]}")
        slim(fresh)
        shutil.rmtree(folder, ignore_errors=True)
        folder.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(fresh, folder)
    return folder


@pytest.fixture
def cassette(request: pytest.FixtureRequest) -> Callable[[str, Path], Path]:
    """``cassette(name, campaign_file)`` → the cassette folder tests/cassettes/NAME, recorded
    from ``campaign_file`` as ``--record-mode`` says."""
    mode = request.config.getoption("--record-mode") or ("none" if under_ci() else "once")

    def get(name: str, campaign_file: Path) -> Path:
        return use_cassette(name, campaign_file, mode, ci=under_ci())

    return get
