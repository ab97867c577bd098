"""Campaign errors in a person's words: file, section and key first, then what is wrong.

pydantic reports locations as tuples and messages for programmers; this turns each into one
line such as ``t.toml [[qubo]] #1: unknown key 'nodez' (did you mean 'nodes'?)``.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError


class CampaignError(ValueError):
    """The campaign file is not valid; each line names the file, section and key."""

    def __init__(self, problems: Sequence[str] | str) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))


def describe_errors(
    exc: ValidationError, source: str, section: str, known_keys: Sequence[str] = ()
) -> list[str]:
    """One line per problem pydantic found in one table (``known_keys``: for suggestions)."""
    # A value refused by every member of a union (str | int | …) is one problem, not four:
    # such errors are gathered under their key and written once, where the first one was.
    entries: list[str | tuple[str, ...]] = []
    unions: dict[tuple[str, ...], tuple[Any, list[str]]] = {}
    for error in exc.errors(include_url=False):
        loc = [str(p) for p in error["loc"]]
        if loc and loc[-1] in _UNION_TAGS and error["type"] in _KIND:
            key = tuple(loc[:-1])
            if key not in unions:
                unions[key] = (error.get("input"), [])
                entries.append(key)
            unions[key][1].append(_KIND[error["type"]])
        elif error["type"] == "extra_forbidden":
            key_name = loc[-1] if loc else "?"
            where = _where(source, section, loc[:-1])
            entries.append(f"{where}: unknown key {key_name!r}{_suggest(key_name, known_keys)}")
        else:
            entries.append(f"{_where(source, section, loc)}: {_message(error)}")
    lines = []
    for entry in entries:
        if isinstance(entry, str):
            lines.append(entry)
            continue
        value, kinds = unions[entry]
        listed = kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + f" or {kinds[-1]}"
        lines.append(f"{_where(source, section, list(entry))}: {value!r} is not {listed}")
    return lines


def _where(source: str, section: str, loc: list[str]) -> str:
    """``file [[qubo]] #1 nodes[2]``: the key, with list positions as they are counted in TOML."""
    where = f"{source} {section}"
    path = ""
    for part in loc:
        path += f"[{int(part) + 1}]" if part.isdigit() and path else f".{part}" if path else part
    return f"{where} {path}" if path else where


def _suggest(key: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, known, n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    return f" (known: {', '.join(sorted(known))})" if known else ""


_UNION_TAGS = {"str", "int", "float", "bool", "none"}
_KIND = {
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "a string",
    "list_type": "a list (write [ … ])",
    "dict_type": "a table",
    "model_type": "a table",
}


def _message(error: Any) -> str:
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    if kind == "missing":
        return "is required"
    if kind in _KIND:
        return f"{value!r} is not {_KIND[kind]}"
    bounds = {
        "greater_than_equal": ">= {ge}",
        "greater_than": "> {gt}",
        "less_than_equal": "<= {le}",
        "less_than": "< {lt}",
    }
    if kind in bounds:
        return f"{value!r} must be {bounds[kind].format(**ctx)}"
    if kind == "literal_error":
        return f"{value!r} is not one of {ctx.get('expected')}"
    if kind == "too_short":
        return "must not be empty" if ctx.get("min_length") == 1 else error["msg"]
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    return f"{value!r}: {error['msg']}" if value is not None else error["msg"]
