"""Estimators that fit a workload profile from a canonical event table (and a snapshot)."""
