"""SCPI syntax as the simulated meter reads it: a script written for a real 34465A in long
form, short form or mixed case, with optional nodes, reaches the same command; bad values get
the instrument's numbered error."""

from __future__ import annotations

import pytest

from hilbench.sim.scpi_syntax import ScpiError, normalise_header, parse_bool, parse_number


@pytest.mark.parametrize(
    "header, canonical",
    [
        ("SENSe:CURRent:DC:NPLCycles", "CURR:NPLC"),
        (":sens:curr:nplc", "CURR:NPLC"),
        ("CURRENT:DC:RANGE:AUTO?", "CURR:RANG:AUTO?"),
        ("CONFigure:CURRent:DC", "CONF:CURR"),
        ("INITiate:IMMediate", "INIT"),
        ("SYSTem:ERRor:NEXT?", "SYST:ERR?"),
        ("STATus:QUEStionable:EVENt?", "STAT:QUES?"),
        ("*idn?", "*IDN?"),
    ],
)
def test_long_short_and_optional_forms_reach_one_command(header: str, canonical: str) -> None:
    assert normalise_header(header) == canonical


def test_an_unknown_node_is_error_113() -> None:
    with pytest.raises(ScpiError) as err:
        normalise_header("SENS:CURR:BANANA")
    assert (err.value.code, err.value.message) == (-113, "Undefined header")


def test_numbers_take_min_max_def_and_refuse_what_is_out_of_range() -> None:
    assert parse_number("MINimum", 0.001, 100.0) == 0.001
    assert parse_number("max", 0.001, 100.0) == 100.0
    assert parse_number("DEF", 0.001, 100.0, default=10.0) == 10.0
    assert parse_number("2.5E-1", 0.0, 1.0) == 0.25
    with pytest.raises(ScpiError) as out_of_range:
        parse_number("5", 0.0, 1.0)
    assert out_of_range.value.code == -222
    with pytest.raises(ScpiError) as not_a_number:
        parse_number("fast", 0.0, 1.0)
    assert not_a_number.value.code == -104


def test_booleans_are_on_off_or_1_0() -> None:
    assert parse_bool("on") and parse_bool("1")
    assert not parse_bool("OFF") and not parse_bool("0")
    with pytest.raises(ScpiError) as err:
        parse_bool("yes")
    assert err.value.code == -224
