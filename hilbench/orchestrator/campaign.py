"""Campaign files (TOML): which agents and instruments, which procedures, how many repetitions.

```toml
[campaign]
name = "qubo-cpu"
repetitions = 1
# connect_timeout_s = 5         handshake with each agent
# listen_timeout_s = 120        wait for agents that dial in (connects = true)
# timing_attempts = 3           runs of a unit while its timing cannot be verified
# timing_retry_wait_s = 0.5     wait before the third of them, doubled for each further one

[[agents]]
id = "cpu0"
driver = "cpu"
spawn = true                      # hilbench starts it on loopback; or address = "tcp://host:port"

[[qubo]]                          # one table per procedure run, named after the procedure
agent = "cpu0"
nodes = [10, 25, 50]
...
```
The complete, current format is the JSON Schema printed by ``hilbench campaign schema``
(editors use it to complete and check files); ``hilbench campaign check FILE`` validates a file
without starting anything. ``[campaign]``, ``[[agents]]`` and ``[[instruments]]`` are defined
here; every other table belongs to a procedure plugin (see :mod:`hilbench.orchestrator.procedure`),
which declares it as a pydantic model. Unknown keys are refused with the file, section and key
named, so a typo cannot silently change a run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from hilbench.orchestrator.campaign_errors import CampaignError, describe_errors
from hilbench.orchestrator.endpoints import check_endpoint
from hilbench.orchestrator.instruments import InstrumentSpec, check_instrument_settings
from hilbench.orchestrator.procedure import (
    CampaignTable,
    ProcedureError,
    TableContext,
    load_procedure,
    procedure_names,
    procedures,
)

__all__ = [
    "AgentSpec",
    "Campaign",
    "CampaignError",
    "campaign_schema",
    "load_campaign",
    "parse_campaign",
    "read_campaign_file",
]

CORE_TABLES = ("campaign", "agents", "instruments")
T = TypeVar("T")


@dataclass(frozen=True)
class AgentSpec:
    id: str
    driver: str
    address: str | None = None
    spawn: bool = False
    options: dict[str, str] = field(default_factory=dict)
    connects: bool = False  # the agent dials in (`hilbench agent --connect`) to [campaign] listen
    python: str | None = None  # interpreter for a spawned agent (absolute); None: this one
    key: str | None = None  # the agent's public key file (CurveZMQ); None: plaintext
    link_budget_ms: float = 0.0  # the network's share of a round trip, declared (reference_link)


# Waiting times and attempts: left out of the configuration hash and of a resume's comparison
# (:mod:`.resume`), so that raising a timeout or trying an unverified run once more does not
# start the campaign afresh.
PACING_KEYS = ("connect_timeout_s", "listen_timeout_s", "timing_attempts", "timing_retry_wait_s")


@dataclass(frozen=True)
class Campaign:
    name: str
    repetitions: int
    agents: tuple[AgentSpec, ...]
    tables: Mapping[str, tuple[CampaignTable, ...]]  # procedure name -> its validated tables
    instruments: tuple[InstrumentSpec, ...] = ()
    listen: str | None = None  # where agents with connects = true dial in
    connect_timeout_s: float = 5.0
    listen_timeout_s: float = 120.0
    key: str | None = None  # this orchestrator's secret key file (CurveZMQ)
    source: str = ""
    insecure: bool = False  # a keyless listener on an address other hosts reach, on purpose
    timing_attempts: int = 3  # runs of a unit while its timing cannot be verified
    timing_retry_wait_s: float = 0.5  # before the third such run, doubled for each further

    def listener_is_insecure(self) -> bool:
        """True when agents dial in over plaintext on an address other hosts can reach."""
        from hilbench.wire import keys

        return self.listen is not None and self.key is None and not keys.is_loopback(self.listen)

    def tables_of(self, procedure: str) -> tuple[CampaignTable, ...]:
        """The validated tables of one procedure (empty when the file has none)."""
        return tuple(self.tables.get(procedure, ()))

    def config_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "repetitions": self.repetitions,
            "agents": [asdict(a) for a in self.agents],
            "instruments": [asdict(i) for i in self.instruments],
            "tables": {
                name: [t.model_dump(mode="json") for t in tables]
                for name, tables in self.tables.items()
            },
            "listen": self.listen,
            "connect_timeout_s": self.connect_timeout_s,
            "listen_timeout_s": self.listen_timeout_s,
            "timing_attempts": self.timing_attempts,
            "timing_retry_wait_s": self.timing_retry_wait_s,
        }

    def config_hash(self) -> str:
        """Identifies 'the same campaign' for resuming: same agents, workloads, repetitions.
        Waiting times and attempts are left out: raising a timeout or trying an unverified run
        once more must not start the campaign afresh."""
        config = self.config_dict()
        for key in PACING_KEYS:
            config.pop(key)
        for agent in config["agents"]:
            agent.pop("key", None)  # new keys for the same agents: the same campaign
        blob = json.dumps(config, sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


# --- the core tables --------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class CampaignHead(_Strict):
    """``[campaign]``: the campaign's name and how it runs."""

    name: str | None = Field(None, description="default: the file's name without .toml")
    repetitions: int = Field(1, ge=1, description="every unit is run this many times")
    listen: str | None = Field(
        None, description='where agents with connects = true dial in, e.g. "tcp://0.0.0.0:5600"'
    )
    connect_timeout_s: float = Field(
        5.0, gt=0, description="how long to wait for an agent's handshake"
    )
    listen_timeout_s: float = Field(
        120.0, gt=0, description="how long to wait for an agent with connects = true to dial in"
    )
    key: str | None = Field(
        None,
        description="this orchestrator's secret key file (NAME.key_secret from `hilbench keys "
        "generate`), relative to the campaign file's folder; agents with a key are then reached "
        "over CurveZMQ",
    )
    timing_attempts: int = Field(
        3, ge=1, le=100,
        description="how many times a unit is run while its timing cannot be verified (a reply "
        "outside the link's measured bound, as on a loaded host): each such run is stored as "
        "'unverified', counted and never averaged; the unit is tried again up to this many runs",
    )
    timing_retry_wait_s: float = Field(
        0.5, ge=0, le=60,
        description="seconds to wait before running a unit again whose timing could not be "
        "verified twice in a row (the second attempt follows at once), doubled for each further "
        "attempt up to 30 s, so that the attempts outlast a spell of load on the host; 0: no "
        "wait",
    )
    insecure: bool = Field(
        False,
        description="allow `listen` without `key` on an address other hosts can reach "
        "(plaintext: any process there can pose as an agent; logged loudly). Without keys and "
        "without this, `listen` must be a loopback address, as for `hilbench agent --insecure`",
    )


class AgentTable(_Strict):
    """``[[agents]]``: one agent beside a device; give exactly one of address, spawn, connects."""

    id: str = Field(min_length=1)
    driver: str = Field(min_length=1, description="device driver (`hilbench drivers` lists them)")
    address: str | None = Field(None, description='a running agent, e.g. "tcp://host:5555"')
    spawn: bool = Field(False, description="hilbench starts the agent itself on loopback")
    connects: bool = Field(False, description="the agent dials in to [campaign] listen")
    python: str | None = Field(
        None,
        description="Python interpreter for a spawned agent (another environment), relative "
        "to the campaign file's folder or the working directory; default: hilbench's own",
    )
    options: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="driver options, passed as -o key=value"
    )
    key: str | None = Field(
        None,
        description="the agent's public key file (NAME.key), relative to the campaign file's "
        "folder; needs [campaign] key",
    )
    link_budget_ms: float = Field(
        0.0, ge=0, le=1000,
        description="the network's share of a round trip to an agent on another host (ms), "
        "declared by the bench operator: the agent's echoes may take up to 5 × those of the "
        "orchestrator's own reference responder on loopback plus this before the reference's "
        "figures bound its timed requests instead of the agent's own",
    )


class InstrumentTable(_Strict):
    """``[[instruments]]``: a power instrument measuring one agent's device."""

    id: str = Field(min_length=1)
    driver: str = Field(description="instrument driver (entry point in hilbench.instruments)")
    measures: str = Field(description="id of the agent whose device this instrument measures")
    resource: str | None = Field(None, description="VISA resource, e.g. TCPIP::host::5025::SOCKET")
    visa_library: str = ""
    simulate: str | None = Field(None, description="start the simulated meter with this model")
    noise_std_w: float = Field(0.0, ge=0)
    drift_ppm: float = Field(
        0.0, description="simulated meter only: its timebase runs this many ppm slow (+)"
    )
    gain_error: float = Field(
        0.0, gt=-1, lt=1,
        description="simulated meter only: a deliberate calibration error (0.03: reads 3 % high)"
    )
    settings: dict[str, Any] = Field(
        default_factory=dict, description="instrument settings; the driver checks them"
    )


def _file_model(registry: Mapping[str, Any]) -> type[BaseModel]:
    """The whole file as one model: the core tables plus one array per installed procedure."""
    fields: dict[str, Any] = {
        "campaign": (CampaignHead, Field(default_factory=CampaignHead)),
        "agents": (list[AgentTable], Field(min_length=1)),
        "instruments": (list[InstrumentTable], Field(default_factory=list)),
    }
    for name, plugin in registry.items():
        fields[name] = (
            list[plugin.table] | None,  # type: ignore[name-defined]
            Field(None, description=plugin.summary or None),
        )
    return create_model(
        "HilbenchCampaign",
        __config__=ConfigDict(extra="forbid", strict=True, title="hilbench campaign"),
        **fields,
    )


def campaign_schema() -> dict[str, Any]:
    """JSON Schema of a campaign file, including every installed procedure's table."""
    schema = _file_model(procedures()).model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["description"] = (
        "A hilbench campaign file (TOML). [campaign], [[agents]] and [[instruments]] are "
        "hilbench's own; every other table belongs to a procedure plugin."
    )
    return schema


# --- parsing ----------------------------------------------------------------------------------


def _validate(model: type[BaseModel], value: Any, source: str, section: str, ctx: Any = None):
    try:
        return model.model_validate(value, context=ctx)
    except ValidationError as exc:
        known = list(model.model_fields)
        raise CampaignError(describe_errors(exc, source, section, known)) from None


def _tables(data: dict[str, Any], key: str, source: str) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise CampaignError([f"{source} [{key}]: write each entry as [[{key}]] (array of tables)"])
    return value


class _Problems:
    """Collects every section's problems, so one check names all of them, not only the first."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def check(self, step: Callable[[], T], fallback: T) -> T:
        try:
            return step()
        except CampaignError as exc:
            self.lines.extend(exc.problems)
            return fallback


def _agents(raw: list, source: str, head: CampaignHead, base_dir: Path,
            problems: _Problems) -> list[AgentSpec]:
    """Each [[agents]] entry checked; the faults of every entry go to ``problems``."""
    agents: list[AgentSpec] = []
    for i, table in enumerate(raw):
        section = f"[[agents]] #{i + 1}"
        agent = problems.check(
            lambda table=table, section=section: _agent(
                _validate(AgentTable, table, source, section), f"{source} {section}", head,
                base_dir,
            ),
            None,
        )
        if agent is not None:
            agents.append(agent)
    return agents


def _workload_tables(data: dict[str, Any], name: str, source: str, context: TableContext,
                     problems: _Problems) -> tuple[CampaignTable, ...] | None:
    """The [[name]] tables checked by their procedure's model (None: no such procedure);
    a table repeated verbatim is refused (its units would run twice)."""
    try:
        model = load_procedure(name).table
    except ProcedureError as exc:
        problems.lines.append(f"{source} [[{name}]]: {exc}")
        return None
    valid = []
    raw = problems.check(lambda: _tables(data, name, source), [])
    for i, table in enumerate(raw):
        if table in raw[:i]:
            problems.lines.append(
                f"{source} [[{name}]] #{i + 1}: the same table as #{raw.index(table) + 1}, "
                "so each of its units would run twice (a result is stored once): remove it")
            continue
        valid.append(problems.check(
            lambda table=table, i=i: _validate(
                model, table, source, f"[[{name}]] #{i + 1}", context
            ),
            None,
        ))
    return tuple(t for t in valid if t is not None)


def parse_campaign(data: dict[str, Any], source: str = "<campaign>") -> Campaign:
    """Validate a campaign (as parsed from TOML); CampaignError names file, section and key,
    one line per problem, for every section of the file."""
    registry = procedure_names()
    base_dir = Path(source).parent if Path(source).suffix else Path.cwd()
    problems = _Problems()
    unknown = sorted(set(data) - set(CORE_TABLES) - set(registry))
    problems.lines.extend(
        f"{source}: unknown table [[{name}]]; campaign tables are "
        f"{[*CORE_TABLES, *sorted(registry)]} (procedures come from installed plugins)"
        for name in unknown
    )
    head = problems.check(
        lambda: _validate(CampaignHead, data.get("campaign", {}), source, "[campaign]"),
        CampaignHead(),
    )
    if head.listen is not None:
        problems.check(lambda: _listen(head, f"{source} [campaign] listen"), None)
    raw_agents = problems.check(lambda: _tables(data, "agents", source), [])
    agents = _agents(raw_agents, source, head, base_dir, problems)
    # Tables are checked against the ids written, even when an agent entry has other faults.
    ids = tuple(str(t["id"]) for t in raw_agents if isinstance(t, dict) and "id" in t)
    if not raw_agents:
        problems.lines.append(f"{source}: no [[agents]] given")
    elif len(set(ids)) != len(ids):
        problems.lines.append(f"{source} [[agents]]: agent ids must be unique, got {list(ids)}")
    context = TableContext(agent_ids=ids, base_dir=base_dir)
    tables = {name: _workload_tables(data, name, source, context, problems)
              for name in data if name not in CORE_TABLES and name not in unknown}
    tables = {name: found for name, found in tables.items() if found is not None}
    if not any(data.get(name) for name in registry):
        names = " or ".join(f"[[{n}]]" for n in sorted(registry))
        problems.lines.append(f"{source}: no workloads ({names}) given")
    instruments = problems.check(
        lambda: _instruments(_tables(data, "instruments", source), ids, source), ()
    )
    own_key = problems.check(
        lambda: _key_file(head.key, base_dir, f"{source} [campaign] key", secret=True), None
    )
    if problems.lines:
        raise CampaignError(problems.lines)
    return Campaign(
        name=head.name or Path(source).stem,
        repetitions=head.repetitions,
        agents=tuple(agents),
        tables=tables,
        instruments=instruments,
        listen=head.listen,
        connect_timeout_s=head.connect_timeout_s,
        listen_timeout_s=head.listen_timeout_s,
        key=own_key,
        source=source,
        insecure=head.insecure,
        timing_attempts=head.timing_attempts,
        timing_retry_wait_s=head.timing_retry_wait_s,
    )


def _endpoint(value: str, where: str, *, bind: bool) -> None:
    problem = check_endpoint(value, bind=bind)
    if problem:
        raise CampaignError([f"{where}: {problem}"])


def _listen(head: CampaignHead, where: str) -> None:
    """The listener's address, and the agent's rule for plaintext: loopback only, unless keys
    are given or the campaign says ``insecure = true``."""
    from hilbench.wire import keys

    assert head.listen is not None
    _endpoint(head.listen, where, bind=True)
    if head.key is None and not head.insecure and not keys.is_loopback(head.listen):
        raise CampaignError(
            [f"{where}: {head.listen!r} can be reached from other hosts, and without keys any "
             "process there could pose as an agent; give [campaign] key and each dialling "
             "agent's key (see `hilbench keys generate --help`), listen on loopback "
             '(e.g. "tcp://127.0.0.1:5600"), or accept the risk with [campaign] insecure = true']
        )


def _agent(table: AgentTable, where: str, head: CampaignHead, base_dir: Path) -> AgentSpec:
    if [table.spawn, table.connects, table.address is not None].count(True) != 1:
        raise CampaignError(
            [f'{where}: give one of address = "tcp://…", spawn = true or connects = true']
        )
    if table.connects and head.listen is None:
        raise CampaignError([f'{where}: connects = true needs [campaign] listen = "tcp://…"'])
    if table.address is not None:
        _endpoint(table.address, f"{where} address", bind=False)
    if table.spawn and table.python is None:
        # Spawned here with this interpreter, so its driver must be installed here too.
        from hilbench.agent.driver import available_drivers

        known = available_drivers()
        if table.driver not in known:
            raise CampaignError(
                [f"{where} driver: no driver named {table.driver!r} is installed here "
                 f"(installed: {', '.join(sorted(known)) or 'none'})"]
            )
    python = None
    if table.python is not None:
        if not table.spawn:
            raise CampaignError([f"{where} python: only a spawned agent (spawn = true) takes one"])
        python = _interpreter(table.python, base_dir, f"{where} python")
    options = {k: str(v) for k, v in table.options.items()}
    key = _agent_key(table, where, head, base_dir)
    return AgentSpec(
        table.id, table.driver, table.address, table.spawn, options, table.connects, python, key,
        table.link_budget_ms,
    )


def _agent_key(table: AgentTable, where: str, head: CampaignHead, base_dir: Path
               ) -> str | None:
    """The agent's public key file, where keys are in use and the agent can take one."""
    if table.key is not None:
        if head.key is None:
            raise CampaignError(
                [f"{where} key: an agent key needs [campaign] key (this orchestrator's secret key)"]
            )
        if table.spawn:
            raise CampaignError([f"{where} key: a spawned agent serves loopback without keys"])
        return _key_file(table.key, base_dir, f"{where} key", secret=False)
    if table.connects and head.key is not None:
        raise CampaignError(
            [f"{where} key: with [campaign] key, an agent that dials in needs its public key "
             "file (the listener admits no other)"]
        )
    return None


def _key_file(value: str | None, base_dir: Path, where: str, *, secret: bool) -> str | None:
    """The key file's resolved path, after checking it holds the key it should."""
    if value is None:
        return None
    from hilbench.wire import keys

    path = Path(value) if Path(value).is_absolute() else base_dir / value
    try:
        keys.load_pair(path) if secret else keys.load_public(path)
    except keys.KeyFileError as exc:
        raise CampaignError([f"{where}: {exc}"]) from None
    return str(path)


def _interpreter(value: str, base_dir: Path, where: str) -> str:
    path = Path(value).expanduser()
    candidates = [path] if path.is_absolute() else [base_dir / path, Path.cwd() / path]
    for candidate in candidates:
        if candidate.is_file():
            return str(candidate.absolute())
    tried = ", ".join(str(c) for c in candidates)
    raise CampaignError([f"{where}: no Python interpreter at {value!r} (looked for {tried})"])


def _instruments(
    tables: list[Any], agent_ids: tuple[str, ...], source: str
) -> tuple[InstrumentSpec, ...]:
    specs = []
    for i, raw in enumerate(tables):
        section = f"[[instruments]] #{i + 1}"
        where = f"{source} {section}"
        table = _validate(InstrumentTable, raw, source, section)
        if table.measures not in agent_ids:
            raise CampaignError(
                [f"{where} measures: {table.measures!r} is not one of {list(agent_ids)}"]
            )
        if table.resource is not None and table.simulate is not None:
            raise CampaignError(
                [f'{where}: give resource = "VISA resource" or simulate = "<power model>", '
                 "not both"]
            )
        if table.drift_ppm and table.simulate is None:
            raise CampaignError(
                [f"{where} drift_ppm: only the simulated meter (simulate = ...) takes a drift"]
            )
        if table.gain_error and table.simulate is None:
            raise CampaignError([f"{where} gain_error: only the simulated meter (simulate = "
                                 "...) takes a calibration error"])
        spec = InstrumentSpec(
            id=table.id,
            driver=table.driver,
            measures=table.measures,
            resource=table.resource,
            visa_library=table.visa_library,
            simulate=table.simulate,
            noise_std_w=table.noise_std_w,
            drift_ppm=table.drift_ppm,
            gain_error=table.gain_error,
            settings=dict(table.settings),
        )
        problem = check_instrument_settings(spec)
        if problem:
            raise CampaignError([f"{where} settings: {problem}"])
        specs.append(spec)
    ids = [s.id for s in specs]
    if len(set(ids)) != len(ids):
        raise CampaignError([f"{source} [[instruments]]: instrument ids must be unique, got {ids}"])
    return tuple(specs)


def load_campaign(path: str | Path) -> Campaign:
    """Read and validate a campaign TOML file; its size, encoding and nesting depth are checked
    before it is parsed (:func:`hilbench.bounded_parse.toml_document`)."""
    return read_campaign_file(path)[1]


def read_campaign_file(path: str | Path) -> tuple[bytes, Campaign]:
    """The campaign file's bytes as read once, and the campaign they hold (:func:`load_campaign`):
    what is queued or recorded is exactly what was checked."""
    from hilbench.bounded_parse import MAX_TOML_BYTES, InputError, read_bounded, toml_document

    path = Path(path)
    try:
        raw = read_bounded(path, MAX_TOML_BYTES, "campaign file")
        data = toml_document(raw, str(path))
    except InputError as exc:
        raise CampaignError([str(exc)]) from None
    return raw, parse_campaign(data, str(path))
