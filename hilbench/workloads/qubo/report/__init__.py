"""The QUBO workload's summary tables and report figures (named by its plugin)."""
