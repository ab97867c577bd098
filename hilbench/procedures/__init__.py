"""Benchmark procedures shipped with hilbench (``qubo``, ``asc``), registered like any third
party's: entry points in the ``hilbench.procedures`` group, each a
:class:`hilbench.orchestrator.procedure.Procedure` whose campaign table is a pydantic model
(``qubo_table.py``, ``asc_table.py``). The orchestrator never imports this package.
"""

from __future__ import annotations

from hilbench.sdk import CampaignTable, Procedure, Unit

__all__ = ["CampaignTable", "Procedure", "Unit"]
