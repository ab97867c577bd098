"""A stop signal while the cassette recorder takes a document waits until the document is
recorded whole: the stream of a phase that just stopped is sealed (its hashes written), not
taken off the open streams half-way and left without them, as in CI-97, where the daemon's
SIGKILL sent its worker a SIGTERM while that stream was being hashed."""

from __future__ import annotations

import json
import os
import signal
import time

import numpy as np
import pytest

from hilbench.cassette import arrays
from hilbench.cassette.reader import Cassette
from hilbench.cassette.recorder import SAMPLES, CassetteRecorder
from hilbench.documents import PhaseStart, PhaseStop, Samples
from hilbench.orchestrator.interrupt import Interrupted, raise_if_interrupted, signals_interrupt


def test_a_stop_signal_while_a_stream_is_sealed_leaves_it_sealed(tmp_path, monkeypatch):
    folder = tmp_path / "cassette"
    recorder = CassetteRecorder(folder)
    real_close = arrays.StreamWriter.close
    landed: list[bool] = []

    def close_as_a_signal_arrives(self: arrays.StreamWriter) -> dict[str, str]:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the handler runs here, in the middle of the seal
        landed.append(True)
        return real_close(self)

    monkeypatch.setattr(arrays.StreamWriter, "close", close_as_a_signal_arrives)
    t = 100.0 + np.arange(50) * 1e-3
    with pytest.raises(Interrupted), signals_interrupt():
        recorder(PhaseStart("phase", "run", "solve", 100.0, {}))
        recorder(Samples("run", "phase", "dmm", "A", t, np.full(50, 0.25),
                         {"instrument": "synthetic", "supply_voltage_v": 12.0}))
        recorder(PhaseStop("phase", "run", 100.05, "success"))
        assert landed == [True]  # the seal ran through the signal
        raise_if_interrupted()  # the orchestrator's next checkpoint stops it
    monkeypatch.setattr(arrays.StreamWriter, "close", real_close)
    recorder.close()
    ends = [json.loads(line) for line in (folder / SAMPLES).read_text().splitlines()
            if json.loads(line)["kind"] == "stream_end"]
    assert [e["stream"] for e in ends] == ["000001-dmm"]
    (stream,) = Cassette(folder).streams()
    assert stream.sha256 is not None
