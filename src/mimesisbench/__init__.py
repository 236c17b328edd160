"""MimesisBench: a model-based namespace metadata benchmark (HDFS NameNode, POSIX, object stores)."""

__version__ = "0.1.0"
