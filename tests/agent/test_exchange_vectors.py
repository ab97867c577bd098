"""The protocol's exchange vectors (protocols/vectors/agent_messages.json) against a real agent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zmq

from hilbench.wire import codec

VECTORS = json.loads(
    (Path(__file__).resolve().parents[2] / "protocols/vectors/agent_messages.json").read_text()
)


@pytest.mark.parametrize("exchange", VECTORS["exchanges"], ids=lambda e: e["name"])
def test_agent_answers_each_exchange_as_the_vectors_say(agent, exchange):
    sock = zmq.Context.instance().socket(getattr(zmq, exchange["socket"]))
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, 3000)
    sock.connect(agent.endpoint)
    try:
        for step in exchange["steps"]:
            sock.send_multipart([bytes.fromhex(h) for h in step["send"]])
            while True:
                reply = codec.decode(sock.recv_multipart())
                if reply.type != codec.HEARTBEAT:
                    break
            assert reply.type == step["expect"]["type"]
            if step["expect"]["code"] is not None:
                assert reply.body["code"] == step["expect"]["code"]
    finally:
        sock.close()
