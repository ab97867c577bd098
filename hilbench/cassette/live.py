"""`hilbench replay CASSETTE --against-live`: the identity part of a recorded dialogue sent to the
live bench, and where the answers differ. Read-only: an agent is greeted (``hello``: identity,
versions, capabilities) and nothing else; an instrument gets the queries the recording asked
that read identity or settings and always got the same answer (``*IDN?``, ``SYST:LFR?``...),
never a data read, an error-queue read or a write.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hilbench.cassette.channels import CHANNELS, SPAWNED
from hilbench.cassette.reader import channel_files, jsonl
from hilbench.cassette.replay import load_recorded_campaign

# Queries that read data or clear state: never sent to a live instrument.
DESTRUCTIVE = ("R?", "READ?", "FETC?", "DATA:REM?", "SYST:ERR?", "EVEN?", "*ESR?", "*STB?",
               "DATA:POIN?", "*OPC?")
IDN_FIELDS = ("manufacturer", "model", "serial number", "firmware")
# Welcome keys that differ between any two sessions of the same agent.
SESSION_KEYS = ("pid", "session")


@dataclasses.dataclass
class LiveOutcome:
    differences: list[str]
    compared: int  # answers compared
    unreachable: list[str]


def identity_queries(lines: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """``(command, answer)`` for each query of a VISA channel that reads identity or settings:
    one answer every time it was asked, inline text, not a data or status read."""
    answers: dict[str, set[str]] = {}
    for line in lines:
        if line.get("op") != "query" or "error" in line or not line.get("args") \
                or not isinstance(line["args"], list):
            continue
        command, result = line["args"][0], line.get("result")
        if not isinstance(command, str) or not isinstance(result, str):
            answers[str(command)] = {"", "<not text>"}
            continue
        answers.setdefault(command, set()).add(result.strip())
    return [(cmd, next(iter(seen))) for cmd, seen in answers.items()
            if len(seen) == 1 and not _destructive(cmd) and not next(iter(seen)).startswith("#")]


def _destructive(command: str) -> bool:
    """Not a plain identity or settings read: a data, status or error-queue read, a write, or a
    query with arguments (``SAMP:TIM? MIN`` answers for the settings made before it)."""
    head, _, args = command.strip().partition(" ")
    head = head.upper()
    return (any(head == d or head.endswith(":" + d) for d in DESTRUCTIVE)
            or not head.endswith("?") or bool(args))


def compare_idn(where: str, recorded: str, live: str) -> list[str]:
    old, new = [f.strip() for f in recorded.split(",")], [f.strip() for f in live.split(",")]
    if len(old) != 4 or len(new) != 4:
        return [f"{where}: *IDN? recorded {recorded!r}, live {live!r}"]
    return [f"{where}: {name} (*IDN?) recorded {a!r}, live {b!r}"
            for name, a, b in zip(IDN_FIELDS, old, new, strict=True) if a != b]


def compare_maps(where: str, recorded: Any, live: Any, path: str = "") -> list[str]:
    """One line per key path whose value differs."""
    if isinstance(recorded, dict) and isinstance(live, dict):
        lines = []
        for key in sorted(set(recorded) | set(live)):
            sub = f"{path}.{key}" if path else str(key)
            if key not in live:
                lines.append(f"{where}: {sub} recorded {recorded[key]!r}, live has none")
            elif key not in recorded:
                lines.append(f"{where}: {sub} live {live[key]!r}, not in the recording")
            else:
                lines += compare_maps(where, recorded[key], live[key], sub)
        return lines
    if json.dumps(recorded, sort_keys=True) != json.dumps(live, sort_keys=True):
        return [f"{where}: {path} recorded {recorded!r}, live {live!r}"]
    return []


def _channels(folder: Path, kind: str) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    for name in channel_files(folder):
        lines = [line for _, line in jsonl(folder, name)]
        if lines and name != f"{CHANNELS}/{SPAWNED}" and lines[0].get("channel") == kind:
            yield lines[0], lines[1:]


def against_live(folder: str | Path, agents: dict[str, str], visa: dict[str, str],
                 visa_library: str | None = None) -> LiveOutcome:
    """Greet each recorded agent and ask each recorded instrument its identity queries, live.

    ``agents`` maps an agent id to the address to reach (default: the campaign's; a spawned
    agent is started here as the campaign would); ``visa`` maps a recorded resource to the
    live one (default: the same)."""
    folder = Path(folder)
    campaign = load_recorded_campaign(folder)
    outcome = LiveOutcome([], 0, [])
    specs = {spec.id: spec for spec in campaign.agents}
    seen: set[str] = set()
    for header, lines in _channels(folder, "agent"):
        agent_id = str(header.get("agent"))
        if agent_id in seen:
            continue  # one greeting per agent
        seen.add(agent_id)
        welcome = next((m for m in lines if m.get("type") == "welcome"), None)
        if welcome is None:
            continue
        if not isinstance(welcome.get("body"), dict):
            outcome.differences.append(f"agent {agent_id}: the recorded welcome holds no "
                                       "identity to compare")
            continue
        _greet(agent_id, specs.get(agent_id), agents.get(agent_id), welcome["body"], outcome,
               campaign.key)
    library = {spec.resource: spec.visa_library for spec in campaign.instruments
               if spec.resource}
    for header, lines in _channels(folder, "visa"):
        recorded = str(header.get("resource"))
        options = header.get("options")
        header = {**header, "options": options if isinstance(options, dict) else {}}
        resource = visa.get(recorded, recorded)
        queries = identity_queries(lines)
        lib = visa_library if visa_library is not None else library.get(recorded, "@py")
        _ask(resource, lib or "", header.get("options") or {}, queries, outcome)
    return outcome


def _greet(agent_id: str, spec: Any, address: str | None, recorded: dict[str, Any],
           outcome: LiveOutcome, own_key: str | None) -> None:
    from hilbench.orchestrator.client import AgentClient, AgentUnreachable
    from hilbench.orchestrator.spawn import SpawnError, spawn_agent
    from hilbench.wire import keys

    spawned = None
    link_keys: dict[str, Any] = {}
    try:
        if address is None and spec is not None and spec.spawn:
            spawned = spawn_agent(spec)
            address, link_keys = spawned.address, spawned.client_keys()
        elif address is None and spec is not None and spec.address:
            address = spec.address
        if not spawned and spec is not None and spec.key and own_key:  # as the campaign does
            link_keys = {"key": keys.load_pair(own_key), "agent_key": keys.load_public(spec.key)}
        if address is None:
            outcome.unreachable.append(f"agent {agent_id}: no address (give --agent "
                                       f"{agent_id}=tcp://HOST:PORT)")
            return
        with AgentClient(address, agent_id, **link_keys) as client:
            live = dict(client.info)
    except (AgentUnreachable, SpawnError, OSError, keys.KeyFileError) as exc:
        outcome.unreachable.append(f"agent {agent_id}: {exc}")
        return
    finally:
        if spawned is not None:
            spawned.stop()
    # A spawned agent's key is made afresh per campaign: its fingerprint is no identity.
    ignore = SESSION_KEYS + (("key_fingerprint",) if spec is not None and spec.spawn else ())
    old = {k: v for k, v in recorded.items() if k not in ignore}
    new = {k: v for k, v in live.items() if k not in ignore}
    outcome.compared += 1
    outcome.differences += compare_maps(f"agent {agent_id} (hello)", old, new)


def _ask(resource: str, library: str, options: dict[str, Any],
         queries: list[tuple[str, str]], outcome: LiveOutcome) -> None:
    try:
        import pyvisa
    except ImportError:
        outcome.unreachable.append(f"VISA {resource}: pyvisa is not installed")
        return
    try:
        rm = pyvisa.ResourceManager(library)
    except (OSError, ValueError, pyvisa.errors.Error) as exc:
        outcome.unreachable.append(f"VISA {resource}: library {library!r}: {exc}")
        return
    try:
        with contextlib.closing(rm.open_resource(resource, **options)) as inst:
            for command, answer in queries:
                live = str(inst.query(command)).strip()
                outcome.compared += 1
                where = f"VISA {resource}"
                if command.strip().upper() == "*IDN?":
                    outcome.differences += compare_idn(where, answer, live)
                elif live != answer:
                    outcome.differences.append(f"{where}: {command!r} recorded {answer!r}, "
                                               f"live {live!r}")
    except (OSError, ValueError, pyvisa.errors.Error) as exc:
        outcome.unreachable.append(f"VISA {resource}: {exc}")
    finally:
        with contextlib.suppress(Exception):
            rm.close()
