"""Run directories, raw samples, aggregation into summaries and time series."""
