"""Engines: where workers run (local processes by default; Ray for many nodes)."""
