"""MimesisBench: a model-based namespace metadata benchmark (HDFS NameNode, POSIX mounts)."""

__version__ = "0.1.0"
