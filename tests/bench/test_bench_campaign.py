"""The daemon and store benchmarks' campaign comes from the registry: the first workload with a
bench fixture gives its tables, the core adds the spawned agent and the simulated meter, and the
file passes the gate every campaign passes."""

from __future__ import annotations

import numpy as np
import tomllib

from hilbench.bench.bench_campaign import bench_fixture, campaign_data, campaign_file, toml_text
from hilbench.bench.daemon_harness import unit_keys
from tests.subprocesses import hilbench


def test_a_bench_campaign_file_holds_the_units_asked_and_passes_campaign_check(tmp_path):
    path = campaign_file(tmp_path, "night", 24, timeout_s=0.02)
    assert len(unit_keys(path)) == 24
    data = tomllib.loads(path.read_text())
    assert data["agents"] == [{"id": "cpu0", "driver": "cpu", "spawn": True}]
    assert data["instruments"][0]["simulate"] == "simulated-cpu"
    check = hilbench("campaign", "check", path, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr


def test_repeated_instances_and_the_toml_round_trip():
    data = campaign_data("flat", 100, 0.001, sizes=[10, 25], instances=5, meter=True,
                         noise_std_w=0.01)
    assert data["campaign"]["repetitions"] == 10  # 2 sizes x 5 instances, to 100 units
    assert data["instruments"][0]["noise_std_w"] == 0.01
    assert tomllib.loads(toml_text({**data, "campaign": {**data["campaign"],
                                                         "name": 'a "quoted" \\ name'}})) == \
        {**data, "campaign": {**data["campaign"], "name": 'a "quoted" \\ name'}}
    assert "instruments" not in campaign_data("bare", 4, meter=False)


def test_stored_runs_follow_the_fixtures_shape():
    written = []
    uid, t = bench_fixture().write_run(written.append, "c" * 32, 0, 0.0, np.random.default_rng(0))
    kinds = [type(d).__name__ for d in written]
    assert kinds[0] == "RunStart" and kinds[-1] == "RunStop" and "Samples" in kinds
    assert written[0].uid == uid and written[0].campaign_uid == "c" * 32 and t > 0
