"""A managed single-node HDFS (NameNode + DataNode) from Hadoop jars on Maven Central."""
