"""The stateless part of a cassette's instrument dialogues as a pyvisa-sim YAML file, for users
of that tool: each query whose answer never changed over the recording (identity, settings
queries, an empty error queue) becomes a dialogue with that answer, each command that was only
written (settings, triggers) one without an answer. Queries whose answers changed (readings,
status that moved) are stateful and left out; the file's comments list them.

Reads the ``visa-*.jsonl`` channels (format in :mod:`hilbench.cassette` and
``protocols/cassette.md``): ``{"op", "args", "result"}`` per call, a ``write`` followed by a
``read`` counting as one query."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hilbench.cassette.channels import CHANNELS
from hilbench.cassette.reader import channel_files, jsonl

READS = ("read",)
TEXT_QUERIES = ("query",)


@dataclass
class Dialogue:
    """One instrument's recorded conversation, reduced to what pyvisa-sim can replay."""

    resource: str
    options: dict[str, Any]
    answers: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    written: list[str] = field(default_factory=list)  # commands never answered, in order
    skipped: set[str] = field(default_factory=set)  # data calls pyvisa-sim cannot hold

    def stateless(self) -> list[tuple[str, str | None]]:
        """(command, answer or None) for every command whose answer never changed."""
        out: list[tuple[str, str | None]] = [
            (q, answers[0]) for q, answers in self.answers.items() if len(set(answers)) == 1]
        answered = set(self.answers)
        seen: set[str] = set()
        for q in self.written:
            if q not in answered and q not in seen:
                seen.add(q)
                out.append((q, None))
        return out

    def stateful(self) -> list[str]:
        return sorted(q for q, answers in self.answers.items() if len(set(answers)) > 1)


def read_dialogues(cassette: Path) -> list[Dialogue]:
    """Every recorded VISA resource's dialogue (read inside the cassette, each line bounded);
    ValueError when the cassette has none."""
    names = [name for name in channel_files(cassette)
             if name.split("/")[-1].startswith("visa-")]
    if not names:
        raise ValueError(f"{cassette} holds no VISA channel ({CHANNELS}/visa-*.jsonl): it was "
                         "recorded without instruments, or by a hilbench before channels")
    return [_dialogue(cassette, name) for name in names]


# complexity: a small state machine over a recorded VISA dialogue: one branch per operation
def _dialogue(cassette: Path, name: str) -> Dialogue:  # noqa: C901
    lines = [line for _, line in jsonl(cassette, name)]
    path = cassette / name
    if not lines or lines[0].get("channel") != "visa" \
            or not isinstance(lines[0].get("resource"), str):
        raise ValueError(f"{path}: no visa channel header on its first line")
    header = lines[0]
    options = header.get("options")
    dialogue = Dialogue(header["resource"], dict(options) if isinstance(options, dict) else {})
    pending: str | None = None  # a written command that a read may answer
    for line in lines[1:]:
        op, args = line.get("op"), line.get("args")
        args = args if isinstance(args, list) else []
        if "error" in line:
            dialogue.skipped.add(f"{op} {args[:1]} (raised {line['error']})")
            pending = None
            continue
        command = args[0] if args and isinstance(args[0], str) else None
        if op in TEXT_QUERIES and command is not None and isinstance(line.get("result"), str):
            dialogue.answers[command].append(line["result"])
        elif op == "write" and command is not None:
            if pending is not None:
                dialogue.written.append(pending)
            pending = command
            continue
        elif op in READS and pending is not None and isinstance(line.get("result"), str):
            dialogue.answers[pending].append(line["result"])
        elif op not in ("close", "clear"):
            dialogue.skipped.add(f"{op} {command or ''}".strip())
        if pending is not None and op not in READS:
            dialogue.written.append(pending)
        pending = None
    if pending is not None:
        dialogue.written.append(pending)
    return dialogue


def _eom_key(resource: str) -> str:
    """pyvisa-sim's ``eom`` key for a resource name: interface type and resource class."""
    parts = resource.split("::")
    interface = parts[0].rstrip("0123456789").upper()
    return f"{interface} {parts[-1].upper() if len(parts) > 1 else 'INSTR'}"


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON's string escapes are YAML's)."""
    return json.dumps(text)


def to_yaml(dialogues: list[Dialogue], source: str) -> str:
    out = [f"# pyvisa-sim dialogue exported by `hilbench cassette export-pyvisa-sim` from {source}",
           "# The stateless part of the recorded instrument dialogue: queries answered the same",
           "# every time, and commands that were only written. Open it with",
           '#   pyvisa.ResourceManager("THIS_FILE@sim")',
           'spec: "1.1"', "", "devices:"]
    resources = []
    for number, d in enumerate(dialogues):
        name = f"instrument{number}"
        read_term = d.options.get("read_termination", "\n")
        write_term = d.options.get("write_termination", "\n")
        stateful = d.stateful()
        out.append(f"  {name}:  # {d.resource}")
        if stateful:
            out.append("    # stateful, left out: " + ", ".join(stateful))
        for skipped in sorted(d.skipped):
            out.append(f"    # not held by pyvisa-sim, left out: {skipped}")
        out.append("    eom:")
        out.append(f"      {_q(_eom_key(d.resource))}: {{q: {_q(write_term)}, r: {_q(read_term)}}}")
        out.append("    dialogues:")
        for q, r in d.stateless():
            out.append(f"      - {{q: {_q(q)}" + (f", r: {_q(r)}}}" if r is not None else "}"))
        resources.append(f"  {_q(d.resource)}: {{device: {name}}}")
    out += ["", "resources:", *resources]
    return "\n".join(out) + "\n"


def export_pyvisa_sim(cassette: Path, out: Path) -> list[Dialogue]:
    """Write the YAML for every VISA resource of ``cassette`` to ``out``."""
    dialogues = read_dialogues(cassette)
    out.write_text(to_yaml(dialogues, str(cassette)), encoding="utf-8")
    return dialogues
