"""The system description file: the shipped template loads, and mistakes name file and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from hilbench.report.system import (
    AVAILABILITY,
    POWER_CATEGORIES,
    SystemFileError,
    load_system,
)

TEMPLATE = Path(__file__).parents[2] / "examples" / "system.toml"


def test_the_template_loads_and_names_every_choice():
    system = load_system(TEMPLATE)
    assert system.availability in AVAILABILITY
    assert system.power.category in POWER_CATEGORIES
    text = TEMPLATE.read_text()
    for choice in (*AVAILABILITY, *POWER_CATEGORIES, "performance", "efficiency"):
        assert choice in text, choice  # the template explains every allowed value


def _edit(tmp_path: Path, old: str, new: str) -> Path:
    text = TEMPLATE.read_text()
    assert old in text
    path = tmp_path / "system.toml"
    path.write_text(text.replace(old, new, 1))
    return path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('availability = "Available"', 'availability = "Soon"',
         "[system] availability: Input should be 'Available', 'Preview' or 'RDI'"),
        ('category = "external analyzer tap"', 'category = "clamp"', "[system.power] category"),
        ('organisation = "Example Lab"', 'organisaton = "Example Lab"',
         "[system]: unknown key 'organisaton'"),
        ('name = "dwave-samplers"', 'nam = "dwave-samplers"',
         "[[system.software]] #1: unknown key 'nam'"),
        ("date = 2026-01-15", 'date = "last week"', "[system] date"),
    ],
)
def test_a_mistake_names_the_file_and_the_key(tmp_path, old, new, message):
    path = _edit(tmp_path, old, new)
    with pytest.raises(SystemFileError) as info:
        load_system(path)
    assert str(path) in str(info.value) and message in str(info.value)


def test_unreadable_and_broken_files(tmp_path):
    with pytest.raises(SystemFileError, match="cannot read"):
        load_system(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[system\n")
    with pytest.raises(SystemFileError, match="not valid TOML"):
        load_system(bad)
    bad.write_text("name = 'x'\n")
    with pytest.raises(SystemFileError, match="no \\[system\\] table"):
        load_system(bad)
