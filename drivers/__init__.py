"""Device and instrument drivers, installed as ``hilbench_drivers`` and found by entry point."""
