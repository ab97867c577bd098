"""The pieces every workload contract is built from: strict Structs, bounded number types, and
one error that names the key a body or reply got wrong.

A contract Struct refuses unknown keys, missing required keys, wrong types (an int is not a
float's stand-in the other way round, ``true`` is not ``1``) and numbers outside their stated
range — NaN and infinities included, since every float type here is bounded. Both sides of the
wire decode with :func:`decode`: the agent before its driver sees a request (``bad_arguments``),
the orchestrator before a procedure sees a reply (``bad_reply``).
"""

from __future__ import annotations

import functools
import re
import types
import typing
from typing import Annotated, Any, TypeVar, Union

import msgspec

T = TypeVar("T")

# Every float on the wire is finite: a bound on each side refuses NaN and the infinities.
FINITE = 1e300
MAX_SECONDS = 86_400.0  # one day: no single request or timed region is longer
MAX_INT = 2**62  # costs, counts: far beyond any workload, well inside int64

Finite = Annotated[float, msgspec.Meta(ge=-FINITE, le=FINITE, description="finite float")]
Instant = Annotated[
    float, msgspec.Meta(ge=-FINITE, le=FINITE, description="s on the sender's monotonic clock")
]
Seconds = Annotated[float, msgspec.Meta(ge=0, le=MAX_SECONDS, description="s, 0 … 86 400")]
Count = Annotated[int, msgspec.Meta(ge=0, le=MAX_INT, description="int ≥ 0")]
BigInt = Annotated[int, msgspec.Meta(ge=-MAX_INT, le=MAX_INT, description="int, |x| ≤ 2^62")]
Seed = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1, description="int 0 … 2^63−1")]
Name = Annotated[str, msgspec.Meta(min_length=1, max_length=64, description="str, 1 … 64 chars")]
Text = Annotated[str, msgspec.Meta(max_length=4096, description="str, ≤ 4096 chars")]
Detail = dict[str, Any]


class Contract(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, kw_only=True):
    """Base of every body, reply and capability Struct: unknown keys are refused."""

    def check_payloads(self, arrays: list[Any]) -> None:
        """The payload frames this request must carry (default: none)."""
        payload_count(arrays, 0)


def payload_count(arrays: list[Any], count: int) -> None:
    if len(arrays) != count:
        raise ContractError("bad_arguments", "payloads",
                            f"this request carries {count} payload(s), got {len(arrays)}")


class Reply(Contract):
    """Base of every reply to a driver command."""

    agent_elapsed_s: Seconds | None = None  # the agent's own time for the command; informative


class UntimedWork(Contract, omit_defaults=False, kw_only=True):
    """Work a device does inside a request's window but outside its timed region, which the
    orchestrator cannot tell from transport: declared in the capabilities as a maximum with its
    reason, shown beside every figure it allows for, checked by the conformance suite on the
    real driver (:mod:`hilbench.testing.driver_conformance`)."""

    max_s: Annotated[float, msgspec.Meta(ge=0, le=3600.0, description="s, 0 … 3600")]
    reason: Annotated[str, msgspec.Meta(min_length=1, max_length=4096)]


class ContractError(ValueError):
    """A body or reply that breaks its contract; ``key`` is the dotted path of the bad key."""

    def __init__(self, code: str, key: str, reason: str, what: str = "") -> None:
        where = f"{what} " if what else ""
        super().__init__(f"{where}key {key!r}: {reason}" if key else f"{where}{reason}")
        self.code = code
        self.key = key
        self.reason = reason


_AT = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_FIELD = re.compile(r"field `(?P<name>[^`]+)`")


def _key_and_reason(exc: msgspec.ValidationError) -> tuple[str, str]:
    """msgspec's message as (dotted key, reason): '... - at `$.gaps[0]`' -> ('gaps[0]', '...')."""
    text = str(exc)
    match = _AT.search(text)
    path = ""
    if match:
        path = match["path"].lstrip(".")
        text = text[: match.start()]
    named = _FIELD.search(text)
    if named:  # unknown or missing field: msgspec names it in the message, not the path
        path = f"{path}.{named['name']}" if path else named["name"]
    return path, text


@functools.cache
def _members_by_tag(type_: Any) -> tuple[str, dict[Any, type]] | None:
    """For a union of Structs tagged on one field: that field and tag -> member (else None)."""
    if typing.get_origin(type_) not in (Union, types.UnionType):
        return None
    members = typing.get_args(type_)
    if not all(isinstance(m, type) and issubclass(m, msgspec.Struct) for m in members):
        return None
    configs = [m.__struct_config__ for m in members]
    fields = {c.tag_field for c in configs}
    if len(fields) != 1 or None in fields:
        return None
    return fields.pop(), {c.tag: m for c, m in zip(configs, members, strict=True)}


def decode(type_: type[T], body: Any, code: str = "bad_arguments", what: str = "") -> T:
    """``body`` (plain msgpack types) as ``type_``, or ContractError naming the key.

    A tagged union is decoded straight into the member its tag names: msgspec builds a
    union's type information anew on every ``convert`` (12 µs against 1.3 µs for one Struct,
    on every request an agent serves). A missing or unknown tag goes through the union, whose
    error names it."""
    tagged = _members_by_tag(type_)
    if tagged is not None and type(body) is dict:
        member = tagged[1].get(body.get(tagged[0]))
        if member is not None:
            type_ = member
    try:
        return msgspec.convert(body, type_, strict=True)
    except msgspec.ValidationError as exc:
        key, reason = _key_and_reason(exc)
        raise ContractError(code, key, reason, what) from None


def prepare(contracts: typing.Iterable[Any]) -> None:
    """Build msgspec's conversion of each contract (a Struct or a tagged union of them) now.

    msgspec builds it at a type's first use: an agent's first ``run`` paid 0.3 ms decoding its
    body and 0.7 ms checking its reply, outside the driver's timed region and inside the
    orchestrator's window, so every campaign's first run of an honest agent came out unverified
    (6 of 6 on an idle machine)."""
    for contract in contracts:
        msgspec.msgpack.Decoder(contract)
        _members_by_tag(contract)


def to_wire(value: msgspec.Struct) -> dict[str, Any]:
    """A Struct as the plain map that goes on the wire (every field, None included)."""
    return msgspec.to_builtins(value)


def _struct_of(annotation: Any) -> type[Contract] | None:
    """The Contract class inside ``X``, ``X | None`` or ``Annotated[X, ...]``, if any."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _struct_of(typing.get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        found = [s for a in typing.get_args(annotation) if (s := _struct_of(a)) is not None]
        return found[0] if len(found) == 1 else None
    if isinstance(annotation, type) and issubclass(annotation, Contract):
        return annotation
    return None


@functools.cache
def _wire_fields(type_: type[Contract]) -> dict[str, type[Contract] | None]:
    """A contract's keys on the wire, each with the contract nested under it (None: a plain
    value). Cached: resolving the annotations costs ~3 ms a call, which a driver's reply paid
    after its timed region, outside every claim the orchestrator checks."""
    hints = typing.get_type_hints(type_, include_extras=True)
    return {f.encode_name: _struct_of(hints.get(f.name)) for f in msgspec.structs.fields(type_)}


def gather_extras(type_: type[Contract], body: dict[str, Any]) -> dict[str, Any]:
    """``body`` with the keys ``type_`` does not name moved under its ``detail`` map (nested
    contract maps too): how a driver that returns a plain dict gets its device-specific extras
    onto the wire without breaking the contract. Types are not touched; :func:`decode` checks
    them afterwards."""
    if not isinstance(body, dict):
        return body
    known = _wire_fields(type_)
    out: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    for key, value in body.items():
        if key not in known:
            extras[key] = value
            continue
        nested = known[key]
        out[key] = gather_extras(nested, value) if nested is not None else value
    if extras and "detail" in known:
        detail = out.get("detail")
        out["detail"] = {**extras, **(detail if isinstance(detail, dict) else {})}
    elif extras:
        out.update(extras)  # no room for extras: decode names the first unknown key
    return out
