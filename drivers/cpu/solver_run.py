"""What one CPU solver run returns from inside the timed region: typed, so the driver builds
its reply from fields rather than from the keys of a dict."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class SolverRun:
    """The best state, its cost computed inside the timed region (the cost check is part of
    the system under test), the solver's own time apart from the check's, how it searched
    (``solver_params``) and what else it says (``detail``: SA's and Tabu's read count)."""

    cost: int
    state: np.ndarray
    solver_s: float
    cost_check_s: float
    solver_params: dict[str, Any] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)
