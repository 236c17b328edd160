"""``LocalHdfs``: one NameNode and one DataNode on 127.0.0.1, run from a working directory.

The object is cheap to build and does nothing until :meth:`LocalHdfs.up`; everything it starts is
recorded (pid + create time) in the working directory's state file, so :meth:`LocalHdfs.down`
from another process (the CLI) stops exactly those processes and nothing else.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from mimesisbench.errors import BackendError, ConfigError, MimesisError
from mimesisbench.hdfs import cgroups
from mimesisbench.hdfs.config import LocalHdfsConfig
from mimesisbench.hdfs.jars import ensure_jars
from mimesisbench.hdfs.java import (
    DATANODE_CLASS,
    DFSADMIN_CLASS,
    NAMENODE_CLASS,
    OIV_CLASS,
    JavaLauncher,
    require_java,
)
from mimesisbench.hdfs.ports import choose_ports
from mimesisbench.hdfs.probes import (
    FS_STATE_QUERY,
    NameNodeHealth,
    jmx_url,
    namenode_health,
    port_open,
)
from mimesisbench.hdfs.processes import ProcessRecord, Started, start_daemon, stop
from mimesisbench.hdfs.site import HOST, Layout, Ports, write_site_files
from mimesisbench.hdfs.state import ClusterState, read_state, write_state

LOG = logging.getLogger(__name__)

CLUSTER_ID = "CID-mimesisbench"
ROLES = ("namenode", "datanode")
ImageFormat = Literal["Delimited", "XML"]
_PROCESSORS: dict[str, ImageFormat] = {"delimited": "Delimited", "xml": "XML"}


CGROUPS_KEY = "cgroups"


def _without_groups(extra: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in extra.items() if k != CGROUPS_KEY}


@dataclass(frozen=True)
class HdfsStatus:
    """What ``status`` reports: running or not, where to reach it, which processes."""

    running: bool
    workdir: Path
    url: str | None
    http_url: str | None
    jmx_url: str | None
    audit_log: Path
    hadoop_version: str | None
    processes: tuple[tuple[str, int, bool], ...]  # (role, pid, running)
    health: NameNodeHealth | None

    def to_json(self) -> dict[str, Any]:
        return {
            "running": self.running,
            "workdir": str(self.workdir),
            "url": self.url,
            "http_url": self.http_url,
            "jmx_url": self.jmx_url,
            "audit_log": str(self.audit_log),
            "hadoop_version": self.hadoop_version,
            "processes": [
                {"role": role, "pid": pid, "running": alive} for role, pid, alive in self.processes
            ],
            "fs_state": self.health.fs_state if self.health else None,
            "live_datanodes": self.health.live_datanodes if self.health else None,
        }


#: a checkpoint's name: a directory under the working directory's ``checkpoints``
_CHECKPOINT_NAME = re.compile(r"^(?!\.+$)[A-Za-z0-9._-]+$")


class LocalHdfs:
    """A single-node HDFS in ``config.workdir``; see the module docstring."""

    def __init__(self, config: LocalHdfsConfig) -> None:
        self.config = config
        self.layout = Layout(config.workdir.resolve())
        # Handles of daemons this object started in this process, polled so none stays a zombie.
        self._children: list[subprocess.Popen[bytes]] = []

    # ----------------------------------------------------------------- where to reach it
    @property
    def workdir(self) -> Path:
        return self.layout.workdir

    @property
    def audit_log(self) -> Path:
        return self.layout.audit_log

    @property
    def ports(self) -> Ports:
        state = read_state(self.layout.state_file)
        if state is None:
            raise BackendError(f"no HDFS has been started in {self.workdir}; run `mimesisbench hdfs up`")
        return state.ports

    @property
    def rpc_port(self) -> int:
        return self.ports.rpc

    @property
    def http_port(self) -> int:
        return self.ports.http

    @property
    def url(self) -> str:
        return f"hdfs://{HOST}:{self.rpc_port}"

    @property
    def http_url(self) -> str:
        return f"http://{HOST}:{self.http_port}"

    @property
    def jmx_url(self) -> str:
        return jmx_url(HOST, self.http_port, FS_STATE_QUERY)

    @property
    def jmx_servlet_url(self) -> str:
        """The JMX servlet (no query): what ``mimesisbench run --jmx`` samples."""
        return f"http://{HOST}:{self.http_port}/jmx"

    def has_state(self) -> bool:
        """True when ``up`` ever ran in this working directory (its state file exists)."""
        return self.layout.state_file.is_file()

    # ----------------------------------------------------------------- lifecycle
    def up(self) -> LocalHdfs:
        """Start (formatting on first use) and wait until ready; a running cluster is left as is."""
        self.layout.workdir.mkdir(parents=True, exist_ok=True)
        previous = read_state(self.layout.state_file)
        if previous is not None and previous.running():
            return self._adopt_running(previous)
        require_java()  # before a possibly long download
        jars = ensure_jars(self.config.hadoop_version)
        launcher = JavaLauncher.locate(jars, self.layout)
        ports = choose_ports(self._fixed_ports(), previous.ports.as_dict() if previous else None)
        write_site_files(self.layout, ports, self.config.namenode_settings(), self.config.audit)
        if not self.layout.is_formatted():
            self._format(launcher)
        limits = self.config.limits
        support = cgroups.probe() if limits.any else None
        if support is not None:
            cgroups.require(limits, support)  # exit 7 naming what is missing, before anything starts
        started_at = time.time()
        clock = time.monotonic()
        state = ClusterState(hadoop_version=jars.version, ports=ports, started_at=started_at)
        records: list[ProcessRecord] = []
        groups: list[cgroups.LimitGroup] = []
        try:
            for role, main_class, heap in (
                ("namenode", NAMENODE_CLASS, self.config.heap),
                ("datanode", DATANODE_CLASS, self.config.datanode_heap),
            ):
                group = None
                if support is not None:
                    group = cgroups.LimitGroup.create(self._group_name(role), limits, support, self.layout.workdir)
                    groups.append(group)
                    state = replace(state, extra={**state.extra, CGROUPS_KEY: [g.to_json() for g in groups]})
                    write_state(self.layout.state_file, state)
                started = self._start(launcher, role, main_class, heap, group)
                self._children.append(started.popen)
                records.append(started.record)
                state = replace(state, processes=tuple(records))
                write_state(self.layout.state_file, state)
            self._wait_ready(state)
        except BaseException:
            stop(records, self.config.stop_grace_s)
            self._reap_children()
            with contextlib.suppress(MimesisError):  # the start's own error is the one to report
                self._remove_groups(state)
            write_state(self.layout.state_file, replace(state, processes=(), extra=_without_groups(state.extra)))
            self._reap_children()
            raise
        state = replace(state, startup_seconds=round(time.monotonic() - clock, 2))
        write_state(self.layout.state_file, state)
        LOG.info("HDFS up at %s after %.1fs", self.url, state.startup_seconds)
        return self

    def down(self) -> list[ProcessRecord]:
        """Stop the processes recorded at start (never any other); returns those signalled."""
        state = read_state(self.layout.state_file)
        if state is None:
            self._reap_children()
            return []
        stopped = stop(state.processes, self.config.stop_grace_s)
        self._reap_children()
        self._remove_groups(state)
        write_state(self.layout.state_file, replace(state, processes=(), extra=_without_groups(state.extra)))
        return stopped

    def limit_groups(self) -> list[cgroups.LimitGroup]:
        """The cgroups the running daemons were started in (empty without limits)."""
        state = read_state(self.layout.state_file)
        return [] if state is None else [cgroups.LimitGroup.from_json(g) for g in state.extra.get(CGROUPS_KEY, [])]

    def _group_name(self, role: str) -> str:
        digest = hashlib.sha256(str(self.layout.workdir.resolve()).encode()).hexdigest()[:10]
        return f"mimesisbench-{role}-{digest}"

    def _remove_groups(self, state: ClusterState) -> None:
        for data in state.extra.get(CGROUPS_KEY, []):
            cgroups.LimitGroup.from_json(data).remove()

    def status(self) -> HdfsStatus:
        state = read_state(self.layout.state_file)
        if state is None:
            return HdfsStatus(False, self.workdir, None, None, None, self.audit_log, None, (), None)
        processes = tuple((r.role, r.pid, r.is_running()) for r in state.processes)
        running = bool(processes) and all(alive for _, _, alive in processes)
        health = namenode_health(HOST, state.ports.http) if running else None
        return HdfsStatus(
            running=running,
            workdir=self.workdir,
            url=f"hdfs://{HOST}:{state.ports.rpc}",
            http_url=f"http://{HOST}:{state.ports.http}",
            jmx_url=jmx_url(HOST, state.ports.http),
            audit_log=self.audit_log,
            hadoop_version=state.hadoop_version,
            processes=processes,
            health=health,
        )

    def is_running(self) -> bool:
        return self.status().running

    # ----------------------------------------------------------------- checkpoints to start from
    def checkpoint_dir(self, name: str) -> Path:
        if not _CHECKPOINT_NAME.match(name):
            raise ConfigError(f"checkpoint name {name!r}: letters, digits, '.', '_' and '-' only")
        return self.layout.workdir / "checkpoints" / name

    def checkpoint(self, name: str) -> Path:
        """Keep the cluster's state as it is now, to start again from it (``restore``): the cluster
        is stopped, the NameNode's name directory and the DataNode's data directory are copied to
        ``checkpoints/<name>`` (a copy made whole, then renamed into place), and it is started again.
        Stopped, the NameNode's image and edit log are consistent on disk."""
        target = self.checkpoint_dir(name)
        partial = target.with_name(target.name + ".partial")
        self.down()
        try:
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(self.layout.name_dir, partial / "name", symlinks=True)
            shutil.copytree(self.layout.data_dir, partial / "data", symlinks=True)
            shutil.rmtree(target, ignore_errors=True)
            partial.rename(target)
        finally:
            self.up()
        return target

    def restore(self, name: str) -> None:
        """Start from a checkpoint: stop, put its name and data directories back in place of the
        cluster's, and start with this object's settings (a run's own handler count, lock or audit
        log). Every run restored from one checkpoint starts from the same namespace."""
        source = self.checkpoint_dir(name)
        if not (source / "name").is_dir() or not (source / "data").is_dir():
            raise ConfigError(f"no checkpoint {name!r} in {source.parent}")
        self.down()
        for own, kept in ((self.layout.name_dir, source / "name"), (self.layout.data_dir, source / "data")):
            shutil.rmtree(own, ignore_errors=True)
            shutil.copytree(kept, own, symlinks=True)
        self.up()

    # ----------------------------------------------------------------- namespace images
    def save_namespace(self) -> Path:
        """Checkpoint the namespace into a new fsimage (safe mode enter, save, leave); returns it."""
        launcher = self._running_launcher()
        generic = ["-fs", self.url]

        def admin(*args: str) -> str:
            return launcher.run_tool(
                DFSADMIN_CLASS, [*generic, *args], log_file="dfsadmin.log", what=f"dfsadmin {' '.join(args)}"
            )

        admin("-safemode", "enter")
        try:
            admin("-saveNamespace")
        finally:
            admin("-safemode", "leave")
        return self.newest_fsimage()

    def newest_fsimage(self) -> Path:
        current = self.layout.name_dir / "current"
        images = [p for p in current.glob("fsimage_*") if p.name[len("fsimage_") :].isdigit()]
        if not images:
            raise BackendError(f"no fsimage in {current}; has the NameNode been formatted?")
        return max(images, key=lambda p: int(p.name[len("fsimage_") :]))

    def dump_image(self, processor: str = "Delimited", out_path: Path | str = "fsimage.tsv") -> Path:
        """Write the newest fsimage with the offline image viewer (``Delimited`` or ``XML``)."""
        chosen = _PROCESSORS.get(processor.lower())
        if chosen is None:
            raise ConfigError(f"image format must be Delimited or XML, got {processor!r}")
        state = read_state(self.layout.state_file)
        jars = ensure_jars(state.hadoop_version if state else self.config.hadoop_version)
        self.layout.logs.mkdir(parents=True, exist_ok=True)
        self.layout.tmp.mkdir(parents=True, exist_ok=True)
        launcher = JavaLauncher.locate(jars, self.layout)
        out = Path(out_path).resolve()
        out.parent.mkdir(parents=True, exist_ok=True)
        image = self.newest_fsimage()
        launcher.run_tool(
            OIV_CLASS,
            ["-p", chosen, "-i", str(image), "-o", str(out)],
            log_file="oiv.log",
            what=f"offline image viewer ({chosen}) on {image.name}",
        )
        if not out.is_file():
            raise BackendError(f"the offline image viewer wrote no {out}")
        return out

    # ----------------------------------------------------------------- internals
    def _fixed_ports(self) -> dict[str, int | None]:
        c = self.config
        return {
            "rpc": c.rpc_port,
            "http": c.http_port,
            "datanode": c.datanode_port,
            "datanode_http": c.datanode_http_port,
            "datanode_ipc": c.datanode_ipc_port,
        }

    def _format(self, launcher: JavaLauncher) -> None:
        LOG.info("formatting a new NameNode in %s", self.layout.name_dir)
        launcher.run_tool(
            NAMENODE_CLASS,
            ["-format", "-clusterid", CLUSTER_ID, "-force", "-nonInteractive"],
            log_file="format.log",
            what="formatting the NameNode",
        )
        if not self.layout.is_formatted():
            raise BackendError(f"formatting wrote no {self.layout.name_dir}/current/VERSION")

    def _reap_children(self) -> None:
        self._children = [popen for popen in self._children if popen.poll() is None]

    def _start(self, launcher: JavaLauncher, role: str, main_class: str, heap: str,
               group: cgroups.LimitGroup | None = None) -> Started:
        if role == "namenode":
            options = [f"-Xmx{heap}", f"-Xms{heap}", *self.config.jvm_options]
        else:  # the DataNode only serves the few blocks tests write: a light JVM starts faster
            options = [f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
        command = launcher.command(main_class, log_file=f"{role}.log", jvm_options=options)
        if group is not None:  # enter the groups first, then exec the JVM: limited from its first instruction
            command = group.entering(command)
        return start_daemon(role, command, self.layout.logs / f"{role}.out", self.layout.workdir)

    def _wait_ready(self, state: ClusterState) -> None:
        deadline = time.monotonic() + self.config.startup_timeout_s
        health: NameNodeHealth | None = None
        rpc_open = False
        while time.monotonic() < deadline:
            for record in state.processes:
                if not record.is_running():
                    raise BackendError(
                        f"the {record.role} exited during start-up.\n{self._log_tail(record.role)}"
                    )
            rpc_open = rpc_open or port_open(HOST, state.ports.rpc)
            if rpc_open:
                health = namenode_health(HOST, state.ports.http)
                if health is not None and health.ready:
                    return
            time.sleep(0.25)
        seen = health.describe() if health else "JMX not answering"
        raise BackendError(
            f"HDFS was not ready within {self.config.startup_timeout_s:.0f}s "
            f"(RPC port {'open' if rpc_open else 'closed'}, {seen}).\n{self._log_tail('namenode')}"
        )

    def _log_tail(self, role: str, lines: int = 20) -> str:
        for name in (f"{role}.log", f"{role}.out"):
            path = self.layout.logs / name
            if path.is_file() and path.stat().st_size > 0:
                text = path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
                shown = [line if len(line) <= 300 else line[:300] + " ..." for line in text]
                return f"last lines of {path}:\n" + "\n".join(shown)
        return f"(no log in {self.layout.logs})"

    def _adopt_running(self, state: ClusterState) -> LocalHdfs:
        alive = {record.role for record in state.running()}
        if alive != set(ROLES):
            raise BackendError(
                f"only {', '.join(sorted(alive))} of the HDFS in {self.workdir} is running; "
                "run `mimesisbench hdfs down` first"
            )
        self._wait_ready(state)
        return self

    def _running_launcher(self) -> JavaLauncher:
        state = read_state(self.layout.state_file)
        if state is None or len(state.running()) != len(ROLES):
            raise BackendError(f"the HDFS in {self.workdir} is not running; run `mimesisbench hdfs up`")
        jars = ensure_jars(state.hadoop_version)
        return JavaLauncher.locate(jars, self.layout)
