"""Benchmarks that print figures (speed, accuracy, memory); run with `hilbench bench NAME`."""
