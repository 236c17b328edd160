"""Calibrating the simulated NameNode on a real one: ``mimesisbench simnn calibrate``.

After a warm-up pass over the operations and loads (a fresh JVM interprets before it compiles),
each operation is measured with closed-loop micro-benchmarks on the managed NameNode (``hdfs up``)
at three loads (1, 8 and 64 clients: ``sim.fit`` says why three), ``repeat`` times round after
round, each figure the median of its runs: the client's CPU per operation (this
process), the NameNode's (its process, over the same batch), the host's (every core's busy time:
what neither process accounts for, the kernel's network work above all, is counted with the
NameNode's), throughput and latency. The managed cluster's own settings (handlers, lock fairness, from
its ``hdfs-site.xml``), the host's cores and the edit-log sync time become the simulated server's
settings. The sync time is the NameNode's own (``monitoring.edit_log``: its ``NameNodeActivity``
bean times every sync; the median over the write measurements of each one's mean); where its JMX
servlet shows none, a 128-byte write and ``fdatasync`` in the cluster's working directory, on the
file system of its edits (``sync_seconds``), which misses the edit-log thread's wake-up after the
I/O: 80-120 us here, where the NameNode timed 160-240. The edit log's own thread (Hadoop 3's
``FSEditLogAsync``) is read with the NameNode's other threads (``run.probes.thread_groups``): its
CPU per edit becomes the model's ``edit_s`` (``measure_edit_thread``). ``sim.fit`` then fits each operation's
costs to its three loads; the result is written as ``calibration.json`` in the output directory,
with the measurements.

``merge_calibrations`` (``mimesisbench simnn merge``) fits one calibration to several: each
measurement the median of theirs. Calibrations made on fresh clusters an hour apart differ by more
than one calibration's rounds do (a fresh JVM compiles differently each time), and the simulated
server's predictions with them (docs/simnn.md: two sessions' calibrations predicted the same run
36 % and 4 % fast; merged, with an earlier model, sessions 7-9's runs came out within 18.6 % on
average, against 25.9 % with each alone).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np
from scipy.optimize import nnls

from mimesisbench.backends.simnn import CALIBRATION_FILE, calibration_file
from mimesisbench.errors import ConfigError, InputError
from mimesisbench.hdfs.site import Layout
from mimesisbench.hdfs.state import managed_state
from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import OPERATIONS, MicroConfig
from mimesisbench.monitoring.edit_log import REFRESH_WAIT_S, SyncWatch
from mimesisbench.monitoring.jmx import managed_jmx_url
from mimesisbench.results.hostinfo import host_facts, versions
from mimesisbench.run.probes import daemon_cpu_s, thread_groups
from mimesisbench.schedule.format import OpCode
from mimesisbench.sim.fit import OpMeasurement, calibrate
from mimesisbench.sim.model import READ_LOCK_SHARE, Calibration, ServerSettings, edit_syncs, edits_of

DEFAULT_OPS = ("fileStatus", "open", "listStatus", "create", "mkdirs", "rename", "delete")
SYNC_SAMPLES = 200
#: a measurement's syncs, as the NameNode timed them, count when there are at least this many
MIN_SYNCS = 100
#: the NameNode's edit-log thread, by its name as ``run.probes.thread_groups`` groups it (Hadoop 3's
#: asynchronous edit logging: ``FSEditLogAsync``)
EDIT_THREAD = "FSEditLogAsync"
#: the writes whose micro-benchmark makes no files first: the NameNode's syncs over it are its own
EDIT_FIT_OPS = (OpCode.CREATE, OpCode.MKDIRS)
#: the share of the host's busy CPU stolen over a measured batch beyond which the calibration
#: warns: the host ran someone else on this machine's cores, and the NameNode's fitted costs carry
#: that time (session 66: 24 % over a calibration, 48 % over its worst batch; its model ran the
#: built-in profile's runs 21-34 % slow)
STEAL_WARN_SHARE = 0.10


def site_settings(layout: Layout) -> dict[str, str]:
    """The managed cluster's ``hdfs-site.xml`` (the file this tool wrote), as a dict."""
    path = layout.conf / "hdfs-site.xml"
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError) as exc:
        raise ConfigError(f"cannot read the managed cluster's {path} ({exc})") from None
    return {(p.findtext("name") or "").strip(): (p.findtext("value") or "").strip() for p in root.iter("property")}


def median_measurement(runs: list[OpMeasurement]) -> OpMeasurement:
    """One measurement whose every figure is the median of the runs' (one operation and load)."""
    def med(name: str) -> float:
        return float(np.median([getattr(m, name) for m in runs]))

    def tail(name: str) -> float:  # 0 (not recorded) unless every run recorded it
        return med(name) if all(getattr(m, name) > 0 for m in runs) else 0.0

    return replace(runs[0], ops_per_s=med("ops_per_s"), mean_s=med("mean_s"), p50_s=med("p50_s"), p99_s=med("p99_s"),
                   client_cpu_s=med("client_cpu_s"), server_cpu_s=med("server_cpu_s"), p90_s=tail("p90_s"),
                   p999_s=tail("p999_s"))


def rounds_record(groups: list[list[OpMeasurement]]) -> list[dict[str, Any]]:
    """Each group's throughput and p99, one value per round in the order they ran, for
    ``source.rounds`` (``sim.fit_check.round_spreads`` flags the figures whose rounds disagree):
    a group is one operation and load measured round after round (or, merged, one measurement
    per calibration)."""
    return [{"op": runs[0].op.label, "clients": runs[0].concurrency,
             "ops_per_s": [round(m.ops_per_s, 1) for m in runs],
             "p99_ms": [round(m.p99_s * 1e3, 4) for m in runs]} for runs in groups]


def host_busy_cpu_s() -> tuple[float, float]:
    """The host's busy CPU seconds so far, every core (psutil: all but idle and iowait), and of
    them the seconds stolen (a virtual machine's cores runnable while the hypervisor ran something
    else: 0 on bare metal). The calibration charges the steal to the NameNode's CPU like the rest
    of the host's other work; recorded apart, it says how busy the machine under the VM was."""
    import psutil

    t = psutil.cpu_times()
    busy = ("user", "nice", "system", "irq", "softirq", "steal")  # guest time is inside user already
    return float(sum(getattr(t, name, 0.0) for name in busy)), float(getattr(t, "steal", 0.0))


def sync_seconds(directory: Path, samples: int = SYNC_SAMPLES) -> float:
    """The median time of one edit-log sync as the NameNode makes it, in ``directory``: 128 bytes
    written into a file filled beforehand (the NameNode preallocates its edits file in 1 MB
    chunks) and ``fdatasync`` (``FileChannel.force(false)``). Appending and ``fsync`` would also
    write the file's size and times: half again as long here (125 against 80 us)."""
    times = []
    datasync = getattr(os, "fdatasync", os.fsync)  # not on every platform
    with tempfile.NamedTemporaryFile(dir=directory, prefix=".mimesisbench-sync-") as handle:
        fd = handle.fileno()
        os.write(fd, b"\xff" * max(1 << 20, 128 * samples))
        os.fsync(fd)
        for k in range(samples):
            t0 = time.perf_counter()
            os.pwrite(fd, b"x" * 128, 128 * k)
            datasync(fd)
            times.append(time.perf_counter() - t0)
    return float(np.median(times))


def namenode_sync_s(per_measurement: list[dict[str, Any]]) -> float | None:
    """The edit-log sync time as the NameNode timed it: the median over the write measurements
    of each one's mean (each load counts once; the mean over every sync would be the light
    loads', which sync most often and on the idlest host), None when none saw ``MIN_SYNCS``."""
    means = [m["mean_s"] for m in per_measurement if m["syncs"] >= MIN_SYNCS]
    return float(np.median(means)) if means else None


def measure_and_fit(
    backend_url: str,
    hdfs_workdir: str,
    *,
    ops: tuple[str, ...] = DEFAULT_OPS,
    files: int = 10_000,
    loads: tuple[int, ...] = (1, 8, 64),
    client: str = "auto",
    lock_share: float = READ_LOCK_SHARE,
    fit_dispatch: bool = True,
    repeat: int = 3,
    warmup: bool = True,
    announce: Any = None,
    sync_watch: bool = True,
) -> tuple[Calibration, list[dict[str, Any]]]:
    """Measure every operation on the managed NameNode behind ``backend_url`` and fit.
    ``sync_watch``: read the NameNode's own sync times over JMX between the batches (False: the
    fdatasync probe's, and no JMX read at all, as ``bench_simnn.py path`` compares)."""
    if repeat < 1:
        raise ConfigError(f"simnn calibrate: --repeat must be at least 1 (got {repeat})")
    if len(loads) != 3 or not 1 <= loads[0] < loads[1] < loads[2]:
        raise ConfigError(f"simnn calibrate: --loads takes three client counts, light to heavy (got {loads})")
    for op in ops:
        if op not in OPERATIONS:
            raise ConfigError(f"simnn calibrate: unknown operation {op!r} (choose from {', '.join(OPERATIONS)})")
    layout = Layout(Path(hdfs_workdir).resolve())
    state = managed_state(backend_url, layout.state_file)
    namenode = None if state is None else next((p for p in state.processes if p.role == "namenode"), None)
    if namenode is None:
        raise ConfigError(
            f"simnn calibrate needs the NameNode's CPU: {backend_url} is not the cluster `mimesisbench hdfs up` "
            f"manages in {layout.workdir} (start it there, or give its --hdfs-workdir)"
        )
    site = site_settings(layout)
    settings = ServerSettings(
        handlers=int(site.get("dfs.namenode.handler.count", "10")),
        cores=os.cpu_count() or 1,
        colocated=True,
        fair=site.get("dfs.namenode.fslock.fair", "true").lower() != "false",
        async_edits=site.get("dfs.namenode.edits.asynclogging", "true").lower() != "false",
    )
    # the sync as the NameNode times it (JMX, below), and as this process can make it: a 128-byte
    # write and fdatasync, the fallback. The NameNode's is what its edit log waits for (the flush
    # and its thread's wake-up after the I/O): 160-240 us here where the probe took 80-120
    fdatasync_s = sync_seconds(layout.workdir)
    jmx_url = managed_jmx_url(backend_url, layout.workdir) if sync_watch else None
    watch = SyncWatch(jmx_url) if jmx_url is not None else None
    syncs_seen: list[dict[str, Any]] = []

    host_readings: list[tuple[float, float]] = []
    thread_readings: list[dict[str, tuple[float, float]] | None] = []

    def server_cpu() -> float | None:  # read just before and just after each timed batch
        host_readings.append(host_busy_cpu_s())
        thread_readings.append(thread_groups(namenode.pid) if namenode.process() is not None else None)
        return daemon_cpu_s(namenode)

    base = backend_url.rstrip("/")

    def micro(op: str, clients: int, tag: str) -> dict[str, Any]:
        host_readings.clear()
        thread_readings.clear()
        return run_micro(
            MicroConfig(op=op, files=files, backend=f"{base}/simnn-calibrate-{tag}-{op}-{clients}",
                        concurrency=clients, client=client),
            server_cpu=server_cpu,
        ).to_json()

    def measure(op: str, clients: int, tag: str) -> OpMeasurement:
        if watch is not None:
            # what came before this measurement is not its own; the NameNode is read again only
            # once it is over (reading it meanwhile slowed it: monitoring.edit_log)
            watch.take()
        result = micro(op, clients, tag)
        if watch is not None and edit_syncs(OPERATIONS[op]):
            totals = watch.take(REFRESH_WAIT_S)
            result["namenode_syncs"] = totals.syncs  # for the edit-log thread's CPU per edit (below)
            if totals.mean_s is not None:
                syncs_seen.append({"op": op, "clients": clients, "syncs": totals.syncs, "mean_s": totals.mean_s})
        lat = result["latency_ms"]
        server = result.get("server_cpu_us_per_op")
        client_cpu = result.get("client_cpu_us_per_op")
        if server is None or client_cpu is None or result["errors"] or len(host_readings) != 2:
            raise ConfigError(f"simnn calibrate: micro {op} measured no CPU, or had errors ({result['errors']})")
        n = int(result["files"])
        host = (host_readings[1][0] - host_readings[0][0]) / n * 1e6
        other = max(0.0, host - float(client_cpu) - float(server))  # the kernel's and other processes' share
        result["host_cpu_us_per_op"] = host
        result["host_steal_us_per_op"] = (host_readings[1][1] - host_readings[0][1]) / n * 1e6
        result["host_other_us_per_op"] = other
        threads = _per_thread_group(thread_readings, n)
        if threads is not None:
            result["namenode_threads_us_per_op"] = threads
        raw.append(result)
        if announce is not None:
            busiest = sorted(threads.items(), key=lambda kv: -kv[1]["cpu"])[:3] if threads else []
            announce(f"{op} x {clients}: {result['ops_per_s']:,.0f} ops/s, mean {lat['mean']:.3f} ms, p99 "
                     f"{lat['p99']:.3f} ms, client {client_cpu:.1f} us/op, NameNode {server:.1f} us/op, "
                     f"host {host:.1f} us/op (stolen {result['host_steal_us_per_op']:.1f})"
                     + "".join(f"; {name} {t['cpu']:.1f} (runnable {t['runnable']:.1f})" for name, t in busiest))
        return OpMeasurement(
            op=OPERATIONS[op], operations=n, concurrency=clients, ops_per_s=float(result["ops_per_s"]),
            mean_s=lat["mean"] / 1e3, p50_s=lat["p50"] / 1e3, p99_s=lat["p99"] / 1e3,
            client_cpu_s=float(client_cpu) / 1e6, server_cpu_s=(float(server) + other) / 1e6,
            p90_s=lat["p90"] / 1e3, p999_s=lat["p999"] / 1e3,
        )

    if warmup:  # a fresh JVM interprets before it compiles: the first batches cost it several times more
        for op in ops:
            for clients in loads:
                micro(op, clients, "warmup")
    raw: list[dict[str, Any]] = []
    # each (operation, load) measured `repeat` times, round after round, and the median of each
    # figure kept: one batch on a shared machine can be a third off the next
    rounds = [[[measure(op, clients, f"{r}-{i}") for clients in loads] for i, op in enumerate(ops)]
              for r in range(repeat)]
    measured_sync = namenode_sync_s(syncs_seen)
    settings = replace(settings, sync_s=measured_sync if measured_sync is not None else fdatasync_s)
    edit_thread = measure_edit_thread(raw) if settings.async_edits else None
    if edit_thread is not None:
        settings = replace(settings, edit_s=edit_thread["us_per_edit"] / 1e6)

    # each operation's loads, each load's runs in the order the rounds ran
    runs = [[[rounds[r][i][k] for r in range(repeat)] for k in range(3)] for i in range(len(ops))]
    triples = [(median_measurement(light), median_measurement(middle), median_measurement(heavy))
               for light, middle, heavy in runs]
    measurements = [m for triple in triples for m in triple]
    steal = steal_summary(raw)
    other = other_work_summary(raw)
    source = {
        "measured_on": backend_url,
        "hadoop_version": state.hadoop_version if state else None,
        "loads": list(loads),
        "repeat": repeat,
        "operations": files,
        "client": raw[0].get("client") if raw else None,
        "host": host_facts(),
        "versions": versions(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "measurements": [{**asdict(m), "op": m.op.label} for m in measurements],
        "rounds": rounds_record([load for op_loads in runs for load in op_loads]),
        "sync": {"source": "namenode" if measured_sync is not None else "fdatasync", "namenode_s": measured_sync,
                 "fdatasync_s": fdatasync_s, "jmx": jmx_url, "jmx_failures": watch.failures if watch else None,
                 "measurements": syncs_seen},
        "edit_thread": edit_thread,
        "host_steal": steal,
        "host_other": other,
    }
    if announce is not None and steal is not None and steal["max_share"] > STEAL_WARN_SHARE:
        announce(f"warning: the host stole {100 * steal['max_share']:.0f} % of this machine's busy CPU over "
                 f"{steal['worst']} ({100 * steal['share']:.1f} % over every batch): the NameNode's fitted costs "
                 f"include that time; calibrate again when the host is quiet")
    calibration, _ = calibrate(triples, settings, source, lock_share=lock_share, fit_dispatch=fit_dispatch)
    return calibration, raw


def other_work_summary(raw: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The host's other work over the measured batches ``raw`` (each with
    ``host_other_us_per_op``: the host's busy CPU less the client's and the NameNode's, its steal
    included, and ``ops_per_s``), as a share of one core: per load (clients), the median over its
    batches, and the median over every batch (``share``): what ``simnn:?other=SHARE`` models on a
    core of its own (``sim.model``; the fitted NameNode CPU has it in it). None where no batch
    recorded it."""
    by_load: dict[int, list[float]] = {}
    for result in raw:
        other, rate = result.get("host_other_us_per_op"), result.get("ops_per_s")
        if not isinstance(other, int | float) or not isinstance(rate, int | float):
            continue
        by_load.setdefault(int(result.get("concurrency", 0)), []).append(other * rate / 1e6)
    if not by_load:
        return None
    every = [share for shares in by_load.values() for share in shares]
    return {"share": float(np.median(every)),
            "by_clients": {str(clients): float(np.median(shares)) for clients, shares in sorted(by_load.items())}}


def steal_summary(raw: list[dict[str, Any]]) -> dict[str, Any] | None:
    """How much of the host's busy CPU was stolen over the measured batches ``raw`` (each with
    ``host_cpu_us_per_op`` and ``host_steal_us_per_op``): over all of them (``share``) and at most
    over one (``max_share``, the batch named in ``worst``, in the round it ran). None where no
    batch recorded both."""
    busy = stolen = 0.0
    worst, worst_share = "", -1.0
    seen: dict[tuple[str, int], int] = {}
    for result in raw:
        host, steal, n = (result.get(k) for k in ("host_cpu_us_per_op", "host_steal_us_per_op", "files"))
        if not isinstance(host, int | float) or not isinstance(steal, int | float) or not n:
            continue
        key = (str(result.get("op")), int(result.get("concurrency", 0)))
        seen[key] = seen.get(key, 0) + 1
        busy += host * n
        stolen += steal * n
        share = steal / host if host > 0 else 0.0
        if share > worst_share:
            worst, worst_share = f"{key[0]} x {key[1]} (round {seen[key]})", share
    if busy <= 0:
        return None
    return {"share": stolen / busy, "max_share": worst_share, "worst": worst}


def measure_edit_thread(raw: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The edit-log thread's CPU per edit outside its syncs (``settings.edit_s``, in us), and per
    sync, from the write micro-benchmarks ``raw`` (each with ``namenode_threads_us_per_op`` and
    the syncs the NameNode counted over it, ``namenode_syncs``): its group's CPU per operation is
    (edits per operation) x per edit + (syncs per operation) x per sync at every load, solved by
    non-negative least squares (scipy's ``nnls``). Measured here: 5-9 us an edit (serialising it,
    sending its answer) and about 60 us a sync, so 67 us an edit at one client, where every edit
    is synced alone, and 10 at 64 creating, 19 edits a sync (session 26's calibration: 5.1 and 59). The sync's CPU is in the sync's time
    as the NameNode times it (``sync_s``); the CPU per edit is the thread's own work in the model.
    Only the operations whose micro-benchmark makes no files first (create, mkdirs) count: the
    NameNode's syncs are counted over the whole benchmark, its preparation too. None where fewer
    than two loads have both readings."""
    rows, loads = [], set()
    for result in raw:
        op = OPERATIONS.get(str(result.get("op")))
        threads = result.get("namenode_threads_us_per_op")
        syncs, files = result.get("namenode_syncs"), result.get("files")
        if op not in EDIT_FIT_OPS or not isinstance(threads, dict) or not isinstance(syncs, int) or not files:
            continue
        group = threads.get(EDIT_THREAD)
        if not isinstance(group, dict) or not isinstance(group.get("cpu"), int | float) or syncs <= 0:
            continue
        rows.append((edits_of(op), syncs / int(files), float(group["cpu"])))
        loads.add(result.get("concurrency"))
    if len(loads) < 2:
        return None
    (per_edit, per_sync), _ = nnls(np.array([r[:2] for r in rows]), np.array([r[2] for r in rows]))
    return {"us_per_edit": float(per_edit), "us_per_sync": float(per_sync), "measurements": len(rows)}


def _per_thread_group(readings: list[dict[str, tuple[float, float]] | None], operations: int
                      ) -> dict[str, dict[str, float]] | None:
    """The NameNode's threads over one batch (its readings before and after), per group: CPU and
    time runnable without a core, in us per operation (a group busier than 0.05 us an operation;
    a thread made during the batch counts from its start). None where they were not read."""
    if len(readings) != 2 or operations <= 0:
        return None
    before, after = readings
    if before is None or after is None:
        return None
    out = {}
    for name, (cpu, runnable) in after.items():
        cpu0, runnable0 = before.get(name, (0.0, 0.0))
        per_op = {"cpu": max(0.0, cpu - cpu0) / operations * 1e6,
                  "runnable": max(0.0, runnable - runnable0) / operations * 1e6}
        if per_op["cpu"] >= 0.05:
            out[name] = {k: round(v, 2) for k, v in per_op.items()}
    return out


def write_calibration(out: Path, calibration: Calibration, raw: list[dict[str, Any]]) -> Path:
    """``out/calibration.json`` and ``out/micro.json`` (every micro-benchmark's own output)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "micro.json").write_text(json.dumps(raw, indent=2) + "\n")
    return calibration.write(out / CALIBRATION_FILE)


def calibration_measurements(path: Path, calibration: Calibration) -> dict[tuple[OpCode, int], OpMeasurement]:
    """A calibration's own measurements (``source.measurements``), by (operation, clients)."""
    raw = calibration.source.get("measurements")
    if not isinstance(raw, list) or not raw:
        raise InputError(f"{path}: source.measurements: a calibration simnn calibrate made has its measurements here")
    by_label = {op.label: op for op in OpCode}
    out: dict[tuple[OpCode, int], OpMeasurement] = {}
    for i, m in enumerate(raw):
        try:
            measurement = OpMeasurement(**{**m, "op": by_label[m["op"]]})
        except (KeyError, TypeError) as exc:
            raise InputError(f"{path}: source.measurements[{i}]: not a measurement ({exc})") from None
        for name, value in asdict(measurement).items():
            if name != "op" and not (isinstance(value, int | float) and not isinstance(value, bool)
                                     and np.isfinite(value) and value >= 0):
                raise InputError(f"{path}: source.measurements[{i}].{name}: expected a number >= 0, got {value!r}")
        out[(measurement.op, measurement.concurrency)] = measurement
    return out


def load_triples(path: Path, measurements: dict[tuple[OpCode, int], OpMeasurement]
                 ) -> list[tuple[OpMeasurement, OpMeasurement, OpMeasurement]]:
    """Each operation's (light, middle, heavy) measurements, as ``sim.fit.calibrate`` takes them."""
    triples = []
    for op in sorted({op for op, _ in measurements}):
        loads = sorted(c for o, c in measurements if o == op)
        if len(loads) != 3:
            raise InputError(f"{path}: {op.label} is measured at {len(loads)} loads, not three")
        triples.append((measurements[(op, loads[0])], measurements[(op, loads[1])], measurements[(op, loads[2])]))
    return triples


def merge_calibrations(dirs: list[Path], *, lock_share: float = READ_LOCK_SHARE, fit_dispatch: bool = True
                       ) -> tuple[Calibration, list[dict[str, Any]]]:
    """One calibration from several made by ``simnn calibrate`` (see the module): the same
    operations at the same loads on clusters with the same settings, each figure the median of
    theirs (the sync time too), fitted again. Returns it and every input's micro-benchmarks."""
    if len(dirs) < 2:
        raise ConfigError("simnn merge: give two calibrations or more")
    loaded = [(d, Calibration.load(calibration_file(d))) for d in dirs]
    sets = [(d, cal, calibration_measurements(d, cal)) for d, cal in loaded]
    first_dir, first, keys = sets[0][0], sets[0][1], set(sets[0][2])
    for d, cal, ms in sets[1:]:
        if set(ms) != keys:
            missing = sorted(f"{op.label} x {c}" for op, c in keys ^ set(ms))
            raise InputError(f"{d}: not the operations and loads of {first_dir} ({', '.join(missing)})")
        for name in ("handlers", "cores", "colocated", "fair", "async_edits"):
            if getattr(cal.settings, name) != getattr(first.settings, name):
                raise InputError(f"{d}: settings.{name} is {getattr(cal.settings, name)!r}, "
                                 f"{first_dir} has {getattr(first.settings, name)!r}")
    merged = {key: median_measurement([ms[key] for _, _, ms in sets]) for key in sorted(keys, key=lambda k: (k[0], k[1]))}
    triples = load_triples(first_dir, merged)
    # the host settings the inputs' fits chose are fitted again from the merged measurements
    settings = replace(first.settings.before_fit(),
                       sync_s=float(np.median([cal.settings.sync_s for _, cal, _ in sets])),
                       edit_s=float(np.median([cal.settings.edit_s for _, cal, _ in sets])))
    source = {
        **{k: v for k, v in first.source.items()
           if k not in ("measurements", "rounds", "fit", "measured_on", "measured_at")},
        "merged_from": [{"path": str(d), "measured_on": cal.source.get("measured_on"),
                         "measured_at": cal.source.get("measured_at")} for d, cal, _ in sets],
        "merged_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "versions": versions(),
        "measurements": [{**asdict(m), "op": m.op.label} for m in merged.values()],
        # a merge's "rounds" are its inputs' medians: how far the calibrations disagree
        "rounds": rounds_record([[ms[key] for _, _, ms in sets] for key in merged]),
    }
    calibration, _ = calibrate(triples, settings, source, lock_share=lock_share, fit_dispatch=fit_dispatch)
    raw: list[dict[str, Any]] = []
    for d, _ in loaded:
        micro_json = (d if d.is_dir() else d.parent) / "micro.json"
        if micro_json.is_file():
            try:
                raw.extend(json.loads(micro_json.read_text()))
            except (OSError, ValueError, TypeError) as exc:
                raise InputError(f"{micro_json}: not the micro-benchmarks simnn calibrate wrote ({exc})") from None
    return calibration, raw
