"""An ASC answer counts only for the sample it was asked for and only if it names one of the
task's classes: an answer for another sample (scored against the wrong label otherwise) and a
class outside the task's four fail the run as ``bad_reply`` naming the key, on both paths —
sample lists run by the agent (protocol version 3) and one request per sample (version 2)."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import pytest

from hilbench.agent.driver import DriverResult
from hilbench.store import Store
from hilbench.wire import codec
from tests.cpu_wrapper import CpuWrapper, run_asc_unit

pytestmark = pytest.mark.serial  # asserts honest runs verified on time: alone (tests/alone.py)

LIAR_SAMPLE = 3


class WrongAnswers(CpuWrapper):
    """The cpu driver; its answer to sample 3 is the answer of sample 4 (``index``), or
    class 9 of the task's 4 (``class``)."""

    name: ClassVar[str] = "wrong-answers"

    def __init__(self, rapl_root: str, lie: str) -> None:
        super().__init__(rapl_root)
        self.lie = lie

    def run(self, params: dict[str, Any], stop: threading.Event) -> DriverResult:
        reply = self.inner.run(params, stop)
        body = dict(reply.body)
        if params.get("mode") == "single_stream" and params.get("index") == LIAR_SAMPLE:
            if self.lie == "index":
                body["index"] = LIAR_SAMPLE + 1
            else:
                body["predicted"] = 9
        return DriverResult(body, reply.arrays)


@pytest.mark.parametrize("path", ["sample lists", "one request per sample"])
@pytest.mark.parametrize(("lie", "expected"), [
    ("index", f"is sample {LIAR_SAMPLE + 1}, not {LIAR_SAMPLE}"),
    ("class", "predicts class 9, not one of the task's 4 classes (0 … 3)"),
])
def test_an_answer_for_another_sample_or_class_fails_the_run_as_bad_reply(
        tmp_path, asc_cache, monkeypatch, path, lie, expected):
    monkeypatch.setenv("XDG_CACHE_HOME", str(asc_cache))
    if path == "one request per sample":  # a version-2 peer: no sample lists
        monkeypatch.setattr(codec, "SUPPORTED_VERSIONS", (2,))
    run = run_asc_unit(WrongAnswers(str(tmp_path / "no-powercap"), lie), tmp_path / "r.sqlite")
    with Store(tmp_path / "r.sqlite") as store:
        metrics = {m["name"] for m in store.metrics(run["uid"])}
        samples = store.events(run["uid"], "sample")
    assert run["status"] == "fail"
    assert run["reason"].startswith("agent a: bad_reply: "), run["reason"]
    assert expected in run["reason"], run["reason"]
    assert "accuracy" not in metrics  # no figure from a set with a wrong answer in it
    # no answer from the wrong one on is stored (a list is checked whole before its samples)
    assert all(e["data"]["index"] < LIAR_SAMPLE for e in samples)
