"""`hilbench replay CASSETTE` runs the recorded campaign with the real orchestrator against
stand-ins fed from the cassette and compares every figure: exit 0 when all agree, 1 with one line
per difference; a command the cassette does not hold stops it at once, naming the nearest
recorded one; `--against-live` reports where a live bench answers differently."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from hilbench.cassette.channels import CHANNELS
from hilbench.cassette.replay import replay_cassette
from hilbench.cli import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _copy(recorded, tmp_path) -> Path:
    folder = tmp_path / "cassette"
    shutil.copytree(recorded[2], folder)
    return folder


def _replay(*args: str):
    return CliRunner().invoke(cli, ["replay", *map(str, args)])


def test_replay_reproduces_every_recorded_figure(recorded):
    done = _replay(recorded[2])
    assert done.exit_code == 0, done.output
    runs = re.search(r"(\d+) run\(s\), (\d+) figure\(s\) compared", done.output)
    assert runs and int(runs[1]) >= 3  # and any unverified attempt of a loaded host
    assert int(re.search(r"(\d+) figure", done.output).group(1)) >= 30
    assert "every figure agrees" in done.output


def test_a_changed_figure_fails_the_replay_naming_it(recorded, tmp_path):
    folder = _copy(recorded, tmp_path)
    documents = folder / "documents.jsonl"
    lines = documents.read_text().splitlines()
    for i, line in enumerate(lines):
        doc = json.loads(line)
        if doc["kind"] == "metric" and doc["name"] == "avg_power_w" and doc["value"]:
            changed, doc["value"] = doc["value"], doc["value"] * (1 + 1e-12)
            lines[i] = json.dumps(doc)
            break
    documents.write_text("\n".join(lines) + "\n")
    done = _replay(folder)
    assert done.exit_code == 1, done.output
    (line,) = [x for x in done.output.splitlines() if "avg_power_w" in x]
    assert repr(changed) in line and "recorded" in line and "replayed" in line


def _fails_fast(folder: Path) -> str:
    started = time.monotonic()
    outcome = replay_cassette(folder)
    assert outcome.differences
    assert outcome.failed_for_s is not None and outcome.failed_for_s < 1.0
    assert time.monotonic() - started < 30
    return outcome.differences[0]


def test_a_command_the_cassette_lacks_fails_within_a_second_naming_the_nearest(recorded,
                                                                               tmp_path):
    folder = _copy(recorded, tmp_path)
    campaign = folder / "campaign.toml"
    campaign.write_text(campaign.read_text().replace("timeouts_s = [0.3]", "timeouts_s = [0.4]"))
    line = _fails_fast(folder)
    # the first request shaped by the run: the echoes that measure its link, then the run
    assert line.startswith(("agent cpu0: unexpected command request noop",
                            "agent cpu0: unexpected command request run"))
    sent, held = line.split("nearest recorded:")[:2]
    assert '"timeout_s": 0.4' in sent and '"timeout_s": 0.3' in held


def test_an_instrument_command_the_cassette_lacks_fails_naming_the_nearest(recorded, tmp_path):
    folder = _copy(recorded, tmp_path)
    (visa,) = (folder / CHANNELS).glob("visa-*.jsonl")
    visa.write_text(visa.read_text().replace('"SAMP:TIM 0.01"', '"SAMP:TIM 0.02"'))
    line = _fails_fast(folder)
    assert "unexpected write 'SAMP:TIM 0.01'" in line
    assert line.endswith("nearest recorded: write 'SAMP:TIM 0.02'")
    done = _replay(folder)
    assert done.exit_code == 1 and "SAMP:TIM 0.01" in done.output


def test_strict_fails_on_a_recorded_call_the_replay_never_made(recorded, tmp_path):
    folder = _copy(recorded, tmp_path)
    (visa,) = (folder / CHANNELS).glob("visa-*.jsonl")
    lines = visa.read_text().splitlines()
    lines.insert(2, lines[1])  # *IDN? asked twice in the "recording"
    visa.write_text("\n".join(lines) + "\n")
    strict = _replay(folder)
    assert strict.exit_code == 1
    assert "recorded query '*IDN?' was never called in the replay (1 left)" in strict.output
    assert _replay(folder, "--lenient").exit_code == 0


def test_an_agent_from_another_environment_replays_without_it(recorded, tmp_path):
    """A spawned agent's interpreter (a vendor SDK's venv, absent in CI) is not needed: its
    stand-in replaces it."""
    folder = _copy(recorded, tmp_path)
    campaign = folder / "campaign.toml"
    campaign.write_text(campaign.read_text().replace(
        "spawn = true", 'spawn = true\npython = "../.venv-vendor/bin/python"', 1))
    done = _replay(folder)
    assert done.exit_code == 0, done.output


def test_replay_help_says_what_is_compared_strict_and_exit_codes():
    text = _replay("--help").output
    assert "Compared:" in text and "Strict:" in text and "Exit status: 0" in text


@pytest.mark.slow
def test_against_live_reports_identity_drift(recorded, tmp_path):
    from hilbench.sim import SimulatedMeter
    from hilbench.sim.power_model import SIMULATED_CPU
    from tests.subprocesses import announced_agent

    folder = _copy(recorded, tmp_path)
    (visa,) = (folder / CHANNELS).glob("visa-*.jsonl")
    resource = json.loads(visa.read_text().splitlines()[0])["resource"]
    with SimulatedMeter(SIMULATED_CPU) as meter, announced_agent(
            "--driver", "cpu", "--bind", "tcp://127.0.0.1:*", "--id", "cpu0") as (_, address):
        args = [folder, "--against-live", "--visa", f"{resource}={meter.resource}",
                "--agent", f"cpu0={address}"]
        same = _replay(*args)
        assert same.exit_code == 0, same.output
        assert "3 answer(s) from the live bench agree" in same.output  # hello, *IDN?, SYST:LFR?
        # The bench the cassette describes had other firmware in its meter.
        visa.write_text(visa.read_text().replace(",hilbench-sim\"", ",A.03.01\"", 1))
        drift = _replay(*args)
    assert drift.exit_code == 1
    assert "firmware (*IDN?) recorded 'A.03.01', live 'hilbench-sim'" in drift.output


def _example(name: str, tmp_path: Path, **values: str) -> Path:
    """An example campaign with some values made smaller (same drivers, meter and paths)."""
    text = (EXAMPLES / name).read_text()
    for key, value in values.items():
        text, n = re.subn(rf"^{key} = .*$", f"{key} = {value}", text, count=1, flags=re.M)
        assert n == 1, key
    path = tmp_path / name
    path.write_text(text)
    return path


def _record_and_replay(path: Path, tmp_path: Path):
    from tests.subprocesses import run_campaign

    folder = tmp_path / "cassette"
    started = time.monotonic()
    done = run_campaign(path, tmp_path / "s.sqlite", "--record", str(folder), timeout=600)
    recorded_s = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    replayed = subprocess.run([sys.executable, "-m", "hilbench", "replay", str(folder)],
                              capture_output=True, text=True, timeout=300)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    figures = int(re.search(r"(\d+) figure\(s\) compared", replayed.stdout).group(1))
    return recorded_s, replay_cassette(folder), figures


@pytest.mark.slow
def test_the_cpu_qubo_example_replays_every_figure_exactly(tmp_path):
    path = _example("qubo-cpu.toml", tmp_path, nodes="[10, 25]", seeds="[0]",
                    timeouts_s="[0.01, 0.1]")
    _, outcome, figures = _record_and_replay(path, tmp_path)
    # 12 units, and any unverified attempt of a loaded host (replayed as recorded)
    assert outcome.runs >= 12 and figures >= 120 and outcome.differences == []


@pytest.mark.slow
def test_the_cpu_asc_example_replays_every_figure_exactly(tmp_path):
    path = _example("asc-cpu.toml", tmp_path, idle_s="2.0", active_s="2.0", repetitions="1")
    _, outcome, figures = _record_and_replay(path, tmp_path)
    assert outcome.runs >= 2 and figures >= 15 and outcome.differences == []


@pytest.mark.timeout(900)  # a 600 s recording deadline, then the replay
@pytest.mark.slow
def test_a_session_over_60_s_replays_in_a_fifth_of_its_time(tmp_path):
    """Two 30 s idle power windows and their active ones (the ASC example measured by the
    simulated meter): a long session whose agent mostly waits, as on a bench."""
    path = _example("asc-cpu.toml", tmp_path, idle_s="30.0", active_s="1.0",
                    sample_interval_s="0.01")
    recorded_s, outcome, _ = _record_and_replay(path, tmp_path)
    assert outcome.recorded_s > 60 and outcome.differences == []
    print(f"recorded {recorded_s:.1f} s (orchestrator clock span {outcome.recorded_s:.1f} s), "
          f"replayed in {outcome.replay_s:.2f} s")
    assert outcome.replay_s < 0.2 * outcome.recorded_s
