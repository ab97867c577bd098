"""What one agent link costs, measured: now :mod:`hilbench.wire.link_probe`, below both the
orchestrator and the contracts' device handles (issue 32). These names stay importable from
here until their users import them there."""

from __future__ import annotations

from hilbench.wire.link_probe import FRESH_ECHOES as FRESH_ECHOES
from hilbench.wire.link_probe import LONG_COMMAND_S as LONG_COMMAND_S
from hilbench.wire.link_probe import MIN_ECHOES as MIN_ECHOES
from hilbench.wire.link_probe import MIN_PAYLOAD_BYTES as MIN_PAYLOAD_BYTES
from hilbench.wire.link_probe import POOL_ECHOES as POOL_ECHOES
from hilbench.wire.link_probe import QUANTILE as QUANTILE
from hilbench.wire.link_probe import Echo as Echo
from hilbench.wire.link_probe import EchoPool as EchoPool
from hilbench.wire.link_probe import LinkBound as LinkBound
from hilbench.wire.link_probe import payload_bucket as payload_bucket
