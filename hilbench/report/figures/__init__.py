"""Report figures (matplotlib on the Agg canvas; PNG and SVG, byte-identical per store)."""
