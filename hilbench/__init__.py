"""hilbench: hardware-in-the-loop measurement for NeuroBench system-track benchmarks."""

__version__ = "0.1.0"
