"""The workload tables of ``protocols/agent-protocol.md``, rendered from the contract Structs.

``python protocols/make_agent_vectors.py`` writes them between the document's markers and
``--check`` fails when they are stale, so the prose cannot drift from what both sides decode.
"""

from __future__ import annotations

import msgspec
import msgspec.inspect as mi

from hilbench.contracts import power
from hilbench.contracts.capabilities import Capabilities, ConfigureReply, Settings
from hilbench.contracts.nir import NirCapabilities
from hilbench.contracts.registry import core_workloads, workloads

BEGIN = "<!-- contract tables: generated from hilbench/contracts by make_agent_vectors.py -->"
END = "<!-- end of generated contract tables -->"

def sections() -> tuple[tuple[str, tuple[type[msgspec.Struct], ...]], ...]:
    """The document's sections: the handshake (with each workload's capability Structs), one
    per workload hilbench ships, then the power reports. A workload installed from another
    package documents its own contract: it is left out here, so the document is the same
    whatever else is installed."""
    shipped = core_workloads().values()
    handshake = (Capabilities, *(t for w in shipped for t in w.spec_handshake),
                 NirCapabilities, Settings, ConfigureReply)
    return (("Handshake and configure", handshake),
            *(section for w in shipped for section in w.spec),
            ("Power reports", (power.PowerReport, power.StatedAccuracy)))


def _not_shipped() -> set[str]:
    """Capability keys of workloads from other packages (not in this document)."""
    return set(workloads()) - set(core_workloads())


def _num(value: float) -> str:
    if isinstance(value, float) or abs(value) < 2**20:
        return f"{value:g}" if isinstance(value, float) else str(value)
    sign, size = ("−" if value < 0 else ""), abs(value)
    if size & (size - 1) == 0:
        return f"{sign}2^{size.bit_length() - 1}"
    if (size + 1) & size == 0:
        return f"{sign}2^{size.bit_length()}−1"
    return str(value)


def _bounds(t: mi.Type) -> str:
    parts = []
    for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<"),
                       ("min_length", "len ≥"), ("max_length", "len ≤")):
        value = getattr(t, attr, None)
        if value is not None:
            parts.append(f"{sign} {_num(value)}")
    return f" ({', '.join(parts)})" if parts else ""


_PLAIN: dict[type, str] = {mi.BoolType: "bool", mi.NoneType: "nil", mi.AnyType: "any"}
_BOUNDED: dict[type, str] = {mi.IntType: "int", mi.FloatType: "float", mi.StrType: "str"}


def type_name(t: mi.Type) -> str:
    """A field's type as the table shows it (msgpack terms, with its bounds)."""
    if isinstance(t, mi.Metadata):
        return type_name(t.type)
    if type(t) in _PLAIN:
        return _PLAIN[type(t)]
    if type(t) in _BOUNDED:
        return _BOUNDED[type(t)] + _bounds(t)
    if isinstance(t, mi.LiteralType):
        return " \\| ".join(f'`"{v}"`' if isinstance(v, str) else f"`{v}`" for v in t.values)
    if isinstance(t, mi.ListType | mi.TupleType | mi.VarTupleType):
        items = getattr(t, "item_type", None)
        inner = type_name(items) if items is not None else ", ".join(
            type_name(i) for i in t.item_types)
        return f"[{inner}]" + _bounds(t)
    if isinstance(t, mi.DictType):
        return f"map {type_name(t.key_type)} → {type_name(t.value_type)}"
    if isinstance(t, mi.StructType):
        return f"`{t.cls.__name__}`"
    if isinstance(t, mi.UnionType):
        return " \\| ".join(type_name(u) for u in t.types)
    return type(t).__name__


def struct_table(cls: type[msgspec.Struct]) -> str:
    """One Struct as a markdown table: key, type, required or its default."""
    info = mi.type_info(cls)
    assert isinstance(info, mi.StructType)
    lines = [f"**`{cls.__name__}`**" + (f" — {_doc(cls)}" if _doc(cls) else ""), "",
             "| key | type | required |", "|---|---|---|"]
    hidden = _not_shipped() if cls is Capabilities else set()
    if info.tag_field is not None:
        lines.append(f'| `{info.tag_field}` | `"{info.tag}"` | yes |')
    for field in info.fields:
        if field.encode_name in hidden:
            continue
        if field.required:
            need = "yes"
        else:
            default = field.default if field.default is not msgspec.NODEFAULT else (
                field.default_factory())
            need = f"no (`{msgspec.json.encode(default).decode()}`)"
        lines.append(f"| `{field.encode_name}` | {type_name(field.type)} | {need} |")
    return "\n".join(lines)


def _doc(cls: type) -> str:
    own = cls.__dict__.get("__doc__") or ""
    return " ".join(own.split()).replace("``", "`")


def render() -> str:
    """Every contract table, in the document's order, between the markers."""
    out = [BEGIN, "", "Unknown keys are refused in every map below (except the `detail`, "
           "`meta` and `solver_params` maps, which are free). Every reply may also "
           "carry `agent_elapsed_s` (float s, ≥ 0, informative).", ""]
    for title, classes in sections():
        out += [f"#### {title}", ""]
        for cls in classes:
            out += [struct_table(cls), ""]
    out.append(END)
    return "\n".join(out)


def replace_tables(document: str) -> str:
    """``document`` with its generated section replaced by :func:`render`'s."""
    start, end = document.index(BEGIN), document.index(END) + len(END)
    return document[:start] + render() + document[end:]
