"""ASC unit keys name a table by its settings and its files' content, never by where the
checkout, the model or the fixture cache sits: a moved tree resumes its campaign, and a cassette
recorded in one checkout replays in another (CI clones to a new path every time)."""

from __future__ import annotations

from pathlib import Path

from hilbench.orchestrator.campaign import load_campaign
from hilbench.workloads.asc import packaged_model_path

CAMPAIGN = """
[campaign]
name = "keys"

[[agents]]
id = "cpu0"
driver = "cpu"
spawn = true

[[asc]]
agent = "cpu0"
fixture = true
model = "model.npz"
{extra}
"""


def _digest(folder: Path, model: bytes, extra: str = "") -> str:
    folder.mkdir(parents=True)
    (folder / "model.npz").write_bytes(model)
    (folder / "c.toml").write_text(CAMPAIGN.format(extra=extra))
    (table,) = load_campaign(folder / "c.toml").tables_of("asc")
    return table.digest


def test_the_same_table_in_two_checkouts_has_one_key(tmp_path):
    model = packaged_model_path().read_bytes()
    here = _digest(tmp_path / "checkout-a", model)
    assert _digest(tmp_path / "elsewhere" / "checkout-b", model) == here
    # the fixture's folder is where it is generated, not what it is
    assert _digest(tmp_path / "c", model, f'data = "{tmp_path / "cache"}"') == here


def test_another_model_or_setting_is_another_key(tmp_path):
    model = packaged_model_path().read_bytes()
    here = _digest(tmp_path / "a", model)
    assert _digest(tmp_path / "b", model[:-1] + bytes([model[-1] ^ 1])) != here
    assert _digest(tmp_path / "c", model, "limit = 3") != here
    assert _digest(tmp_path / "d", model, "fixture_seed = 1") != here


def test_the_modelled_energy_per_operation_is_the_campaigns_and_its_defaults_keep_old_keys(
        tmp_path):
    model = packaged_model_path().read_bytes()
    plain = _digest(tmp_path / "a", model)
    assert _digest(tmp_path / "b", model, "modelled_mac_pj = 4.6\nmodelled_ac_pj = 0.9") == plain
    assert _digest(tmp_path / "c", model, "modelled_mac_pj = 3.1") != plain
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "model.npz").write_bytes(model)
    (tmp_path / "d" / "c.toml").write_text(CAMPAIGN.format(extra="modelled_ac_pj = 0.03"))
    (table,) = load_campaign(tmp_path / "d" / "c.toml").tables_of("asc")
    energy = table.energy_model()
    assert energy.e_ac_j == 0.03e-12 and energy.e_mac_j == 4.6e-12
    assert "modelled_ac_pj" in energy.source
    (table,) = load_campaign(tmp_path / "a" / "c.toml").tables_of("asc")
    assert "45 nm" in table.energy_model().source
