"""Building ``java`` command lines for Hadoop classes and running the short-lived ones."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mimesisbench.errors import BackendError
from mimesisbench.hdfs.jars import HadoopJars, find_tool
from mimesisbench.hdfs.site import Layout

NAMENODE_CLASS = "org.apache.hadoop.hdfs.server.namenode.NameNode"
DATANODE_CLASS = "org.apache.hadoop.hdfs.server.datanode.DataNode"
DFSADMIN_CLASS = "org.apache.hadoop.hdfs.tools.DFSAdmin"
OIV_CLASS = "org.apache.hadoop.hdfs.tools.offlineImageViewer.OfflineImageViewerPB"

# JDK 17 closes these packages; Hadoop (WebHDFS, RPC, native I/O fallbacks) reflects into them.
ADD_OPENS = tuple(
    f"--add-opens=java.base/{package}=ALL-UNNAMED"
    for package in (
        "java.lang",
        "java.lang.reflect",
        "java.io",
        "java.net",
        "java.nio",
        "java.util",
        "java.util.concurrent",
        "java.util.concurrent.atomic",
        "sun.nio.ch",
        "sun.net.dns",
        "sun.net.util",
    )
)

# Short-lived tools (format, dfsadmin, oiv) start faster with these; daemons keep JVM defaults.
TOOL_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx512m")


def require_java() -> str:
    """The ``java`` executable, or :class:`EnvironmentProblem` if there is none on ``PATH``."""
    return find_tool("java", "run the Hadoop NameNode and DataNode (install a JDK 17)")


@dataclass(frozen=True)
class JavaLauncher:
    """Knows the ``java`` binary, the classpath (config dir first) and the log settings."""

    java: str
    jars: HadoopJars
    layout: Layout

    @classmethod
    def locate(cls, jars: HadoopJars, layout: Layout) -> JavaLauncher:
        return cls(java=require_java(), jars=jars, layout=layout)

    def command(
        self,
        main_class: str,
        args: Sequence[str] = (),
        *,
        log_file: str,
        jvm_options: Sequence[str] = (),
    ) -> list[str]:
        logs = self.layout.logs
        return [
            self.java,
            *ADD_OPENS,
            *jvm_options,
            f"-Dhadoop.log.dir={logs}",
            f"-Dhadoop.log.file={log_file}",
            f"-Dlog4j.configuration=file:{self.layout.log4j}",
            f"-Djava.io.tmpdir={self.layout.tmp}",
            "-Djava.net.preferIPv4Stack=true",
            # the audit log's timestamps carry no zone; UTC is what the trace parser assumes
            "-Duser.timezone=UTC",
            "-cp",
            self.jars.classpath(self.layout.conf),
            main_class,
            *args,
        ]

    def run_tool(
        self,
        main_class: str,
        args: Sequence[str],
        *,
        log_file: str,
        what: str,
        timeout_s: float = 300.0,
    ) -> str:
        """Run a short-lived Hadoop tool; its combined output is returned and kept in ``logs/``."""
        command = self.command(main_class, args, log_file=log_file, jvm_options=TOOL_OPTIONS)
        try:
            result = subprocess.run(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise BackendError(f"{what} did not finish within {timeout_s:.0f}s") from exc
        output = result.stdout or ""
        transcript = self.layout.logs / f"{Path(log_file).stem}.out"
        with open(transcript, "a", encoding="utf-8") as out:
            out.write(f"$ {main_class} {' '.join(args)}\n{output}\n")
        if result.returncode != 0:
            tail = "\n".join(output.strip().splitlines()[-10:])
            raise BackendError(f"{what} failed (exit {result.returncode}):\n{tail}")
        return output
