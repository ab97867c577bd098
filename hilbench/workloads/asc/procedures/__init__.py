"""The ASC workload's procedures (single stream, power windows, sample lists, on-board and
pipelined runs): its campaign table and runs, written against :mod:`hilbench.sdk`."""
