"""`hilbench run --record` writes the orchestrator's outside world into channels/: every agent
message after CurveZMQ with its arrays by sha256, every VISA call of the meter, the helpers
started and the clock readings; a recording killed with SIGKILL keeps its last second."""

from __future__ import annotations

import json
import signal
import subprocess
import time

import numpy as np
import pytest

from hilbench.cassette.arrays import get_array
from hilbench.cassette.channels import CHANNELS, CLOCK
from hilbench.cassette.reader import Cassette


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_agent_channel_holds_every_message_both_ways(recorded):
    _, _, folder = recorded
    lines = _lines(folder / CHANNELS / "agent-cpu0.jsonl")
    assert lines[0] == {"kind": "channel", "name": "agent-cpu0", "channel": "agent",
                        "agent": "cpu0", "address": lines[0]["address"]}
    messages = lines[1:]
    assert next(m["type"] for m in messages if m["dir"] == "out") == "hello"
    welcome = next(m for m in messages if m.get("type") == "welcome")
    assert welcome["dir"] == "in" and "qubo" in welcome["body"]["capabilities"]
    requests = [m for m in messages if m.get("type") == "request"]
    replies = {m["id"]: m for m in messages if m.get("type") == "reply"}
    runs = sum(1 for d in _lines(folder / "documents.jsonl") if d.get("kind") == "run_start")
    assert [r["cmd"] for r in requests].count("run") == runs >= 3  # three units in the fixture
    assert "noop" in [r["cmd"] for r in requests]  # the link's echoes, before each solve
    for request in requests:
        assert request["id"] in replies, request["cmd"]  # every request answered
    times = [m["t"] for m in messages]
    assert times == sorted(times)
    # A QUBO matrix goes out as a sha256 reference only: the orchestrator makes it again.
    load = next(r for r in requests if r["cmd"] == "load")
    (ref,) = load["arrays"]
    assert len(ref["shape"]) == 2 and ref["shape"][0] == ref["shape"][1] > 1
    assert not (folder / "arrays" / ref["sha256"]).exists()
    # A solved state comes back whole, in the array store, by its sha256.
    run_reply = replies[next(r for r in requests if r["cmd"] == "run")["id"]]
    (state,) = run_reply["arrays"]
    assert get_array(folder, state).shape == tuple(state["shape"]) == (ref["shape"][0],)
    text = (folder / CHANNELS / "agent-cpu0.jsonl").read_text()
    assert "secret" not in text and "key_fd" not in text


def test_visa_channel_holds_the_meters_dialogue_with_timing(recorded):
    _, _, folder = recorded
    (path,) = (folder / CHANNELS).glob("visa-*.jsonl")
    header, *calls = _lines(path)
    assert header["channel"] == "visa" and header["resource"].endswith("::SOCKET")
    assert calls[0]["op"] == "query" and calls[0]["args"] == ["*IDN?"]
    assert "34465A" in calls[0]["result"]
    ops = [(c["op"], c.get("args", [None])[0]) for c in calls]
    assert ("write", "INIT") in ops and ("write", "ABOR") in ops and calls[-1]["op"] == "close"
    reads = [c for c in calls if c["op"] == "query" and c["args"][0].startswith("R?")]
    assert reads and all(c["t0"] <= c["t1"] for c in calls if "t1" in c)
    assert any(isinstance(c["result"], str) and c["result"].startswith("#") for c in reads)


def test_clock_readings_and_helpers_are_recorded(recorded):
    _, _, folder = recorded
    readings = np.fromfile(folder / CHANNELS / CLOCK, dtype="<f8")
    assert len(readings) > 100 and np.all(np.diff(readings) >= 0)
    documents = list(Cassette(folder).documents())
    starts = [d["t"] for d in documents if d["kind"] == "phase_start"]
    assert set(starts) <= set(readings.tolist())  # each stamp is one of the readings
    lines = _lines(folder / CHANNELS / "spawned.jsonl")[1:]
    spawned = [s for s in lines if s["kind"] == "spawned"]
    assert [s["name"] for s in spawned] == ["agent cpu0 (driver cpu)"]
    # the orchestrator's reference echoes: measured on a thread the clock does not record, so
    # each bound is stored for the replay, one per timed phase, in order
    references = [s["link"] for s in lines if s["kind"] == "reference"]
    timed = [d for d in documents if d["kind"] == "phase_start"
             and any(o.get("link") for o in d["clock_offsets"].values())]
    assert references and len(references) == len(timed)
    assert all(r["source"] == "reference" and r["echoes"] >= 24 for r in references)


@pytest.mark.slow
def test_a_recording_killed_with_sigkill_keeps_its_last_second(tmp_path):
    from hilbench.sim import SimulatedMeter
    from hilbench.sim.power_model import SIMULATED_CPU
    from tests.campaign_toml import write_campaign
    from tests.orchestrator.test_instrument_faults import meter_campaign
    from tests.subprocesses import hilbench_command

    db, folder = tmp_path / "s.sqlite", tmp_path / "cassette"
    with SimulatedMeter(SIMULATED_CPU, noise_std_w=0.05, seed=3) as meter:
        path = write_campaign(tmp_path, meter_campaign(meter, seeds=range(40)))
        proc = subprocess.Popen(hilbench_command("run", path, "--db", db, "-q", "--record",
                                                 folder), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            agent = folder / CHANNELS / "agent-cpu0.jsonl"
            deadline = time.monotonic() + 120
            while not (agent.exists() and agent.read_text().count('"cmd": "run"') >= 2):
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
            time.sleep(1.0)
            killed = time.monotonic()
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait(30)
    readings = np.fromfile(folder / CHANNELS / CLOCK, dtype="<f8")
    assert readings[-1] > killed - 1.0
    messages = _lines(folder / CHANNELS / "agent-cpu0.jsonl")[1:]
    assert messages[-1]["t"] > killed - 1.0
    (visa,) = (folder / CHANNELS).glob("visa-*.jsonl")
    for line in visa.read_text().splitlines():  # every line whole
        json.loads(line)
