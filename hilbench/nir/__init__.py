"""NIR graphs (the ``nir`` package, 1.0.x) for the closed category: one model description that
every device runs.

- :mod:`hilbench.nir.graph`: read a ``.nir`` file handed in (checked), write one, and the
  graph's content hash — the identity that says two devices ran the same model;
- :mod:`hilbench.nir.reference`: the CPU reference execution (numpy; why not a library is in
  its docstring) with spike counts per output neuron and the predicted class per sample;
- :mod:`hilbench.nir.asc`: the packaged ASC spiking network as a graph, its metadata (classes,
  time step, the pre-processing its input expects) and the packaged test samples.

Needs ``pip install 'hilbench[nir]'`` (numpy and h5py; no torch).
"""
