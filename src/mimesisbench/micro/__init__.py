"""Micro-benchmarks: one metadata operation, N times, as fast as T closed-loop clients can.

In the style of Hadoop's NNThroughputBenchmark and of mdtest, on any backend
(``mimesisbench micro OP --files N --concurrency T --backend URL``).
"""
