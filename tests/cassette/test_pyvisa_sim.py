"""`hilbench cassette export-pyvisa-sim`: a recorded instrument dialogue's stateless part as a
pyvisa-sim YAML that pyvisa-sim opens and answers as the instrument did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.subprocesses import hilbench

IDN = "Keysight Technologies,34465A,MY00000001,A.03.02-03.15-03.02-00.52-05-02"
RESOURCE = "TCPIP::127.0.0.1::5025::SOCKET"


def _write_channel(folder, calls):
    """A VISA channel as the recorder writes it (protocols/cassette.md)."""
    (folder / "channels").mkdir(parents=True)
    lines = [{"kind": "channel", "channel": "visa", "resource": RESOURCE,
              "options": {"read_termination": "\n", "write_termination": "\n"}}]
    t = 100.0
    for op, args, result in calls:
        t += 0.001
        line = {"op": op, "args": args, "t0": t, "t1": t + 0.0005}
        if isinstance(result, Exception):
            line.update(error=type(result).__name__, message=str(result), error_code=-1073807339)
        else:
            line["result"] = result
        lines.append(line)
    lines.append({"op": "close", "t0": t + 1})
    (folder / "channels" / "visa-TCPIP__127.0.0.1__5025__SOCKET.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in lines))


def test_the_export_answers_identity_and_settings_as_recorded_and_leaves_readings_out(tmp_path):
    pyvisa = pytest.importorskip("pyvisa")
    pytest.importorskip("pyvisa_sim")
    cassette = tmp_path / "cassette"
    _write_channel(cassette, [
        ("query", ["*IDN?"], IDN),
        ("write", ["*RST"], 5),
        ("write", ["*CLS"], 5),
        ("query", ["SYST:LFR?"], "+50"),
        ("write", ["SENS:CURR:DC:NPLC 0.2"], 22),
        ("query", ["SYST:ERR?"], '+0,"No error"'),
        ("write", ["SAMP:TIM?  MIN"], 13),
        ("read", [], "+2.00100000E-02"),
        ("query", ["R? 10000"], "#215+1.58000000E-02"),
        ("query", ["R? 10000"], "#215+2.00300000E-02"),  # readings change: stateful
        ("query", ["FETC?"], TimeoutError("VI_ERROR_TMO")),
        ("query", ["SYST:ERR?"], '+0,"No error"'),
    ])
    out = tmp_path / "dmm.yaml"
    done = hilbench("cassette", "export-pyvisa-sim", cassette, "--out", out)
    assert done.returncode == 0, done.stderr
    assert f"{RESOURCE}: 7 stateless dialogue(s), 1 stateful query(ies) left out" in done.stdout
    text = out.read_text()
    assert "# stateful, left out: R? 10000" in text
    rm = pyvisa.ResourceManager(f"{out}@sim")
    inst = rm.open_resource(RESOURCE, read_termination="\n", write_termination="\n")
    try:
        assert inst.query("*IDN?") == IDN
        assert inst.query("SYST:LFR?") == "+50"
        assert inst.query("SYST:ERR?") == '+0,"No error"'
        assert inst.query("SAMP:TIM?  MIN") == "+2.00100000E-02"  # write + read = a query
        inst.write("*RST")  # a command only written is accepted
    finally:
        inst.close()
        rm.close()


def test_a_cassette_without_a_visa_channel_is_refused_by_name(tmp_path):
    done = hilbench("cassette", "export-pyvisa-sim", tmp_path, "--out", tmp_path / "x.yaml")
    assert done.returncode == 2
    assert f"{tmp_path} holds no VISA channel" in done.stderr
    assert not (tmp_path / "x.yaml").exists()


def test_a_recorded_cassettes_meter_answers_its_recorded_identity_through_pyvisa_sim(tmp_path):
    """tests/cassettes/qubo-cpu: the Keysight driver's real dialogue with the simulated meter."""
    pyvisa = pytest.importorskip("pyvisa")
    pytest.importorskip("pyvisa_sim")
    cassette = Path(__file__).resolve().parents[1] / "cassettes" / "qubo-cpu"
    (channel,) = (cassette / "channels").glob("visa-*.jsonl")
    lines = [json.loads(line) for line in channel.read_text().splitlines()]
    resource = lines[0]["resource"]
    idn = next(x["result"] for x in lines[1:] if x.get("op") == "query"
               and x["args"] == ["*IDN?"])
    lfr = next(x["result"] for x in lines[1:] if x.get("op") == "query"
               and x["args"] == ["SYST:LFR?"])
    out = tmp_path / "meter.yaml"
    done = hilbench("cassette", "export-pyvisa-sim", cassette, "--out", out)
    assert done.returncode == 0, done.stderr
    assert "# stateful, left out: R? " in out.read_text()  # readings change: not replayable
    rm = pyvisa.ResourceManager(f"{out}@sim")
    inst = rm.open_resource(resource, read_termination="\n", write_termination="\n")
    try:
        assert inst.query("*IDN?") == idn
        assert inst.query("SYST:LFR?") == lfr
    finally:
        inst.close()
        rm.close()
