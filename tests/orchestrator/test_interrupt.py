"""Stop signals become Interrupted, except inside the steps that must not be cut in two."""

import os
import signal
import time

import pytest

from hilbench.orchestrator.interrupt import (
    Interrupted,
    deferred_interrupts,
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
