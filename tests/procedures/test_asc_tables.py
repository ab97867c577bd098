"""`[[asc]]` campaign tables: what is accepted, what is refused (naming file and key), and the
units a table expands into."""

from __future__ import annotations

from pathlib import Path

import pytest

from hilbench.orchestrator.campaign import CampaignError, load_campaign
from hilbench.orchestrator.procedure import expand_all
from hilbench.workloads.asc.procedures.run import AscPowerUnit, AscSingleStreamUnit
from tests.campaign_toml import agent, campaign, write_campaign


def asc_campaign(tmp_path: Path, body: str, repetitions: int = 1):
    """The campaign whose one ``[[asc]]`` table holds ``body``, on a spawned CPU agent."""
    text = campaign(agent(), "[[asc]]\n" + body, name="asc", repetitions=repetitions)
    return load_campaign(write_campaign(tmp_path, text, "asc.toml"))


def test_defaults_follow_the_arduino_method(tmp_path):
    (spec,) = asc_campaign(tmp_path, "fixture = true\n").tables_of("asc")
    assert spec.agent == "cpu0"
    assert (spec.idle_s, spec.active_s, spec.repetitions) == (60.0, 60.0, 1)
    assert spec.sample_rate == 16000 and spec.stream_s == [] and not spec.power
    assert spec.data is None and spec.model is None  # cache dir, trained on first use


def test_relative_paths_are_taken_from_the_campaign_file(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "m.npz").write_bytes(b"")
    (spec,) = asc_campaign(tmp_path, 'data = "data"\nmodel = "m.npz"\n').tables_of("asc")
    assert spec.data == str(tmp_path / "data") and spec.model == str(tmp_path / "m.npz")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("fixture = true\nidle = 5\n", ": unknown key 'idle' (did you mean 'idle_s'?)"),
        ('fixture = true\nagent = "gpu0"\n', " agent: 'gpu0' is not one of ['cpu0']"),
        ("fixture = true\nidle_s = 0\n", " idle_s: 0 must be >= 0.1"),
        ('fixture = true\nactive_s = "60"\n', " active_s: '60' is not a number"),
        ("fixture = true\nstream_s = [1]\n", " stream_s[1]: 1 must be >= 2"),
        ("fixture = true\nstream_s = 5\n", " stream_s: 5 is not a list"),
        ("fixture = true\nstream_s = [5, 5]\n", " stream_s: [5, 5] repeats a length"),
        ('fixture = true\npower = "yes"\n', " power: 'yes' is not true or false"),
        ("fixture = true\nlimit = 0\n", " limit: 0 must be >= 1"),
        ("fixture = true\nrepetitions = 1.5\n", " repetitions: 1.5 is not an integer"),
        ('fixture = true\nboundary = "clip"\n', " boundary: 'clip' is not one of"),
        ("power = true\n", ": give data"),
        ('data = "nowhere"\n', " data: " + "{tmp}/nowhere is not a directory"),
        ('fixture = true\nmodel = "missing.npz"\n', " model: model file {tmp}/missing.npz"),
    ],
)
def test_bad_tables_are_refused_naming_file_table_and_key(tmp_path, body, message):
    with pytest.raises(CampaignError) as exc:
        asc_campaign(tmp_path, body)
    text = str(exc.value)
    assert text.startswith(f"{tmp_path / 'asc.toml'} [[asc]] #1" + message.format(tmp=tmp_path))


def test_units_one_single_stream_and_one_power_run_per_stream_length(tmp_path):
    c = asc_campaign(tmp_path, "fixture = true\npower = true\nstream_s = [5, 10]\n", repetitions=2)
    units = expand_all(c)
    assert [type(u) for u in units] == 2 * [AscSingleStreamUnit, *3 * [AscPowerUnit]]
    assert [u.stream for u in units if isinstance(u, AscPowerUnit)] == [1, 5, 10, 1, 5, 10]
    assert len({u.key for u in units}) == len(units)
    amortised = [u.params()["amortised"] for u in units if isinstance(u, AscPowerUnit)]
    assert amortised == [False, True, True, False, True, True]
    # units of one table share its data and model, prepared once
    assert len({id(u.resources) for u in units}) == 1


def test_changing_a_setting_changes_the_unit_keys(tmp_path):
    a = expand_all(asc_campaign(tmp_path, "fixture = true\n"))
    b = expand_all(asc_campaign(tmp_path, "fixture = true\nlimit = 3\n"))
    assert a[0].key != b[0].key
