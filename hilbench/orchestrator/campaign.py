"""Campaign files (TOML): which agents, which workloads, how many repetitions.

```toml
[campaign]
name = "qubo-cpu"
repetitions = 1

[[agents]]
id = "cpu0"
driver = "cpu"
spawn = true                      # hilbench starts it on loopback; or give address = "tcp://host:port"

[[qubo]]
agent = "cpu0"
scenario = "fixed_timeout"        # or "time_to_solution"
nodes = [10, 25, 50]
densities = [0.05]
seeds = [0, 1]
solvers = ["sa", "tabu"]
timeouts_s = [0.001, 0.01]        # fixed_timeout only
# gaps = [0.1, 0.05, 0.01]; max_time_s = 10   (time_to_solution only)
```
Unknown keys are refused with the file and key named, so a typo cannot silently change a run.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hilbench.orchestrator.instruments import InstrumentSpec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class CampaignError(ValueError):
    """The campaign file is not valid; the message names the file and the key."""


@dataclass(frozen=True)
class AgentSpec:
    id: str
    driver: str
    address: str | None = None
    spawn: bool = False
    options: dict[str, str] = field(default_factory=dict)
    connects: bool = False  # the agent dials in (`hilbench agent --connect`) to [campaign] listen


@dataclass(frozen=True)
class QuboSpec:
    agent: str
    scenario: str
    nodes: tuple[int, ...]
    densities: tuple[float, ...]
    seeds: tuple[int, ...]
    solvers: tuple[str, ...]
    timeouts_s: tuple[float, ...] = ()
    gaps: tuple[float, ...] = (0.1, 0.05, 0.01)
    max_time_s: float = 10.0


@dataclass(frozen=True)
class Campaign:
    name: str
    repetitions: int
    agents: tuple[AgentSpec, ...]
    qubo: tuple[QuboSpec, ...]
    instruments: tuple[InstrumentSpec, ...] = ()
    asc: tuple[Any, ...] = ()  # validated by hilbench.procedures.asc.parse_asc_tables
    listen: str | None = None  # where agents with connects = true dial in
    source: str = ""

    def config_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("source")
        return d

    def config_hash(self) -> str:
        """Identifies 'the same campaign' for resuming: same agents, workloads, repetitions."""
        blob = json.dumps(self.config_dict(), sort_keys=True).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


_CAMPAIGN_KEYS = {"name", "repetitions", "listen"}
_INSTRUMENT_KEYS = {
    "id",
    "driver",
    "measures",
    "resource",
    "visa_library",
    "simulate",
    "noise_std_w",
    "settings",
}
_AGENT_KEYS = {"id", "driver", "address", "spawn", "options", "connects"}
_QUBO_KEYS = {
    "agent",
    "scenario",
    "nodes",
    "densities",
    "seeds",
    "solvers",
    "timeouts_s",
    "gaps",
    "max_time_s",
}
SCENARIOS = ("fixed_timeout", "time_to_solution")


def _check_keys(where: str, table: dict[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise CampaignError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")


def _list(where: str, value: Any, kind: type) -> tuple:
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if kind is float and isinstance(item, int) and not isinstance(item, bool):
            item = float(item)
        if not isinstance(item, kind) or isinstance(item, bool):
            raise CampaignError(f"{where}: {item!r} is not a {kind.__name__}")
        out.append(item)
    if not out:
        raise CampaignError(f"{where}: must not be empty")
    return tuple(out)


def parse_campaign(data: dict[str, Any], source: str = "<campaign>") -> Campaign:
    """Validate a campaign table (as parsed from TOML)."""
    _check_keys(source, data, {"campaign", "agents", "qubo", "asc", "instruments"})
    head = data.get("campaign", {})
    _check_keys(f"{source} [campaign]", head, _CAMPAIGN_KEYS)
    name = str(head.get("name", Path(source).stem))
    repetitions = head.get("repetitions", 1)
    if not isinstance(repetitions, int) or repetitions < 1:
        raise CampaignError(f"{source} [campaign] repetitions: must be a positive integer")
    agents = []
    for i, table in enumerate(data.get("agents", [])):
        where = f"{source} [[agents]] #{i + 1}"
        _check_keys(where, table, _AGENT_KEYS)
        if "id" not in table or "driver" not in table:
            raise CampaignError(f"{where}: needs id and driver")
        spawn = bool(table.get("spawn", False))
        connects = bool(table.get("connects", False))
        address = table.get("address")
        if [spawn, connects, address is not None].count(True) != 1:
            raise CampaignError(
                f'{where}: give one of address = "tcp://…", spawn = true or connects = true'
            )
        if connects and "listen" not in head:
            raise CampaignError(f'{where}: connects = true needs [campaign] listen = "tcp://…"')
        options = {str(k): str(v) for k, v in table.get("options", {}).items()}
        agents.append(
            AgentSpec(str(table["id"]), str(table["driver"]), address, spawn, options, connects)
        )
    if not agents:
        raise CampaignError(f"{source}: no [[agents]] given")
    ids = [a.id for a in agents]
    if len(set(ids)) != len(ids):
        raise CampaignError(f"{source}: agent ids must be unique, got {ids}")
    workloads = []
    for i, table in enumerate(data.get("qubo", [])):
        where = f"{source} [[qubo]] #{i + 1}"
        _check_keys(where, table, _QUBO_KEYS)
        agent = table.get("agent", ids[0])
        if agent not in ids:
            raise CampaignError(f"{where}: agent {agent!r} is not one of {ids}")
        scenario = table.get("scenario", "fixed_timeout")
        if scenario not in SCENARIOS:
            raise CampaignError(f"{where}: scenario {scenario!r} is not one of {list(SCENARIOS)}")
        for key in ("nodes", "densities", "seeds", "solvers"):
            if key not in table:
                raise CampaignError(f"{where}: {key} is required")
        spec = QuboSpec(
            agent=agent,
            scenario=scenario,
            nodes=_list(f"{where} nodes", table["nodes"], int),
            densities=_list(f"{where} densities", table["densities"], float),
            seeds=_list(f"{where} seeds", table["seeds"], int),
            solvers=_list(f"{where} solvers", table["solvers"], str),
            timeouts_s=_list(f"{where} timeouts_s", table.get("timeouts_s", [1.0]), float),
            gaps=_list(f"{where} gaps", table.get("gaps", [0.1, 0.05, 0.01]), float),
            max_time_s=float(table.get("max_time_s", 10.0)),
        )
        if scenario == "fixed_timeout" and "timeouts_s" not in table:
            raise CampaignError(f"{where}: fixed_timeout needs timeouts_s")
        for d in spec.densities:
            if not 0 < d <= 1:
                raise CampaignError(f"{where} densities: {d} is not in (0, 1]")
        for n in spec.nodes:
            if n < 2:
                raise CampaignError(f"{where} nodes: {n} is below 2")
        for t in spec.timeouts_s:
            if not 1e-3 <= t <= 1e2:
                raise CampaignError(f"{where} timeouts_s: {t} is outside 1e-3 … 1e2 s")
        for s in spec.solvers:
            if s not in ("sa", "tabu"):
                raise CampaignError(f"{where} solvers: {s!r} is not one of ['sa', 'tabu']")
        workloads.append(spec)
    asc: tuple[Any, ...] = ()
    if data.get("asc"):
        from hilbench.procedures.asc import parse_asc_tables

        try:
            asc = tuple(parse_asc_tables(data["asc"], ids, source))
        except ValueError as exc:
            raise CampaignError(str(exc)) from None
    if not workloads and not asc:
        raise CampaignError(f"{source}: no workloads ([[qubo]] or [[asc]]) given")
    instruments = _parse_instruments(data.get("instruments", []), ids, source)
    return Campaign(
        name,
        repetitions,
        tuple(agents),
        tuple(workloads),
        instruments,
        asc,
        head.get("listen"),
        source,
    )


def _parse_instruments(
    tables: list[dict[str, Any]], agent_ids: list[str], source: str
) -> tuple[InstrumentSpec, ...]:
    specs = []
    for i, table in enumerate(tables):
        where = f"{source} [[instruments]] #{i + 1}"
        _check_keys(where, table, _INSTRUMENT_KEYS)
        for key in ("id", "driver", "measures"):
            if key not in table:
                raise CampaignError(f"{where}: {key} is required")
        if table["measures"] not in agent_ids:
            raise CampaignError(
                f"{where}: measures {table['measures']!r} is not one of {agent_ids}"
            )
        if "resource" in table and "simulate" in table:
            raise CampaignError(
                f'{where}: give resource = "VISA resource" or simulate = "<power model>", not both'
            )
        settings = table.get("settings", {})
        if not isinstance(settings, dict):
            raise CampaignError(f"{where}: settings must be a table")
        specs.append(
            InstrumentSpec(
                id=str(table["id"]),
                driver=str(table["driver"]),
                measures=str(table["measures"]),
                resource=table.get("resource"),
                visa_library=str(table.get("visa_library", "")),
                simulate=table.get("simulate"),
                noise_std_w=float(table.get("noise_std_w", 0.0)),
                settings=dict(settings),
            )
        )
    ids = [s.id for s in specs]
    if len(set(ids)) != len(ids):
        raise CampaignError(f"{source}: instrument ids must be unique, got {ids}")
    return tuple(specs)


def load_campaign(path: str | Path) -> Campaign:
    """Read and validate a campaign TOML file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CampaignError(f"cannot read campaign file {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CampaignError(f"{path} is not valid TOML: {exc}") from None
    return parse_campaign(data, str(path))
