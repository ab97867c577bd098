"""NIR graphs (the ``nir`` package, 1.0.x) for the closed category: one model description that
every device runs.

- :mod:`hilbench.nir.graph`: read a ``.nir`` file handed in (checked), write one, and the
  graph's content hash — the identity that says two devices ran the same model;
- :mod:`hilbench.nir.reference`: the CPU reference execution (numpy; why not a library is in
  its docstring) with spike counts per output neuron and the predicted class per sample.

A workload's own graphs (what a graph's metadata must state, its packaged networks and their
inputs) live in its package (e.g. ``hilbench.workloads.asc.nir``).

Needs ``pip install 'hilbench[nir]'`` (numpy and h5py; no torch).
"""
