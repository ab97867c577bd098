"""Every workload vector of protocols/vectors/agent_messages.json decodes against its contract
(hilbench/contracts) on the side that receives it: requests as the agent decodes them, replies
as the orchestrator's handles do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hilbench.contracts.base import decode
from hilbench.contracts.messages import decode_request, reply_type

VECTORS = Path(__file__).resolve().parents[2] / "protocols" / "vectors" / "agent_messages.json"
VALID = {v["name"]: v["decoded"] for v in json.loads(VECTORS.read_text())["valid"]}
PAIRS = [(req, rep) for req, rep in [
    ("qubo_load", "qubo_load_reply"),
    ("qubo_run_fixed_timeout", "qubo_run_reply_with_state"),
    ("qubo_run_time_to_solution", "qubo_tts_reply"),
    ("asc_load_model", "asc_load_model_reply"),
    ("asc_load_sample", "asc_load_sample_reply"),
    ("asc_run_single_stream", "asc_single_stream_reply"),
    ("asc_run_repeat", "asc_repeat_reply"),
    ("asc_unload_sample", "asc_unload_sample_reply"),
    ("asc_load_stream", "asc_load_stream_reply"),
    ("asc_run_stream", "asc_stream_reply"),
    ("asc_unload_stream", "asc_unload_stream_reply"),
    ("asc_load_sample_list", "asc_load_sample_list_reply"),
    ("asc_run_samples", "asc_samples_reply"),
]]


@pytest.mark.parametrize(("request_name", "reply_name"), PAIRS)
def test_each_workload_vector_follows_its_contract(request_name, reply_name):
    request = VALID[request_name]
    typed = decode_request(request["cmd"], request["body"])
    decode(reply_type(typed), VALID[reply_name]["body"], "bad_reply")


def test_the_vectors_hold_a_request_for_every_contract():
    from hilbench.contracts.messages import WORKLOADS

    covered = {type(decode_request(VALID[r]["cmd"], VALID[r]["body"])) for r, _ in PAIRS}
    declared = {t for name in ("qubo", "asc") for t in WORKLOADS[name].replies}
    assert declared - covered == set()
