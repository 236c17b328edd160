"""Rendering of run results: matplotlib figures, the HTML report, terminal tables (no statistics)."""
