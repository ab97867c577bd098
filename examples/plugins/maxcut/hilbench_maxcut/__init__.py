"""MaxCut as a hilbench workload plugin: split a graph's nodes in two so that as many edges
as possible cross. The graphs are the QUBO workloads' (NeuroBench's ``gnm_random_graph`` for
size, density and seed); the target is the exact optimum for small graphs (n ≤ 20, every
partition tried) and a stated reference above (the best of many local-search restarts)."""
