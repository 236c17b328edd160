"""Synthesis: namespace and schedule generation from a workload profile and a seed."""
