"""Joulescope JS220 as a power source with GPI markers, through ``pyjoulescope_driver``
(imported only when a real instrument is opened: ``pip install hilbench[joulescope]``)."""

from .driver import Joulescope220
from .settings import Js220Settings

__all__ = ["Joulescope220", "Js220Settings"]
