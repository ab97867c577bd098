"""ST LPM01A (PowerShield, the MLPerf Tiny power monitor) as a power source with ``eventsrc``
markers, over its serial protocol (pyserial is imported only when a port is opened:
``pip install hilbench[lpm01a]``)."""

from .driver import Lpm01a
from .settings import Lpm01aSettings

__all__ = ["Lpm01a", "Lpm01aSettings"]
