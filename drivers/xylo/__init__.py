"""The `xylo` driver: SynSense Xylo Audio 2 through Rockpool (see README.md beside this file).

Importing this package needs only numpy; Rockpool, xylosim, Jax and samna are imported when a
back end is opened (:mod:`hilbench_drivers.xylo.vendor`).
"""

from hilbench_drivers.xylo.driver import XyloDriver

__all__ = ["XyloDriver"]
