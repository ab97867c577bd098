"""The ASC workload's NIR graphs (the closed category): the packaged ASC spiking network as a
graph (:mod:`.graph`), the spike input it expects (:mod:`.inputs`), a ``.nir`` file as an ASC
model (:mod:`.model`) and a device's answers checked against the reference execution
(:mod:`.agreement`). The NIR file format and the reference executor are the core's
(:mod:`hilbench.nir`). Needs ``pip install 'hilbench[nir]'``."""
