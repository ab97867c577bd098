"""The `loihi` driver: QUBO on Intel Loihi 2 through Lava (see README.md beside this file)."""

from hilbench_drivers.loihi.driver import LoihiDriver

__all__ = ["LoihiDriver"]
