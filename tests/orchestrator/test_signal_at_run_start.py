"""A stop signal taken as a campaign or a run begins never leaves either without a status,
nor the store open: the run is closed "abort" like one stopped later (README's exit-code
table), and a campaign stopped as its store is made closes the store before anything began."""

from __future__ import annotations

import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from hilbench.orchestrator import runner as runner_module
from hilbench.orchestrator.campaign import load_campaign
from hilbench.orchestrator.interrupt import Interrupted
from hilbench.orchestrator.runner import CampaignRunner
from hilbench.store import Store
from tests.campaign_toml import agent, campaign, qubo, write_campaign


def _signal_as_a_deferral_ends(monkeypatch: pytest.MonkeyPatch, where: str,
                               signum: signal.Signals) -> list[bool]:
    """The runner's deferrals, where the first one ended in function ``where`` is followed by
    a stop signal: its handler runs as the deferral ends, in contextlib's exit, before any
    line after the ``with``. Once; the other deferrals are left alone. Returns the list that
    says whether it was taken."""
    real = runner_module.deferred_interrupts
    taken: list[bool] = []

    @contextmanager
    def deferral_ending_in_a_signal() -> Iterator[None]:
        with real():
            yield
        # this generator, contextlib's __exit__, then the block's own frame
        if sys._getframe(2).f_code.co_name == where and not taken:
            taken.append(True)
            raise Interrupted(signum)

    monkeypatch.setattr(runner_module, "deferred_interrupts", deferral_ending_in_a_signal)
    return taken


@pytest.mark.slow
def test_a_signal_as_the_start_deferral_ends_closes_the_run_abort(tmp_path, monkeypatch):
    _signal_as_a_deferral_ends(monkeypatch, "_attempt", signal.SIGINT)  # the first run's start
    path = write_campaign(tmp_path, campaign(agent(), qubo(seeds=[0, 1]), name="start-signal"))
    db = tmp_path / "s.sqlite"
    with pytest.raises(Interrupted):
        CampaignRunner(load_campaign(path), db).run()
    with Store(db) as store:
        runs = store.runs()
        assert [r["status"] for r in runs] == ["abort"], runs  # closed, not "incomplete"
        assert "interrupted by SIGINT" in runs[0]["reason"]
        assert [c["status"] for c in store.campaigns()] == ["abort"]


def test_a_signal_as_the_store_deferral_ends_still_closes_the_store(tmp_path, monkeypatch):
    """The campaign's first deferral (the store being created): a signal taken as it ends
    stops the campaign before it began, and the store's writer is closed, not left open until
    the process exits."""
    taken = _signal_as_a_deferral_ends(monkeypatch, "_run_locked", signal.SIGTERM)
    closed: list[bool] = []

    class RecordingWriter(runner_module.StoreWriter):
        def close(self) -> None:
            closed.append(True)
            super().close()

    monkeypatch.setattr(runner_module, "StoreWriter", RecordingWriter)
    path = write_campaign(tmp_path, campaign(agent(), qubo(seeds=[0]), name="store-signal"))
    db = tmp_path / "s.sqlite"
    with pytest.raises(Interrupted):
        CampaignRunner(load_campaign(path), db).run()
    assert taken and closed == [True]
    with Store(db) as store:
        assert store.campaigns() == [] and store.runs() == []  # nothing began: nothing half
