"""The QUBO workload's procedures (fixed timeout, time to solution, largest workload): its
campaign tables and runs, written against :mod:`hilbench.sdk`."""
