"""Stop signals become Interrupted, except inside the steps that must not be cut in two."""

import os
import signal
import time

import pytest

from hilbench.orchestrator.interrupt import (
    Interrupted,
    deferred_interrupts,
    interrupt_taken,
    raise_if_interrupted,
    signals_interrupt,
)


def test_a_signal_raises_interrupted_at_once():
    with pytest.raises(Interrupted) as caught, signals_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler runs at once and cuts this short
        pytest.fail("the handler did not raise")
    assert caught.value.exit_code == 143


def test_a_signal_inside_a_deferred_block_waits_for_the_next_checkpoint():
    steps = []
    with pytest.raises(Interrupted) as caught, signals_interrupt():
        with deferred_interrupts():
            os.kill(os.getpid(), signal.SIGINT)
            steps.append("rest of the document written")
        steps.append("after the block, before the checkpoint")
        raise_if_interrupted()
        steps.append("after the checkpoint")
    assert caught.value.exit_code == 130
    assert steps == ["rest of the document written", "after the block, before the checkpoint"]


def test_a_deferred_signal_is_not_lost_when_no_checkpoint_follows():
    with pytest.raises(Interrupted), signals_interrupt(), deferred_interrupts():
        os.kill(os.getpid(), signal.SIGINT)


def test_a_signal_made_the_outcome_is_not_raised_again_at_the_end_of_the_block():
    """`hilbench run` and the daemon's worker catch Interrupted and make it the campaign's
    outcome; the block's end must not raise it a second time (that lost the worker's report)."""
    with signals_interrupt():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except Interrupted:
            interrupt_taken()
    # the next block starts afresh: a signal whose exception is lost is raised at its end
    with pytest.raises(Interrupted), signals_interrupt(), deferred_interrupts():
        os.kill(os.getpid(), signal.SIGINT)
