"""Where a cassette sees a campaign's outside world: the hook is the orchestrator's
(:mod:`hilbench.orchestrator.tap`); this name stays importable for the cassette's modules until
they import it there (issue 32 moved it down so the orchestrator does not import the cassette).
"""

from __future__ import annotations

from hilbench.orchestrator.tap import Tap as Tap
from hilbench.orchestrator.tap import active as active
from hilbench.orchestrator.tap import installed as installed
