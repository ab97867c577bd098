"""The agent decodes ZeroMQ's socket monitor messages itself (hilbench.agent.connections): the
same event and descriptor as pyzmq's own decoder, on a real socket's events."""

from __future__ import annotations

import pytest
import zmq
from zmq.utils.monitor import parse_monitor_message

from hilbench.agent.connections import monitor_event


@pytest.mark.timeout(30)
def test_a_real_accept_and_disconnect_decode_as_pyzmq_decodes_them():
    ctx = zmq.Context()
    server = ctx.socket(zmq.ROUTER)
    port = server.bind_to_random_port("tcp://127.0.0.1")
    monitor = server.get_monitor_socket(zmq.EVENT_ACCEPTED | zmq.EVENT_DISCONNECTED)
    client = ctx.socket(zmq.DEALER)
    client.connect(f"tcp://127.0.0.1:{port}")
    try:
        seen = []
        for _ in range(2):
            assert monitor.poll(5000), "no monitor event in 5 s"
            frames = monitor.recv_multipart()
            theirs = parse_monitor_message(frames)
            assert monitor_event(frames) == (int(theirs["event"]), int(theirs["value"]))
            seen.append(monitor_event(frames)[0])
            if len(seen) == 1:
                assert seen[0] == zmq.EVENT_ACCEPTED and monitor_event(frames)[1] > 2  # an fd
                client.close(linger=0)
        assert seen[1] == zmq.EVENT_DISCONNECTED
        with pytest.raises(ValueError, match="not a socket monitor message"):
            monitor_event([b"\x00" * 5, b""])
    finally:
        client.close(linger=0)
        monitor.close(linger=0)
        server.close(linger=0)
        ctx.term()
