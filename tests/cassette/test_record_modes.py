"""The ``cassette`` fixture's record modes (none / once / rewrite, as pytest-recording has
them) and its refusal, under CI, to record a campaign that reaches a real instrument or an
agent off this host."""

from __future__ import annotations

import json

import pytest

from tests.campaign_toml import agent, campaign, keysight, qubo, write_campaign
from tests.cassette_recording import RecordingRefused, use_cassette


def _uid(folder):
    line = (folder / "documents.jsonl").read_text().splitlines()[0]
    return json.loads(line)["campaign_uid"]


@pytest.mark.slow
def test_once_records_a_missing_cassette_then_uses_it_and_rewrite_records_again(tmp_path):
    path = write_campaign(tmp_path, campaign(agent(), qubo(), name="modes"))
    root = tmp_path / "cassettes"
    with pytest.raises(FileNotFoundError, match="record mode is none"):
        use_cassette("modes", path, "none", ci=True, root=root)
    first = use_cassette("modes", path, "once", ci=True, root=root)  # loopback: allowed
    assert first == root / "modes" and (first / "manifest.json").is_file()
    uid = _uid(first)
    assert _uid(use_cassette("modes", path, "once", ci=False, root=root)) == uid
    assert _uid(use_cassette("modes", path, "none", ci=True, root=root)) == uid
    again = use_cassette("modes", path, "rewrite", ci=False, root=root)
    assert _uid(again) != uid


@pytest.mark.parametrize(("tables", "named"), [
    ((agent(), keysight("TCPIP::192.0.2.7::5025::SOCKET", settings={})),
     "instrument dmm opens the real instrument TCPIP::192.0.2.7::5025::SOCKET"),
    ((agent(spawn=False, address="tcp://192.0.2.8:5555"),),
     "agent cpu0 is at tcp://192.0.2.8:5555, not on loopback"),
    ((agent("nano", "arduino", options={"port": "/dev/ttyACM0"}),),
     "agent nano opens the device at port '/dev/ttyACM0'"),
], ids=["instrument", "remote-agent", "serial-port"])
def test_under_ci_recording_a_campaign_off_the_simulated_bench_is_refused(tmp_path, tables,
                                                                           named):
    agent_id = named.split()[1] if named.startswith("agent") else "cpu0"
    path = write_campaign(tmp_path, campaign(*tables, qubo(agent=agent_id), name="lab"))
    root = tmp_path / "cassettes"
    with pytest.raises(RecordingRefused, match=r"not recording .* under CI=true") as refused:
        use_cassette("lab", path, "rewrite", ci=True, root=root)
    assert named in str(refused.value)
    assert not root.exists()  # nothing started, nothing written
