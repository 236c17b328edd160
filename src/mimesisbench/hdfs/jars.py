"""Hadoop jars from Maven Central, fetched once with the machine's ``mvn`` into a local cache.

The cache is ``~/.cache/mimesisbench/hadoop-<version>/`` (the base directory can be moved with
the ``MIMESISBENCH_CACHE`` environment variable). A fetch writes a small pom there, runs
``mvn dependency:copy-dependencies`` into ``lib/`` and writes a marker file last, so an
interrupted fetch is simply redone and a complete one is reused.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mimesisbench.errors import BackendError, EnvironmentProblem

DEFAULT_HADOOP_VERSION = "3.4.3"
"""Newest 3.4.x on Maven Central when this was written (3.4.0 .. 3.4.3 all resolve)."""

CACHE_ENV = "MIMESISBENCH_CACHE"
MARKER = "COMPLETE"
FETCH_TIMEOUT_S = 1800.0

_POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 http://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.mimesisbench</groupId>
  <artifactId>hadoop-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-common</artifactId>
      <version>{version}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-hdfs</artifactId>
      <version>{version}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-hdfs-client</artifactId>
      <version>{version}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.hadoop</groupId><artifactId>hadoop-hdfs</artifactId>
      <version>{version}</version><classifier>tests</classifier>
    </dependency>
  </dependencies>
</project>
"""


@dataclass(frozen=True)
class HadoopJars:
    """A complete, cached set of Hadoop jars for one version."""

    version: str
    directory: Path

    @property
    def lib(self) -> Path:
        return self.directory / "lib"

    def jars(self) -> list[Path]:
        return sorted(self.lib.glob("*.jar"))

    def classpath(self, *first: Path) -> str:
        """The Java classpath: ``first`` entries (e.g. a config directory), then every jar."""
        return os.pathsep.join([str(p) for p in first] + [str(j) for j in self.jars()])

    def size_bytes(self) -> int:
        return sum(j.stat().st_size for j in self.jars())


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """The base cache directory (``$MIMESISBENCH_CACHE`` or ``~/.cache/mimesisbench``)."""
    env = os.environ if environ is None else environ
    configured = env.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "mimesisbench"


def jar_dir(version: str, root: Path | None = None) -> Path:
    return (root if root is not None else cache_root()) / f"hadoop-{version}"


def cached_jars(version: str = DEFAULT_HADOOP_VERSION, root: Path | None = None) -> HadoopJars | None:
    """The cached jars of ``version`` if a complete fetch is present, else ``None``."""
    directory = jar_dir(version, root)
    if (directory / MARKER).is_file() and any((directory / "lib").glob("hadoop-hdfs-*.jar")):
        return HadoopJars(version, directory)
    return None


def find_tool(name: str, purpose: str) -> str:
    """The absolute path of an executable on ``PATH``, or :class:`EnvironmentProblem`."""
    found = shutil.which(name)
    if found is None:
        raise EnvironmentProblem(f"'{name}' is not on PATH; it is needed to {purpose}")
    return found


def ensure_jars(
    version: str = DEFAULT_HADOOP_VERSION,
    root: Path | None = None,
    *,
    timeout_s: float = FETCH_TIMEOUT_S,
) -> HadoopJars:
    """Return the cached jars of ``version``, fetching them from Maven Central first if needed.

    Concurrent callers (two test sessions) are serialised by a lock file in the cache directory.
    """
    present = cached_jars(version, root)
    if present is not None:
        return present
    directory = jar_dir(version, root)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        present = cached_jars(version, root)  # another process may have finished meanwhile
        if present is not None:
            return present
        _fetch(version, directory, timeout_s)
    return HadoopJars(version, directory)


def _fetch(version: str, directory: Path, timeout_s: float) -> None:
    mvn = find_tool("mvn", "download the Hadoop jars from Maven Central (apt-get install maven)")
    (directory / MARKER).unlink(missing_ok=True)
    lib = directory / "lib"
    if lib.exists():
        shutil.rmtree(lib)
    pom = directory / "pom.xml"
    pom.write_text(_POM.format(version=version), encoding="utf-8")
    command = [
        mvn,
        "-q",
        "-B",
        "-f",
        str(pom),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={lib}",
        "-DincludeScope=runtime",
    ]
    log = directory / "mvn.log"
    started = time.monotonic()
    try:
        with open(log, "w", encoding="utf-8") as out:
            result = subprocess.run(
                command, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s, check=False
            )
    except subprocess.TimeoutExpired as exc:
        raise BackendError(f"fetching Hadoop {version} jars took over {timeout_s:.0f}s; see {log}") from exc
    if result.returncode != 0:
        tail = "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:])
        raise BackendError(
            f"mvn could not fetch Hadoop {version} (exit {result.returncode}); is the version on "
            f"Maven Central and the network up? Last lines of {log}:\n{tail}"
        )
    if not any(lib.glob("hadoop-hdfs-*-tests.jar")):
        raise BackendError(f"mvn finished but {lib} holds no hadoop-hdfs tests jar; see {log}")
    elapsed = time.monotonic() - started
    jars = HadoopJars(version, directory)
    (directory / MARKER).write_text(
        f"version={version}\njars={len(jars.jars())}\nbytes={jars.size_bytes()}\nseconds={elapsed:.1f}\n",
        encoding="utf-8",
    )
