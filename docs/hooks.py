"""MkDocs hook: the campaign file reference, generated at build time from the campaign JSON
Schema that `hilbench campaign schema` prints (hilbench.orchestrator.campaign.campaign_schema),
so the page cannot drift from the code."""

from __future__ import annotations

import json
from typing import Any

from mkdocs.structure.files import File, Files

PAGE = "reference/campaign-schema.md"


def _type(spec: dict[str, Any]) -> str:
    if "$ref" in spec:
        name = spec["$ref"].rsplit("/", 1)[-1]
        return f"[{name}](#{name.lower()})"
    if "anyOf" in spec:
        return " or ".join(_type(s) for s in spec["anyOf"])
    if "allOf" in spec:
        return " and ".join(_type(s) for s in spec["allOf"])
    if "enum" in spec:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in spec["enum"])
    if "const" in spec:
        return f"`{json.dumps(spec['const'])}`"
    kind = spec.get("type", "any")
    if kind == "array":
        return f"array of {_type(spec.get('items', {}))}"
    if kind == "object" and "additionalProperties" in spec and isinstance(
            spec["additionalProperties"], dict):
        return f"table of {_type(spec['additionalProperties'])}"
    return str(kind)


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _table(title: str, spec: dict[str, Any], level: str) -> list[str]:
    lines = [f"{level} {title}", ""]
    if spec.get("description"):
        lines += [_cell(spec["description"]), ""]
    props = spec.get("properties", {})
    if not props:
        return lines
    required = set(spec.get("required", []))
    lines += ["| key | type | default | description |", "|---|---|---|---|"]
    for key, prop in props.items():
        default = "required" if key in required else (
            f"`{json.dumps(prop['default'])}`" if "default" in prop else "")
        lines.append(f"| `{key}` | {_cell(_type(prop))} | {_cell(default)} | "
                     f"{_cell(prop.get('description', ''))} |")
    return [*lines, ""]


def campaign_reference() -> str:
    """The page: the top-level tables, then every definition the schema refers to."""
    from hilbench.orchestrator.campaign import campaign_schema

    schema = campaign_schema()
    lines = ["# Campaign file reference", "",
             "Generated at build time from the campaign JSON Schema (`hilbench campaign schema "
             "--out campaign.schema.json` writes the same schema for an editor). Every table and "
             "key a campaign file may hold, including each installed procedure's table; how "
             "they are used is on [Campaign files](../campaign-files.md).", ""]
    lines += _table("Top level", schema, "##")
    for name, spec in sorted(schema.get("$defs", {}).items()):
        lines += _table(name, spec, "##")
    return "\n".join(lines) + "\n"


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, PAGE, content=campaign_reference()))
    return files
