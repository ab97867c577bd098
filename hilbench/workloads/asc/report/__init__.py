"""The ASC workload's summary tables (NeuroBench's Table 6 layout) and report figures
(named by its plugin)."""
