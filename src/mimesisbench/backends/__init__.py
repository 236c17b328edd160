"""Backends: one protocol for every system under test (posix, memory, null, hdfs, ...)."""
