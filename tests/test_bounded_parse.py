"""hilbench.bounded_parse: sizes and nesting bounded before a parser sees the text, so a
hostile file is one line naming it, never a RecursionError or gigabytes of memory."""

from __future__ import annotations

import pytest

from hilbench.bounded_parse import (
    MAX_DEPTH,
    MAX_TOML_BYTES,
    InputError,
    depth,
    json_lines,
    json_value,
    read_toml,
    toml_document,
)


def test_json_as_deep_as_allowed_parses_and_one_level_more_is_refused():
    assert depth(json_value("[" * MAX_DEPTH + "]" * MAX_DEPTH, "f")) == MAX_DEPTH
    with pytest.raises(InputError, match="f: JSON nested deeper than 64 levels"):
        json_value("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "f")
    with pytest.raises(InputError, match="nested deeper"):
        json_value('{"a":' * 100_000 + "1" + "}" * 100_000, "f")


def test_brackets_in_json_strings_and_escaped_quotes_are_not_nesting():
    text = '{"a": "' + "[{" * 1000 + '\\"' + "[" * 1000 + '", "b": [[1]]}'
    assert json_value(text, "f")["b"] == [[1]]


def test_json_that_is_not_json_or_not_utf8_is_one_line_naming_the_place():
    with pytest.raises(InputError, match=r"^f line 3: not JSON \("):
        json_value("{nope", "f line 3")
    with pytest.raises(InputError, match=r"^f: not UTF-8"):
        json_value(b'"\xff\xfe"', "f")


def test_json_lines_number_each_line_and_skip_a_last_line_cut_short():
    lines = [b'{"a": 1}\n', b'{"a": 2}\n', b'{"a": 3']
    assert list(json_lines(lines, "f")) == [(1, {"a": 1}), (2, {"a": 2})]


@pytest.mark.parametrize("text", [
    "a = " + "[" * 5000 + "]" * 5000,
    "a = " + "{b = " * 5000 + "1" + "}" * 5000,
    "[" + ".".join(["t"] * 5000) + "]\nx = 1",
    ".".join(["k"] * 5000) + " = 1",
])
def test_toml_nested_5000_deep_is_one_line(text):
    with pytest.raises(InputError, match=r"^c.toml: (arrays or inline tables|tables) nested "
                                         r"deeper than 64 levels$"):
        toml_document(text.encode(), "c.toml")


def test_toml_brackets_in_strings_and_comments_are_not_nesting():
    text = ('a = "' + "[" * 500 + '"\n# ' + "{" * 500 + '\nb = \'\'\'' + "[" * 500
            + "'''\nc = \"\"\"\n" + "]" * 100 + '\\"""""\nd = [[1, 2], [3]]\n')
    assert toml_document(text.encode(), "c.toml")["d"] == [[1, 2], [3]]


def test_toml_that_is_too_large_not_utf8_or_not_toml_is_one_line(tmp_path):
    big = tmp_path / "big.toml"
    big.write_text('a = "' + "x" * MAX_TOML_BYTES + '"\n')
    with pytest.raises(InputError, match=f"^{big}: more than the {MAX_TOML_BYTES} bytes"):
        read_toml(big, "campaign file")
    with pytest.raises(InputError, match=r"^c.toml is not UTF-8 text .*byte 5 \(0xff\)"):
        toml_document(b'a = "\xff"', "c.toml")
    with pytest.raises(InputError, match=r"^c.toml is not valid TOML: Illegal character"):
        toml_document(b'a = "\x00"', "c.toml")
    with pytest.raises(InputError, match=f"^cannot read campaign file {tmp_path / 'none'}: "):
        read_toml(tmp_path / "none", "campaign file")
