"""Statistics over run results: time series, latency histograms, load curves, run comparison.

Everything a report or a comparison shows is computed here; ``mimesisbench.report`` only draws
and serialises what these functions return.
"""
