"""A managed single-node HDFS (NameNode + DataNode) from Hadoop jars on Maven Central.

Modules: ``jars`` (fetch/cache), ``config`` (what to start), ``site`` (config files, layout),
``java`` (command lines), ``ports``, ``processes`` (start/stop by pid + create time), ``state``
(the workdir's state file), ``probes`` (RPC/JMX readiness) and ``cluster`` (``LocalHdfs``).
"""

from mimesisbench.hdfs.cluster import HdfsStatus, LocalHdfs
from mimesisbench.hdfs.config import LocalHdfsConfig
from mimesisbench.hdfs.jars import DEFAULT_HADOOP_VERSION, HadoopJars, ensure_jars

__all__ = [
    "DEFAULT_HADOOP_VERSION",
    "HadoopJars",
    "HdfsStatus",
    "LocalHdfs",
    "LocalHdfsConfig",
    "ensure_jars",
]
