"""The simulated NameNode (``simnn:``): its speed, and its predictions against a managed HDFS.

    .venv/bin/python bench/bench_simnn.py speed [--calls 10000000]
    .venv/bin/python bench/bench_simnn.py validate [--files 20000] [--repeat 3] [--keep-calibration DIR] [--keep-runs DIR] [--warm-first 2] [--warm-until 10] [--warm-most 6]
        [--calibrate-most 2] [--schedules short|long] [--no-calibrate-after] [--locks fair,unfair|fair] [--no-fit-dispatch]
    .venv/bin/python bench/bench_simnn.py score DIR [DIR ...] [--no-fit-dispatch] [--lock-share S] [--edit-us US] [--bracket]
    .venv/bin/python bench/bench_simnn.py loads [--ops create,fileStatus] [--between 4,16,32] [--keep DIR]
    .venv/bin/python bench/bench_simnn.py loads --kept DIR
    .venv/bin/python bench/bench_simnn.py runs DIR [DIR ...] [--by-op]
    .venv/bin/python bench/bench_simnn.py threads DIR [DIR ...]
    .venv/bin/python bench/bench_simnn.py again DIR [DIR ...]
    .venv/bin/python bench/bench_simnn.py path [--iterations 8] [--loads 16,32,64] [--op create]

``speed``: 10 M calls of a read/write mix through the native event loop (closed loop, 64 in
flight) and through the simpy reference (on 100 k calls: the same model), in calls per second;
then ``run`` end to end against ``simnn:`` on a generated schedule of about that many operations (the
built-in profile's type 1 at ``--scale-files``: the schedule read, simulated, and its run
directory written).

``validate``: on a fresh managed HDFS (fair lock), ``simnn calibrate``'s measurements and fit (each
operation with ``micro`` at 1, 8 and 64 clients); then, on the same NameNode, the built-in profile's
write-heavy type alone and both its types (6,000 s of its time at c = 0.01), and since session 25
its read-heavy type alone (opens and listings; its files doubled: 33,863 operations), each after an
untimed warm-up run, ``--repeat`` times as fast as possible (32 lanes a worker, a worker a file
type: the maximum throughput of that load, and its p50 and p99) and paced at half that
throughput (its mean rate; the schedule offers three quarters of its operations faster than the
maximum, so the latency, from each operation's due time, is mostly the backlog of its bursts,
and moves far more than the throughput with the rate the server drains them at); then micro
fileStatus and create at 4, 16 and 32 clients; then the calibration's own loads measured again
(``again:`` rows, against the fitted model: the machine's noise floor, what a perfect model
would miss by). The same on a fresh cluster with the unfair lock
(``dfs.namenode.fslock.fair=false``), predicted from the fair cluster's calibration with
``fair=false``, micro at 64 clients too; that cluster first goes through the same measurements
as the calibration (the JVM compiles as it goes: both clusters run the schedules after the same
history; with ``--keep-calibration``, kept in ``DIR/unfair``, not used to predict). Prints the
median of the repeats, their range, the prediction and its error against the median. With
``--keep-calibration DIR`` it also writes ``DIR/validation.json``: every row's measured median
(and, for the runs, since session 19, the range of its repeats) and what was predicted. With
``--keep-runs DIR``, every run directory it made (``DIR/runs``: the managed HDFS's, each
operation's due, start and end times in ``samples.parquet``; ``DIR/sim``: the predictions'), also
when it stops early: what the latency of a paced run is made of, second by second. With
``--warm-first N``, every schedule runs at least N times, untimed, on each fresh cluster before
anything is measured, the calibration included (2 by default since session 39; sessions 19-35 and
38 were measured with 0, 36 and 37 with 2: a fresh NameNode ran the same schedule up to twice as
fast on its fourth run as on its first), and, since session 43, round after round until each
schedule's last two rounds agree within ``--warm-until`` (10 %; 0: exactly N rounds, as sessions
36-42 were) of its throughput, ``--warm-most`` rounds at most (6): session 42's cluster still
ran its schedules faster from one repeat to the next after two rounds. ``validation.json`` keeps
the rounds each cluster ran (``warm_rounds``). Since session 61 the fair cluster calibrates again
while its calibration's rounds disagree (a figure's largest more than 1.5 times its smallest,
``simnn show``'s warning), ``--calibrate-most`` times in all (2; 1: once, as before), and predicts
from the one that disagrees on the fewest figures; ``validation.json`` keeps how many each
disagreed on (``calibrations``), ``--keep-calibration DIR`` the others in ``DIR/calibrationN``; the
unfair cluster measures as many times. ``--schedules long`` runs the write-heavy type at 4 times its
files and both types at 2 (141 k and 105 k operations; sessions 39 and 40) rather than the
``short`` ones (41 k and 54 k; every other session): their repeats' p99 came no nearer one another
than the short ones' measured the same day (session 41; docs/simnn.md). Since session 39
``validation.json`` keeps the schedules' arguments, which ``score`` generates again.

Since session 62 the fair cluster calibrates once more at its end, after its micro loads
(``--no-calibrate-after``: not), the same way as the opening calibration (kept in ``DIR/after``),
and every row is predicted again from the two merged (each figure the mean of the two
calibrations' medians, fitted again: ``merge_calibrations``), printed and summed up after the
opening calibration's predictions (``validation.json``: each row's ``predicted_bracketed``;
``score --bracket`` does it again with the model as it is). Why: measured again at the session's
end, the calibration's own loads ran up to 23 % faster than the opening calibration had measured
them (median over sessions 51-61, ``again``), so predictions from the opening calibration alone
carry the host's drift over the session one way; a calibration on either side of the runs it
predicts (a bracketing calibration, as a standard measured before and after the samples) puts
the calibration in the middle of that drift. Which predicts better is measured, not assumed
(docs/simnn.md, session 62). ``--locks fair`` measures the fair cluster alone (half the time).

``runs``: what ``validate --keep-runs`` kept (``DIR/runs.json``, made from the run directories
the first time), run by run in the order they ran: throughput, p50, p99, and the rate each
completed operations at while its server was saturated (a paced run: while its backlog drained);
then, over the paced rows of every DIR, how the predicted p99's error follows the predicted
draining rate's (``docs/simnn.md``, "The runs' repeats in order"). ``--by-op``: each run's p50 and
p99 per operation too (kept in ``runs.json`` since session 39).

``threads``: where each cluster of a validation spent its CPU and waited for a core, by thread
(``DIR/threads.json``, made the first time from the ``micro.json`` that ``validate
--keep-calibration DIR`` wrote for the fair cluster and in ``DIR/unfair`` for the unfair one: each
calibration measurement's throughput, the syncs the NameNode counted, each side's CPU per
operation and each NameNode thread group's CPU and time runnable without a core per operation,
the groups under 0.5 us left out): per operation and load, the median over the rounds of the
NameNode's threads' runnable time per operation, and its edit log's thread's per sync; for the
fair cluster, beside it, the time per operation that bursts wait for a core in the model (the
calibration as kept, each of its loads simulated; the client's bursts included). The
``micro.json`` files are not kept in ``simnn_sessions`` (about 110 kB a cluster); ``threads.json``
is (sessions 39-50 from their kept copies, and every session after).

``again``: each kept validation's ``again:`` rows against its calibration's own medians (not the
model): how far the NameNode moved by itself between its calibration and the session's end; where
it has a closing calibration (``DIR/after``), that against the opening one per load, the client's
CPU per operation beside the NameNode's.
``path``: ``simnn calibrate``'s way of measuring against a plain ``micro``, alternated on one
fresh cluster (``path``'s docstring).

``loads``: what the fit does between its loads. On a fresh managed HDFS, ``simnn calibrate``'s
measurements (create and fileStatus by default, at 1, 8 and 64 clients), then the same on the
same NameNode at three loads between (``--between``, 4, 16 and 32 clients); every load against
the model fitted on the first three, with the NameNode's CPU per operation (the model's and the
measured), and, measured, the CPU of its handlers, edit-log thread and socket reader, the syncs
the NameNode counted per operation, the host's cores busy and the NameNode's threads runnable
without a core (each on average over the measurement). ``--keep DIR`` writes both
(``DIR/fit``, ``DIR/between``); ``--kept DIR`` reports on them again, without a cluster, with
the model as it is then.

``score``: the model as it is now against validations kept earlier, without a cluster: each DIR's
calibration measurements fitted again with the current code, every kept row predicted again (the
schedules generated again from the same seed) and compared with what was measured then; a summary
per DIR (mean absolute error, rows within 15 %, the mean signed error of the as-fast-as-possible
runs; the paced runs apart, kept in ``validation.json`` since session 18; where the runs' ranges are
kept, how many predicted p99s fall within the measured repeats' range), and its noise floor: how
far the calibration's own loads measured again minutes later are from its measurements of them (a
session whose floor is far off measured a machine whose speed moved; no model predicts that). How a
change of the model is judged on several calibrations in seconds, rather than on one validation of
several minutes whose calibration noise alone moves the mixes' predictions by 20 %. ``--edit-us``
refits with that CPU per edit for the edit log's thread (``settings.edit_s``): the calibrations
made before session 26 did not measure it, and keep 0 (no such thread) unless given.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

import numpy as np
import pyarrow.parquet as pq
from bench_capacity import cli  # the in-process CLI
from bench_capacity_hdfs import fresh_cluster  # a managed HDFS in a temporary folder

from mimesisbench.backends.simnn import calibration_file
from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import OPERATIONS, MicroConfig
from mimesisbench.schedule.format import OpCode
from mimesisbench.sim.fit import OpMeasurement, calibrate, edit_thread_cpu, simulate_measurement
from mimesisbench.sim.fit_check import FIT_BAR, RoundSpread, round_spreads
from mimesisbench.sim.model import FITTED_SETTINGS, READ_LOCK_SHARE, Calibration, OpCost, ServerSettings
from mimesisbench.sim.ops import simulate_micro, simulate_ops
from mimesisbench.study.simnn_calibration import (
    EDIT_THREAD,
    calibration_measurements,
    load_triples,
    measure_and_fit,
    merge_calibrations,
    write_calibration,
)


def speed(calls: int, scale: float) -> None:
    cal = Calibration({OpCode.GETFILEINFO: OpCost(15e-6, 35e-6, 10e-6), OpCode.CREATE: OpCost(30e-6, 140e-6, 300e-6)},
                      ServerSettings())
    ops = np.where(np.arange(calls) % 5 == 0, int(OpCode.CREATE), int(OpCode.GETFILEINFO)).astype(np.uint8)
    t0 = time.perf_counter()
    sim = simulate_ops(ops, np.zeros(calls), cal, 64)
    native_s = time.perf_counter() - t0
    small = min(100_000, calls)
    t0 = time.perf_counter()
    simulate_ops(ops[:small], np.zeros(small), cal, 64, engine="simpy")
    simpy_rate = small / (time.perf_counter() - t0)
    print(f"native: {calls:,} calls in {native_s:.2f} s ({calls / native_s:,.0f} calls/s; draws "
          f"{sim.facts['draw_s']:.2f} s, event loop {sim.facts['simulate_s']:.2f} s)")
    print(f"simpy reference: {simpy_rate:,.0f} calls/s; native / simpy {calls / native_s / simpy_rate:.0f}x")
    t0 = time.perf_counter()
    simulate_ops(ops, np.zeros(calls), cal.with_settings(edit_s=8e-6), 64)
    edit_s = time.perf_counter() - t0
    print(f"native with the edit log's thread (edit_s 8 us): {calls:,} calls in {edit_s:.2f} s "
          f"({edit_s / native_s:.2f}x the time without)")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        profile = Path(__file__).resolve().parents[1] / "src" / "mimesisbench" / "data" / "demo_profile.json"
        t0 = time.perf_counter()
        cli(["generate", str(profile), "--types", "1", "--scale-files", str(scale), "--duration", "10000s", "--seed", "7",
             "-o", str(work / "s")])
        events = json.loads((work / "s" / "manifest.json").read_text())["counts"]["events"]
        generate_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        out = cli(["run", str(work / "s"), "-b", "simnn:", "--as-fast-as-possible", "--out", str(work / "runs"), "-q"])
        run_s = time.perf_counter() - t0
        run_dir = next((work / "runs").iterdir())
        manifest = json.loads((run_dir / "manifest.json").read_text())
        summary = json.loads((run_dir / "summary.json").read_text())
        print(f"run -b simnn: {events:,} operations (generated in {generate_s:.1f} s) simulated and written in "
              f"{run_s:.1f} s (simulation {manifest['simulation']['simulate_s']:.1f} s); predicted "
              f"{summary['throughput_ops_per_s']:,.0f} ops/s {out.strip()[:0]}")


Figure = tuple[float, float, float]  # throughput (ops/s), p50 (ms), p99 (ms)


def _pct(pred: float, meas: float) -> str:
    return f"{(pred - meas) / meas * 100:+6.1f} %" if meas else "  n/a"


def _spread(measured: list[Figure]) -> list[list[float]]:
    """Each figure's least and greatest over the repeats (what validation.json keeps as ``range``)."""
    return [[min(m[k] for m in measured), max(m[k] for m in measured)] for k in range(3)]


def _row(what: str, measured: list[Figure], pred: Figure) -> list[float]:
    """The median of the measured repeats (their range) against the prediction; returns the median."""
    cols, medians = [], []
    for k, (name, fmt) in enumerate((("ops/s", "{:,.0f}"), ("p50 ms", "{:.3f}"), ("p99 ms", "{:.3f}"))):
        values = sorted(m[k] for m in measured)
        med = float(np.median(values))
        medians.append(med)
        cols.append(f"{name} {fmt.format(med)} [{fmt.format(values[0])}-{fmt.format(values[-1])}] -> "
                    f"{fmt.format(pred[k])} ({_pct(pred[k], med)})")
    print(f"{what:30s} " + "   ".join(cols), flush=True)
    return medians


#: (name, generate's type arguments): the built-in profile's write-heavy type alone, both types,
#: and (since session 25) its read-heavy type alone
SCHEDULES: tuple[tuple[str, list[str]], ...] = (
    ("write-heavy type", ["--types", "1"]), ("both types", []), ("read-heavy type", ["--types", "2"]))
#: each schedule's ``--scale-files``: "short" (41 k, 54 k and 34 k operations: runs of about a
#: second as fast as possible), every session's but 39 and 40's; "long" (141 k, 105 k and 34 k),
#: sessions 39 and 40's. The read-heavy type has a few files with heavy-tailed accesses: at 3
#: times its files, or both types at 3, the draws come to about 7 million operations
SCALES: dict[str, tuple[float, float, float]] = {"short": (1, 1, 2), "long": (4, 2, 2)}


def schedule_arguments(length: str) -> dict[str, list[str]]:
    """Each schedule's ``generate`` arguments (what validation.json keeps)."""
    return {name: [*types, *(["--scale-files", f"{scale:g}"] if scale != 1 else []), "--duration", "6000s"]
            for (name, types), scale in zip(SCHEDULES, SCALES[length], strict=True)}


def _schedules(work: Path, arguments: dict[str, list[str]]) -> dict[str, Path]:
    profile = Path(__file__).resolve().parents[1] / "src" / "mimesisbench" / "data" / "demo_profile.json"
    schedules = {}
    for name, args in arguments.items():
        root = work / "_".join(a.strip("-") for a in args) / name.replace(" ", "-")
        if not root.exists():
            cli(["generate", str(profile), *args, "--time-scale", "0.01", "--seed", "7", "-o", str(root)])
            events = json.loads((root / "manifest.json").read_text())["counts"]["events"]
            print(f"# {name}: the built-in profile ({' '.join(args)}) at c = 0.01, {events:,} operations", flush=True)
        schedules[name] = root
    return schedules


def _micro(url: str, op: str, clients: int, files: int, tag: str) -> Figure:
    r = run_micro(MicroConfig(op=op, files=files, backend=f"{url}/v-{tag}-{op}-{clients}", concurrency=clients)).to_json()
    return float(r["ops_per_s"]), float(r["latency_ms"]["p50"]), float(r["latency_ms"]["p99"])


def _micro_predicted(op: str, clients: int, files: int, cal: Calibration) -> Figure:
    sim = simulate_micro(OPERATIONS[op], files, clients, cal).times
    service = sim.service * 1e3
    return (files / float(sim.end.max() - sim.start.min()), float(np.percentile(service, 50)),
            float(np.percentile(service, 99)))


def _figure(summary: dict[str, Any]) -> Figure:
    """A run's throughput, p50 and p99 from its ``summary.json``."""
    return float(summary["throughput_ops_per_s"]), float(summary["latency_ms"]["p50"]), float(summary["latency_ms"]["p99"])


def _summary(run_dir: Path) -> Figure:
    return _figure(json.loads((run_dir / "summary.json").read_text()))


def _run(schedule: Path, backend: str, out: Path, *extra: str) -> Figure:
    cli(["run", str(schedule), "-b", backend, "--concurrency", "32", "--out", str(out), "-q", *extra])
    return _summary(max(out.iterdir(), key=lambda p: p.stat().st_mtime))


@dataclass(frozen=True)
class WarmUp:
    """How long ``validate`` warms each fresh cluster: rounds of every schedule, at least ``least``
    (none when 0), then until each schedule's last two rounds agree within ``agree`` (a fraction of
    its throughput; 0: exactly ``least`` rounds), at most ``most``."""

    least: int = 2
    agree: float = 0.10
    most: int = 6


def validate(files: int, repeat: int, heap: str, keep: Path | None, *, fit_dispatch: bool = True,
             keep_runs: Path | None = None, warm: WarmUp = WarmUp(), length: str = "short",
             calibrate_most: int = 2, after: bool = True, locks: tuple[bool, ...] = (True, False)) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        try:
            _validate(work, files, repeat, heap, keep, fit_dispatch=fit_dispatch, warm=warm, length=length,
                      calibrate_most=calibrate_most, after=after, locks=locks)
        finally:  # the run directories so far, also when a run fails or the validation is stopped
            if keep_runs is not None:
                for part in ("runs", "sim"):
                    if (work / part).is_dir():
                        shutil.copytree(work / part, keep_runs / part, dirs_exist_ok=True)


def _warm_up(schedules: dict[str, Path], base: str, out: Path, hdfs: list[str], warm: WarmUp) -> int:
    """Runs every schedule as fast as possible, untimed, round after round as ``warm`` says, and
    returns the rounds run (a fresh NameNode's JIT and heap settle over its first runs: session 35
    ran the same schedule 20.3, 27.9, 35.6 and 41.8 k a second, session 42 still rose over two)."""
    if warm.least <= 0:
        return 0
    limit = max(warm.least, warm.most) if warm.agree > 0 else warm.least
    last: dict[str, float] = {}
    for rounds in range(1, limit + 1):
        settled = True
        for name, schedule in schedules.items():
            ops = _run(schedule, f"{base}-{name[:5]}-first{rounds - 1}", out, "--as-fast-as-possible", *hdfs)[0]
            print(f"# warming up ({base.rsplit('/', 1)[-1]}): {name} {ops:,.0f} ops/s", flush=True)
            settled = settled and name in last and abs(ops / last[name] - 1) <= warm.agree
            last[name] = ops
        if rounds >= warm.least and settled:
            return rounds
    return limit


Calibrated = tuple[Calibration, list[dict[str, Any]], list[RoundSpread]]  # with its micro.json, its rounds apart


def _calibrate_steady(url: str, hdfs_work: Path, files: int, fit_dispatch: bool, most: int,
                      keep: Path | None) -> tuple[Calibrated, list[int]]:
    """``simnn calibrate`` on the cluster at ``url``, again while its rounds disagree (``round_spreads``),
    ``most`` times at most: the calibration whose rounds disagree on the fewest figures (the later
    of equals: its cluster warmer), its micro-benchmarks and those figures; and each attempt's
    count of them. Session 60's host ran a third faster after its calibration than during it, 18
    of its 42 figures' rounds apart by more than 1.5x: a calibration measured while the host was
    unsteady carries that to every prediction. With ``keep``, the ones not chosen go to
    ``keep/calibrationN`` (N: the attempt, from 0)."""
    made: list[Calibrated] = []
    for attempt in range(max(1, most)):
        cal, raw = measure_and_fit(f"{url}/calibrate{attempt or ''}", str(hdfs_work / "hdfs"), files=files,
                                   fit_dispatch=fit_dispatch, announce=lambda s: print("calibrate:", s, flush=True))
        made.append((cal, raw, round_spreads(cal.source.get("rounds"))))
        print(f"# calibration {attempt + 1} of at most {most}: the rounds disagree on {len(made[-1][2])} figures",
              flush=True)
        if not made[-1][2]:
            break
    chosen = min(range(len(made)), key=lambda i: (len(made[i][2]), -i))
    if keep is not None:
        for i, (cal, raw, _) in enumerate(made):
            if i != chosen:
                write_calibration(keep / f"calibration{i}", cal, raw)
    print(f"# calibration {chosen + 1} chosen", flush=True)
    return made[chosen], [len(flagged) for _, _, flagged in made]


def _validate(work: Path, files: int, repeat: int, heap: str, keep: Path | None, *, fit_dispatch: bool,
              warm: WarmUp, length: str, calibrate_most: int, after: bool, locks: tuple[bool, ...]) -> None:
    rows: list[dict[str, Any]] = []  # what validation.json keeps
    warm_rounds: dict[str, int] = {}  # the warm-up rounds each cluster ran
    calibrations: list[int] = []  # each calibration's count of figures whose rounds disagree
    arguments = schedule_arguments(length)
    schedules = _schedules(work, arguments)
    cal_dir = work / "calibration"
    after_dir = work / "after"
    for fair in locks:
        lock = "fair" if fair else "unfair"
        with fresh_cluster("mb-simnn-", heap, fslock_fair=fair) as (hdfs_work, cluster):
            hdfs = ["--hdfs-workdir", str(hdfs_work / "hdfs")]
            # the schedules' own work first, untimed, before any measurement
            warm_rounds[lock] = _warm_up(schedules, f"{cluster.url}/{lock}", work / "runs", hdfs, warm)
            if fair:
                (cal, raw, flagged), calibrations = _calibrate_steady(cluster.url, hdfs_work, files, fit_dispatch,
                                                                      calibrate_most, keep)
                write_calibration(cal_dir, cal, raw)
                if keep is not None:  # the calibration this validation made, for later use
                    write_calibration(keep, cal, raw)
                print(f"# calibrated at 1, 8 and 64 clients: {json.dumps(cal.to_json()['settings'])}", flush=True)
                for spread in flagged:  # what the measurement allows, below
                    print(f"# the calibration's rounds disagree: {spread.describe()}", flush=True)
            else:
                # the same measurements as the fair cluster's calibrations, before the same
                # runs: the JVM compiles as it goes, and a cluster warmed with less ran the first
                # schedule slower (kept as DIR/unfair for comparison; not used to predict)
                for attempt in range(len(calibrations)):
                    unfair_cal, unfair_raw = measure_and_fit(
                        f"{cluster.url}/calibrate{attempt or ''}", str(hdfs_work / "hdfs"), files=files,
                        fit_dispatch=fit_dispatch, announce=lambda s: print("measure (unfair):", s, flush=True))
                if keep is not None:
                    write_calibration(keep / "unfair", unfair_cal, unfair_raw)
            cal = Calibration.load(cal_dir / "calibration.json").with_settings(fair=fair)
            sim_url = f"simnn:?calibration={cal_dir}&fair={'true' if fair else 'false'}"
            print(f"# {lock} lock: measured median [range of {repeat}] -> predicted", flush=True)
            for name, schedule in schedules.items():
                _run(schedule, f"{cluster.url}/{lock}-{name[:5]}-warm", work / "runs", "--as-fast-as-possible", *hdfs)
                fast = [_run(schedule, f"{cluster.url}/{lock}-{name[:5]}-{r}", work / "runs", "--as-fast-as-possible",
                             *hdfs) for r in range(repeat)]
                pred = _run(schedule, sim_url, work / "sim", "--as-fast-as-possible")
                med = _row(f"{name}, as fast as possible", fast, pred)
                rows.append({"fair": fair, "schedule": name, "measured": med, "range": _spread(fast),
                             "predicted": list(pred)})
                rate = f"{np.median([f[0] for f in fast]) / 2:.0f}/s"
                paced = [_run(schedule, f"{cluster.url}/{lock}-{name[:5]}-p{r}", work / "runs", "--rate", rate,
                              "--max-drift", "off", *hdfs) for r in range(repeat)]
                pred = _run(schedule, sim_url, work / "sim", "--rate", rate, "--max-drift", "off")
                med = _row(f"{name}, paced at {rate}", paced, pred)
                rows.append({"fair": fair, "schedule": name, "rate": rate, "measured": med, "range": _spread(paced),
                             "predicted": list(pred)})
            micro_loads = [(f"micro {op} x {c}", op, c) for c in ((4, 16, 32) if fair else (4, 16, 32, 64))
                           for op in ("fileStatus", "create")]
            if fair:  # the noise floor: the calibration's own loads measured again, against the fit
                micro_loads += [(f"again: micro {op} x {c}", op, c) for c in (1, 8, 64) for op in ("fileStatus", "create")]
            for what, op, clients in micro_loads:
                measured = [_micro(cluster.url, op, clients, files, f"{lock}{r}") for r in range(repeat)]
                pred = _micro_predicted(op, clients, files, cal)
                rows.append({"fair": fair, "op": op, "clients": clients, "what": what,
                             "measured": _row(what, measured, pred), "predicted": list(pred)})
            if fair and after:  # the closing calibration, the same way as the opening one (see the module)
                closing, closing_raw = measure_and_fit(
                    f"{cluster.url}/calibrate-after", str(hdfs_work / "hdfs"), files=files, fit_dispatch=fit_dispatch,
                    announce=lambda s: print("calibrate (after):", s, flush=True))
                write_calibration(after_dir, closing, closing_raw)
                if keep is not None:
                    write_calibration(keep / "after", closing, closing_raw)
    calibrated = calibration_measurements(cal_dir, Calibration.load(cal_dir / "calibration.json"))
    errors: list[tuple[bool | None, list[float]]] = []
    inside: list[tuple[bool, bool]] = []
    drift: list[float] = []
    for row in rows:
        _tally(row, cast(list[float], row["predicted"]), calibrated, errors, inside, drift)
    _print_summary(errors, inside, drift)

    def keep_rows() -> None:  # written before the bracketed predictions too: nothing measured is lost
        if keep is not None:
            (keep / "validation.json").write_text(json.dumps(
                {"files": files, "heap": heap, "warm_first": warm.least, "warm_until": warm.agree,
                 "warm_most": warm.most, "warm_rounds": warm_rounds, "calibrations": calibrations,
                 "after": after_dir.is_dir(), "schedules": arguments, "rows": rows},
                indent=1) + "\n")

    keep_rows()
    if after_dir.is_dir():
        bracketed, _ = merge_calibrations([cal_dir, after_dir], fit_dispatch=fit_dispatch)
        bracketed_dir = _write_for_runs(bracketed, work)
        print("# predicted again from the opening and closing calibrations merged (bracketed):", flush=True)
        errors, inside, drift = [], [], []
        for row in rows:
            what, pred = _predict_row(row, bracketed, bracketed_dir, schedules, files, work)
            err = _tally(row, pred, calibrated, errors, inside, drift)
            row["predicted_bracketed"] = list(pred)
            _print_row(what, row["measured"], pred, err)
        _print_summary(errors, inside, drift)
        keep_rows()


#: a paced run's server is saturated while at least this many operations are due and not done
BACKLOG_SATURATED = 1000


class RunRecord(TypedDict):
    """One kept run, summed up (``runs.json`` holds a list of them)."""

    run: str  # its directory's name: when it started
    fair: bool
    schedule: str
    rate: float | None  # paced at (operations a second), or None: as fast as possible
    label: str  # its repeat (warm, 0, 1, 2, p0..., first0... for --warm-first), or "predicted"
    operations: int
    ops_per_s: float
    p50_ms: float  # from each operation's due time
    p99_ms: float
    saturated_ops_per_s: float  # NaN where the server never was
    by_op: NotRequired[dict[str, list[float]]]  # operation: [count, p50 ms, p99 ms] (since session 39)


def run_record(run_dir: Path) -> RunRecord:
    """One run directory that ``validate --keep-runs`` kept, summed up: what ran (the lock, the
    schedule, paced or not, its repeat's label), its throughput, p50 and p99 (its own
    ``summary.json``'s, as ``validate`` read them), and the rate it
    completed operations at while the server was saturated: for a run as fast as possible,
    between its 10th and 90th percentile completions; for a paced run, while at least
    ``BACKLOG_SATURATED`` operations were due and not done (the rate its bursts' backlog drained
    at, which makes its latency)."""
    config = json.loads((run_dir / "config.json").read_text())
    samples = pq.read_table(run_dir / "samples.parquet", columns=["scheduled_us", "end_us"])
    due, end = (samples.column(c).to_numpy().astype(float) for c in ("scheduled_us", "end_us"))
    backend, paced = str(config["backend"]), config.get("rate") is not None
    simulated = backend.startswith("simnn")
    label = "predicted" if simulated else backend.rsplit("-", 1)[1]
    fair = "fair=false" not in backend if simulated else not backend.rsplit("/", 1)[1].startswith("unfair")
    done = np.sort(end)
    if paced:
        due_sorted = np.sort(due)
        backlog = np.searchsorted(due_sorted, done, side="right") - np.arange(1, len(done) + 1)
        # the completions that follow one made with the backlog over the mark, over their gaps
        # (a schedule may have several bursts: the time between them is not counted)
        busy = backlog[:-1] >= BACKLOG_SATURATED
        span = float(np.diff(done)[busy].sum()) / 1e6
        saturated = int(busy.sum()) / span if span > 0 else float("nan")
    else:
        lo, hi = np.percentile(done, [10, 90])
        saturated = float(((done >= lo) & (done <= hi)).sum() / ((hi - lo) / 1e6)) if hi > lo else float("nan")
    summary = json.loads((run_dir / "summary.json").read_text())
    ops_per_s, p50_ms, p99_ms = _figure(summary)
    by_op = {op: [int(o["issued"]), float(o["latency_ms"]["p50"]), float(o["latency_ms"]["p99"])]
             for op, o in sorted(summary["operations"].items())}  # the run's own, by operation
    return RunRecord(run=run_dir.name, fair=fair, schedule=Path(str(config["schedule"])).name,
                     rate=config.get("rate"), label=label, operations=len(end), ops_per_s=ops_per_s,
                     p50_ms=p50_ms, p99_ms=p99_ms, saturated_ops_per_s=saturated, by_op=by_op)


def _kept_runs(kept: Path) -> list[RunRecord]:
    """``kept/runs.json``, made from the run directories (``kept/runs``, ``kept/sim``) if absent."""
    summary = kept / "runs.json"
    if summary.exists():
        records = cast(list[RunRecord], json.loads(summary.read_text()))
    else:
        records = [run_record(d) for part in ("runs", "sim") for d in sorted((kept / part).iterdir())]
        summary.write_text(json.dumps(records, indent=1) + "\n")
    return records


#: the figures a measured repeat is compared on with its row's others (``_repeat_ceiling``)
REPEAT_FIGURES = ("throughput as fast as possible", "p99 as fast as possible", "paced p99")


def _repeat_ceiling(sessions: list[list[RunRecord]]) -> str:
    """Per ``REPEAT_FIGURES``, how often one measured repeat of a row (a session's lock, schedule
    and pace) comes within 15 % of the median of the row's other repeats, as "figure met/of, ...":
    how often the measurement meets the model's bar against itself, the ceiling a model judged on
    one set of repeats can reach ("" when no row has two repeats)."""
    tally = {key: [0, 0] for key in REPEAT_FIGURES}  # (within 15 %, of)
    rows: dict[tuple[int, bool, str, bool], list[RunRecord]] = {}
    for n, records in enumerate(sessions):
        for r in records:
            if r["label"] in ("predicted", "warm") or r["label"].startswith("first"):
                continue  # a prediction, or a warm-up run before the measured repeats
            rows.setdefault((n, r["fair"], r["schedule"], r["rate"] is not None), []).append(r)
    for (_, _, _, paced), repeats in rows.items():
        if len(repeats) < 2:
            continue
        figures = [("paced p99", "p99_ms")] if paced else [(REPEAT_FIGURES[0], "ops_per_s"), (REPEAT_FIGURES[1], "p99_ms")]
        for i, one in enumerate(repeats):
            others = [r for j, r in enumerate(repeats) if j != i]
            for what, key in figures:
                median = float(np.median([float(r[key]) for r in others]))  # type: ignore[literal-required]
                tally[what][0] += abs(float(one[key]) / median - 1) <= 0.15  # type: ignore[literal-required]
                tally[what][1] += 1
    if not any(of for _, of in tally.values()):
        return ""
    return ", ".join(f"{what} {met}/{of}" for what, (met, of) in tally.items())


#: a thread group is kept in threads.json where its CPU and runnable time come to this much per operation (us)
THREAD_FLOOR_US = 0.5


def _threads_rows(micro_json: Path) -> list[dict[str, Any]]:
    """The compact form of one cluster's calibration measurements (``threads``)."""
    rows = []
    for r in json.loads(micro_json.read_text()):
        groups = r.get("namenode_threads_us_per_op") or {}
        rows.append({
            "op": r["op"], "clients": r["concurrency"], "operations": r["files"],
            "ops_per_s": round(float(r["ops_per_s"]), 1), "namenode_syncs": r.get("namenode_syncs"),
            **{name: round(float(r[key]), 1) if r.get(key) is not None else None
               for name, key in (("client_cpu_us", "client_cpu_us_per_op"), ("server_cpu_us", "server_cpu_us_per_op"),
                                 ("host_cpu_us", "host_cpu_us_per_op"), ("steal_us", "host_steal_us_per_op"))},
            "threads_us": {name: [round(float(g["cpu"]), 1), round(float(g["runnable"]), 1)]
                           for name, g in groups.items() if float(g["cpu"]) + float(g["runnable"]) >= THREAD_FLOOR_US},
        })
    return rows


def _kept_threads(kept: Path) -> dict[str, list[dict[str, Any]]]:
    """``kept/threads.json``, made from the clusters' ``micro.json`` the first time."""
    path = kept / "threads.json"
    if not path.exists():
        clusters = {name: _threads_rows(micro) for name, micro in (("fair", kept / "micro.json"),
                                                                  ("unfair", kept / "unfair" / "micro.json"))
                    if micro.exists()}
        if not clusters:
            raise SystemExit(f"{kept}: neither threads.json nor a micro.json to make it from")
        # a row a line: compact, and a diff shows which measurement changed
        path.write_text("{\n" + ",\n".join(
            f"{json.dumps(name)}: [\n" + ",\n".join(json.dumps(row, separators=(",", ":")) for row in rows) + "\n]"
            for name, rows in clusters.items()) + "\n}\n")
    return cast(dict[str, list[dict[str, Any]]], json.loads(path.read_text()))


def _model_core_wait(kept: Path) -> dict[tuple[OpCode, int], float]:
    """Per (operation, clients): the seconds per operation that bursts wait for a core in the
    model, each of the kept calibration's loads simulated with it as kept (none without a
    calibration)."""
    if not (kept / "calibration.json").exists():
        return {}
    cal = Calibration.load(kept / "calibration.json")
    return {load: simulate_measurement(m, cal.costs[m.op], cal.settings).core_wait_s
            for load, m in calibration_measurements(kept, cal).items()}


def threads_report(dirs: list[Path]) -> None:
    """Per cluster, operation and load: the medians over the rounds (see the module)."""
    for kept in dirs:
        model = _model_core_wait(kept)
        for cluster, rows in _kept_threads(kept).items():
            print(f"# {kept}: {cluster} lock (median of the rounds; us)")
            by_load: dict[tuple[str, int], list[dict[str, Any]]] = {}
            for row in rows:
                by_load.setdefault((row["op"], int(row["clients"])), []).append(row)
            for (op, clients), same in by_load.items():
                runnable = float(np.median([sum(g[1] for g in r["threads_us"].values()) for r in same]))
                per_sync = [r["threads_us"][EDIT_THREAD][1] * r["operations"] / r["namenode_syncs"]
                            for r in same if r.get("namenode_syncs") and EDIT_THREAD in r["threads_us"]]
                edit = f"   edit log's thread runnable a sync {float(np.median(per_sync)):6.1f}" if per_sync else ""
                waits = model.get((OPERATIONS[op], clients)) if cluster == "fair" else None
                modelled = f"   model: bursts waiting for a core {waits * 1e6:6.1f}" if waits is not None else ""
                steals = [float(r["steal_us"]) for r in same if r.get("steal_us") is not None]
                stolen = f"   host's steal {float(np.median(steals)):6.1f}" if steals else ""  # since session 66
                print(f"{op:10s} x {clients:2d}: {float(np.median([r['ops_per_s'] for r in same])):8,.0f} ops/s   "
                      f"NameNode threads runnable an operation {runnable:6.1f}{modelled}{edit}{stolen}", flush=True)


def runs_report(dirs: list[Path], *, by_op: bool = False) -> None:
    """What ``validate --keep-runs`` kept, run by run in the order they ran: each repeat's
    throughput, and the rate a paced run drained its backlog at beside the prediction's; then,
    over every paced run of ``dirs``, how the error of the predicted p99 follows the error of
    the predicted rate of draining (against the medians of the repeats). ``by_op``: each run's
    p50 and p99 per operation too (where its record has them: sessions 39 on)."""
    errors: list[tuple[float, float]] = []  # (draining, p99) per paced row
    sessions: list[list[RunRecord]] = []
    for kept in dirs:
        records = _kept_runs(kept)
        sessions.append(records)
        first: dict[str, str] = {}
        for r in sorted(records, key=lambda r: r["run"]):
            first.setdefault(r["schedule"], r["run"])
        # as they ran, each schedule's measured runs before its predictions
        records.sort(key=lambda r: (first[r["schedule"]], r["rate"] is not None, r["label"] == "predicted", r["run"]))
        print(f"# {kept}")
        print(f"{'lock':6s} {'schedule':18s} {'run':10s} {'paced at':>9s} {'ops/s':>8s} {'saturated':>9s} {'p50 ms':>8s} "
              f"{'p99 ms':>8s}")
        for fair in (True, False):
            for r in records:
                if r["fair"] == fair:
                    rate = f"{r['rate']:,.0f}" if r["rate"] else "-"
                    print(f"{'fair' if fair else 'unfair':6s} {r['schedule']:18s} {r['label']:10s} {rate:>9s} "
                          f"{r['ops_per_s']:8,.0f} {r['saturated_ops_per_s']:9,.0f} {r['p50_ms']:8.2f} {r['p99_ms']:8.2f}")
                    if by_op and "by_op" in r:
                        print("        " + "   ".join(f"{op} {n:,.0f}: p50 {p50:.2f} p99 {p99:.2f}"
                                                      for op, (n, p50, p99) in r["by_op"].items()))
            for schedule in first:
                paced = [r for r in records if r["fair"] == fair and r["schedule"] == schedule and r["rate"]]
                predicted = [r for r in paced if r["label"] == "predicted"]
                measured = [r for r in paced if r["label"] != "predicted"]
                if predicted and measured:
                    drain = float(np.median([r["saturated_ops_per_s"] for r in measured]))
                    p99 = float(np.median([r["p99_ms"] for r in measured]))
                    errors.append((predicted[0]["saturated_ops_per_s"] / drain - 1, predicted[0]["p99_ms"] / p99 - 1))
                    print(f"  paced, {'fair' if fair else 'unfair'}, {schedule}: draining {drain:,.0f} -> "
                          f"{predicted[0]['saturated_ops_per_s']:,.0f} ({errors[-1][0]:+.1%}), p99 {p99:.1f} -> "
                          f"{predicted[0]['p99_ms']:.1f} ms ({errors[-1][1]:+.1%})")
    if ceiling := _repeat_ceiling(sessions):
        print("# the bar the measurements meet among themselves: each measured repeat within 15 % of the "
              f"median of its row's other repeats (same cluster, same day): {ceiling}")
    if len(errors) > 2:
        drain_err, p99_err = np.array(errors).T
        slope, intercept = np.polyfit(drain_err, p99_err, 1)
        close = p99_err[np.abs(drain_err) <= 0.05]
        print(f"# {len(errors)} paced rows: the p99's error against the draining rate's: correlation "
              f"{np.corrcoef(drain_err, p99_err)[0, 1]:+.2f}, slope {slope:+.2f} (at no error {intercept:+.1%}); "
              f"the p99 within 15 % in {int((np.abs(p99_err) <= 0.15).sum())}; of the {len(close)} rows whose "
              f"draining came within 5 %, {int((np.abs(close) <= 0.15).sum())}")


def _refit(kept: Path, *, fit_dispatch: bool = True, edit_s: float | None = None,
           lock_share: float = READ_LOCK_SHARE, other: tuple[float, float, float | None] | None = None,
           ) -> tuple[Calibration, dict[tuple[OpCode, int], OpMeasurement]]:
    """A kept calibration's measurements fitted again with the current code, and the measurements.
    ``other``: the host's other work (share of a core, mean run in s, the chance a woken thread is
    placed behind a run, another core free or not; None: in turn) in the model, and out of the
    NameNode's measured CPU (which has the host's in it): its share over each batch's operations."""
    kept_cal = Calibration.load(calibration_file(kept))
    measured = calibration_measurements(kept, kept_cal)
    fitted = measured
    if other is not None:
        fitted = {key: replace(m, server_cpu_s=max(0.0, m.server_cpu_s - other[0] / m.ops_per_s))
                  for key, m in measured.items()}
    # the settings it measured; the lock hand-over's wake-up and a park's CPU are not measured:
    # today's defaults (the fit shortens the hand-over where a write's heavy load needs it)
    settings = replace(kept_cal.settings.before_fit(), park_s=ServerSettings().park_s)
    if edit_s is not None:
        settings = replace(settings, edit_s=edit_s)
    if other is not None:
        settings = replace(settings, other_share=other[0], other_s=other[1], other_place=other[2])
    cal, _ = calibrate(load_triples(kept, fitted), settings, dict(kept_cal.source), fit_dispatch=fit_dispatch,
                       lock_share=lock_share)
    return cal, measured


def _write_for_runs(cal: Calibration, work: Path) -> Path:
    """``cal`` in a directory of its own under ``work``, for ``simnn:?calibration=`` (``_predict_row``)."""
    cal_dir = Path(tempfile.mkdtemp(prefix="cal", dir=work))
    cal.write(cal_dir / "calibration.json")
    return cal_dir


def _predict_row(row: dict[str, Any], cal: Calibration, cal_dir: Path, schedules: dict[str, Path], files: int,
                 work: Path) -> tuple[str, Figure]:
    """One kept validation row (a run of a schedule, or a micro load) predicted from ``cal``
    (written in ``cal_dir``, for the runs), with its label as ``score`` prints it."""
    fair = bool(row["fair"])
    if "schedule" in row:
        url = f"simnn:?calibration={cal_dir}&fair={'true' if fair else 'false'}"
        pace = ["--rate", row["rate"], "--max-drift", "off"] if "rate" in row else ["--as-fast-as-possible"]
        how = f"paced at {row['rate']}" if "rate" in row else "as fast as possible"
        return (f"{row['schedule']}, {how}, {'fair' if fair else 'unfair'}",
                _run(schedules[row["schedule"]], url, work / "sim", *pace))
    return (f"{row['what']}, {'fair' if fair else 'unfair'}",
            _micro_predicted(row["op"], int(row["clients"]), files, cal.with_settings(fair=fair)))


def _print_row(what: str, measured: list[float], pred: Figure, err: list[float]) -> None:
    print(f"{what:40s} ops/s {measured[0]:9,.0f} -> {pred[0]:9,.0f} ({err[0]:+6.1f} %)   p50 {err[1]:+6.1f} %"
          f"   p99 {err[2]:+6.1f} %", flush=True)


def score(dirs: list[Path], *, fit_dispatch: bool = True, edit_s: float | None = None,
          lock_share: float = READ_LOCK_SHARE, calibration: Path | None = None,
          other: tuple[float, float, float | None] | None = None, bracket: bool = False) -> None:
    """Each kept validation predicted again with the model as it is now (see the module); with
    ``calibration``, every one from that calibration (refitted once) instead of its own; with
    ``bracket``, each from its opening and closing calibrations merged (``validate`` keeps the
    closing one in ``DIR/after`` since session 62)."""
    if bracket and calibration is not None:
        raise SystemExit("score: --bracket and --calibration each choose the calibration; give one")
    missing = [str(kept) for kept in dirs if bracket and not calibration_file(kept / "after").is_file()]
    if missing:
        raise SystemExit(f"score --bracket: no closing calibration (DIR/after) in {', '.join(missing)}")
    fixed = (None if calibration is None
             else _refit(calibration, fit_dispatch=fit_dispatch, edit_s=edit_s, lock_share=lock_share, other=other)[0])
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for kept in dirs:
            validation = json.loads((kept / "validation.json").read_text())
            # the schedules it measured (kept since session 39; before, the short ones), each made once
            schedules = _schedules(work, validation.get("schedules") or schedule_arguments("short"))
            # its own opening measurements are still what its again: rows are compared with
            measured = calibration_measurements(kept, Calibration.load(calibration_file(kept)))
            if bracket:
                cal, _ = merge_calibrations([kept, kept / "after"], lock_share=lock_share, fit_dispatch=fit_dispatch)
                how = "predicted from its opening and closing calibrations merged"
            elif fixed is None:
                cal, measured = _refit(kept, fit_dispatch=fit_dispatch, edit_s=edit_s, lock_share=lock_share, other=other)
                how = "refitted"
            else:
                cal, how = fixed, f"predicted from {calibration}"
            cal_dir = _write_for_runs(cal, work)
            print(f"# {kept}: {how} with the current model", flush=True)
            print("# the fitted host settings: " + ", ".join(  # what sim.fit chooses (ServerSettings.before_fit)
                f"{name} {getattr(cal.settings, name) * 1e3:.3f} ms" for name in FITTED_SETTINGS), flush=True)
            errors: list[tuple[bool | None, list[float]]] = []  # (paced: None for a micro row, the errors)
            inside: list[tuple[bool, bool]] = []  # the runs kept with their repeats' range: (paced, p99 inside it)
            drift: list[float] = []  # the calibration's own loads measured again, against themselves
            for row in validation["rows"]:
                what, pred = _predict_row(row, cal, cal_dir, schedules, int(validation["files"]), work)
                _print_row(what, row["measured"], pred, _tally(row, pred, measured, errors, inside, drift))
            _print_summary(errors, inside, drift)
            has_runs = (kept / "runs.json").exists() or (kept / "runs").is_dir()  # sessions 35 on keep their runs
            if has_runs and (ceiling := _repeat_ceiling([_kept_runs(kept)])):
                print("# the measurements against themselves (a repeat within 15 % of its row's others' median): "
                      f"{ceiling}", flush=True)


#: the validation bar in percent (issue 17: a prediction within 15 % of the measurement)
BAR_PCT = 100 * FIT_BAR


def _tally(row: dict[str, Any], pred: list[float] | tuple[float, ...],
           measured: dict[tuple[OpCode, int], OpMeasurement], errors: list[tuple[bool | None, list[float]]],
           inside: list[tuple[bool, bool]], drift: list[float]) -> list[float]:
    """One validation row's errors in % (throughput, p50, p99), appended to ``errors`` with its kind
    (paced: None for a micro row); whether the predicted p99 is within its repeats' range, to
    ``inside``, where kept; for a calibration load measured again, how far it is from its
    calibration's measurement (``measured``), to ``drift``."""
    med = row["measured"]
    err = [(p - m) / m * 100 for p, m in zip(pred, med, strict=True)]
    errors.append(("rate" in row if "schedule" in row else None, err))
    if "schedule" in row and "range" in row:
        low, high = row["range"][2]
        inside.append(("rate" in row, low <= pred[2] <= high))
    if str(row.get("what", "")).startswith("again:"):
        then = measured[(OPERATIONS[row["op"]], int(row["clients"]))].ops_per_s
        drift.append(abs(med[0] - then) / then * 100)
    return err


def _print_summary(errors: list[tuple[bool | None, list[float]]], inside: list[tuple[bool, bool]],
                   drift: list[float]) -> None:
    """A session's rows summed up (``score`` and ``validate``): how many come within the bar, by
    kind; how many predicted p99s fall within the measured repeats' range; and the noise floor
    (the calibration's own loads measured again, against themselves), named where it is beyond the
    bar: the host drifted more than the model is asked to come within, and the session's rows are
    no judgement of the model (session 56: 17.7 % on average)."""
    # "all rows" as before the paced runs were kept (sessions 1-13 have none), those apart
    for label, chosen in (("all rows", [e for e in errors if e[0] is not True]),
                          ("runs as fast as possible", [e for e in errors if e[0] is False]),
                          ("paced runs", [e for e in errors if e[0] is True])):
        if not chosen:
            continue
        thr = [abs(e[0]) for _, e in chosen]
        p99 = [abs(e[2]) for _, e in chosen]
        print(f"# {label}: throughput mean |error| {np.mean(thr):.1f} % (within 15 %: {sum(t <= 15 for t in thr)}"
              f"/{len(thr)}; mean signed {np.mean([e[0] for _, e in chosen]):+.1f} %), p99 mean |error| "
              f"{np.mean(p99):.1f} % (within 15 %: {sum(t <= 15 for t in p99)}/{len(p99)})", flush=True)
    for paced in (False, True):  # sessions 19 on keep each run's range over its repeats
        hits = [ok for p, ok in inside if p is paced]
        if hits:
            print(f"# {'paced runs' if paced else 'runs as fast as possible'}: the predicted p99 within the "
                  f"measured repeats' range in {sum(hits)}/{len(hits)}", flush=True)
    if drift:  # what a perfect model would miss by on this machine that session
        print(f"# noise floor: the calibration's loads measured again differ from its own measurements "
              f"by {np.mean(drift):.1f} % on average, {max(drift):.1f} % at most", flush=True)
        if np.mean(drift) > BAR_PCT:
            print(f"# warning: the host drifted more than the bar ({BAR_PCT:.0f} %) while this session ran: its rows "
                  "are no judgement of the model", flush=True)


#: the NameNode's thread groups ``loads`` prints (``namenode_threads_us_per_op``'s names)
THREAD_GROUPS = (("handlers", "IPC Server hand"), ("edit log", "FSEditLogAsync"), ("reader", "Socket Reader #"))


def again_report(dirs: list[Path]) -> None:
    """The calibration's own loads measured again at the end of each kept validation (the
    ``again:`` rows) against the calibration's medians of them, not against the model: how far
    the NameNode moved over the session by itself. Per session, then per load over the sessions
    (the median change and how many sessions came out faster)."""
    changes: dict[str, list[tuple[float, float]]] = {}
    for kept in dirs:
        medians = calibration_measurements(kept, Calibration.load(calibration_file(kept)))
        rows = json.loads((kept / "validation.json").read_text())["rows"]
        cells = []
        for row in rows:
            if not str(row.get("what", "")).startswith("again:"):
                continue
            m = medians[(OPERATIONS[row["op"]], int(row["clients"]))]  # as _tally finds it
            thr, p99 = row["measured"][0] / m.ops_per_s - 1, row["measured"][2] / (m.p99_s * 1e3) - 1
            key = f"{row['op']} x {row['clients']}"
            changes.setdefault(key, []).append((thr, p99))
            cells.append(f"{key} {100 * thr:+.0f} % / {100 * p99:+.0f} %")
        print(f"{kept.name}: " + "; ".join(cells))
        if calibration_file(kept / "after").is_file():
            _closing_report(kept, medians)
    print(f"# over {len(dirs)} sessions (throughput; p99), measured again against the calibration's medians:")
    for key, pairs in changes.items():
        thr, p99 = (np.array([p[i] for p in pairs]) for i in (0, 1))
        print(f"{key}: median {100 * np.median(thr):+.1f} % ({int((thr > 0).sum())} of {len(thr)} faster); "
              f"p99 median {100 * np.median(p99):+.1f} % ({int((p99 < 0).sum())} of {len(p99)} shorter)")


def _closing_report(kept: Path, opening: dict[tuple[OpCode, int], OpMeasurement]) -> None:
    """A kept validation's closing calibration (``DIR/after``) against its opening one, per load:
    the geometric mean over the operations of the closing figure against the opening one, for the
    throughput, the p99, and each side's CPU per operation (the client's too: a host that ran
    faster shows in both, a NameNode still compiling only in its own)."""
    closing = calibration_measurements(kept / "after", Calibration.load(calibration_file(kept / "after")))
    for clients in sorted({c for _, c in opening}):
        pairs = [(opening[key], closing[key]) for key in opening if key[1] == clients and key in closing]
        ratios = {name: float(np.exp(np.mean([np.log(getattr(b, name) / getattr(a, name)) for a, b in pairs])))
                  for name in ("ops_per_s", "p99_s", "client_cpu_s", "server_cpu_s")}
        faster = sum(b.ops_per_s > a.ops_per_s for a, b in pairs)
        print(f"  closing calibration against opening, {clients} clients ({faster} of {len(pairs)} faster): "
              f"throughput x{ratios['ops_per_s']:.3f}, p99 x{ratios['p99_s']:.3f}, client CPU/op "
              f"x{ratios['client_cpu_s']:.3f}, NameNode CPU/op x{ratios['server_cpu_s']:.3f}")


#: ``path``'s arms: the calibration's own measurement, the same without reading JMX, a plain micro
PATH_ARMS = ("calibrate", "no JMX", "plain")


def path(iterations: int, loads_at: tuple[int, int, int], op: str, files: int, heap: str) -> None:
    """Whether ``simnn calibrate``'s way of measuring (its JMX sync watch between batches, the
    NameNode's and the host's CPU read at each batch's ends) slows what it measures: on one fresh
    managed HDFS (fair lock, two warm-up rounds of the schedules), ``op`` at ``loads_at`` measured
    the calibration's way, the same without JMX, and as a plain ``micro``, the three in turn
    (rotated each iteration, so that a cluster still warming favours none). Per load, each arm
    against the plain micro of the same iteration: the geometric mean ratio and the Wilcoxon
    signed-rank test's p of its logarithm (``scipy``); then every arm's last half of the iterations
    against its first (whether the cluster still moved). Validations measured the calibration's
    creates at 64 clients again at their end 22.9 % faster (median over sessions 51-61, ``again``)."""
    from scipy.stats import wilcoxon  # only this command needs it

    figures: dict[str, list[dict[int, tuple[float, float]]]] = {arm: [] for arm in PATH_ARMS}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        schedules = _schedules(work, schedule_arguments("short"))
        with fresh_cluster("mb-simnn-path-", heap, fslock_fair=True) as (hdfs_work, cluster):
            _warm_up(schedules, f"{cluster.url}/warm", work / "runs", ["--hdfs-workdir", str(hdfs_work / "hdfs")],
                     WarmUp(least=2, agree=0.0))
            for i in range(iterations):
                for arm in PATH_ARMS[i % 3:] + PATH_ARMS[:i % 3]:
                    if arm == "plain":
                        got = {c: _micro(cluster.url, op, c, files, f"plain{i}")[::2] for c in loads_at}
                    else:
                        _, raw = measure_and_fit(f"{cluster.url}/{arm.replace(' ', '-')}{i}", str(hdfs_work / "hdfs"),
                                                 ops=(op,), files=files, loads=loads_at, repeat=1, warmup=False,
                                                 sync_watch=arm == "calibrate")
                        got = {int(r["concurrency"]): (float(r["ops_per_s"]), float(r["latency_ms"]["p99"]))
                               for r in raw}
                    figures[arm].append(got)
                    print(f"# {i + 1}/{iterations} {arm}: " + "; ".join(
                        f"x {c} {a:,.0f} ops/s, p99 {p:.2f} ms" for c, (a, p) in sorted(got.items())), flush=True)
    for arm in PATH_ARMS[:2]:
        for c in loads_at:
            for k, what in ((0, "throughput"), (1, "p99")):
                logs = np.log([it[c][k] / plain[c][k] for it, plain in zip(figures[arm], figures["plain"], strict=True)])
                test = f", p = {wilcoxon(logs).pvalue:.2f}" if len(logs) >= 6 else ""
                print(f"{arm} against plain, {op} x {c} {what}: {np.exp(logs.mean()):.3f} times{test}")
    half = iterations // 2
    if half:  # whether the cluster still moved over the iterations, every arm together
        for c in loads_at:
            early, late = ([it[c][0] for arm in PATH_ARMS for it in figures[arm][part]]
                           for part in (slice(0, half), slice(iterations - half, iterations)))
            print(f"{op} x {c}, every arm: the last {half} iterations' median throughput "
                  f"{np.median(late) / np.median(early):.3f} times the first {half}'s")


def loads(ops: str, between: str, keep: Path | None, heap: str) -> None:
    """On a fresh managed HDFS (fair lock): ``simnn calibrate``'s measurements of ``ops`` at its
    loads (1, 8, 64 clients), then, on the same NameNode, the same at the loads ``between``; then
    ``loads_report``."""
    chosen = tuple(op for op in ops.split(",") if op)
    counts = tuple(int(c) for c in between.split(","))
    with tempfile.TemporaryDirectory() as tmp:  # where the measurements go unless kept
        out = keep if keep is not None else Path(tmp)
        with fresh_cluster("mb-simnn-loads-", heap) as (work, cluster):
            for name, at, warm in (("fit", (1, 8, 64), True), ("between", counts, False)):
                cal, raw = measure_and_fit(cluster.url, str(work / "hdfs"), ops=chosen, loads=at, warmup=warm,
                                           announce=lambda line: print(line, flush=True))
                write_calibration(out / name, cal, raw)
        loads_report(out)


def loads_report(kept: Path) -> None:
    """Every load ``loads`` measured (``kept/fit``, ``kept/between``) against the model fitted
    with the current code on the calibration's own three (``kept/fit``): throughput, p50, p99 and
    the NameNode's CPU per operation, the model's and the measured, and the model's NameNode
    wake-ups per operation (its RPCs that find the NameNode empty); then, measured, the CPU of the
    NameNode's busiest thread groups, the edit log's syncs per operation and its thread's runnable
    time per sync (waiting for a core), the host's cores busy and the NameNode's threads waiting
    for a core (medians of the repeats). What the fit does
    between its loads, which ``score`` cannot show (every kept calibration measured three)."""
    cal, measured = _refit(kept / "fit")
    between = kept / "between"
    measured.update(calibration_measurements(between, Calibration.load(between / "calibration.json")))
    raw: dict[tuple[str, int], list[dict]] = {}
    for part in ("fit", "between"):
        for result in json.loads((kept / part / "micro.json").read_text()):
            raw.setdefault((str(result["op"]), int(result["concurrency"])), []).append(result)
    for op in cal.costs:
        print(f"# {op.label}: model (fitted at 1, 8, 64; a NameNode wake-up {cal.costs[op].server_wake_s * 1e6:.1f} us) "
              "against measured; NameNode CPU per operation, us; the model's NameNode wake-ups per operation")
        for (m_op, clients), m in sorted(measured.items(), key=lambda kv: kv[0][1]):
            if m_op is not op:
                continue
            cost = cal.costs[op]
            sim = simulate_measurement(m, cost, cal.settings)
            cpu = (cost.server_cpu_s + sim.server_wakes * cost.server_wake_s + sim.handler_wakes * cost.handler_wake_s
                   + sim.lock_parks * cal.settings.park_s + edit_thread_cpu(op, cal.settings))
            runs = next((r for (label, c), r in raw.items() if c == clients and OPERATIONS.get(label) is op), [])
            groups = [r.get("namenode_threads_us_per_op") or {} for r in runs]
            threads = "  ".join(
                f"{name} {np.median([g.get(key, {}).get('cpu', 0.0) for g in groups]):5.1f}"
                for name, key in THREAD_GROUPS) if groups else ""
            synced = [r["namenode_syncs"] / r["files"] for r in runs if isinstance(r.get("namenode_syncs"), int)]
            syncs = f"  syncs/op {np.median(synced):.2f}" if synced else ""
            # the edit log's thread's wait for a core after a sync (its runnable time per sync)
            edit_waits = [g[EDIT_THREAD]["runnable"] * r["files"] / r["namenode_syncs"]
                          for r, g in zip(runs, groups, strict=True) if r.get("namenode_syncs") and EDIT_THREAD in g]
            if edit_waits:
                syncs += f"  edit log runnable a sync {np.median(edit_waits):5.1f}"
            # the host's cores busy, and the NameNode's threads runnable without a core, on average
            busy = [r["host_cpu_us_per_op"] * r["ops_per_s"] / 1e6 for r in runs if "host_cpu_us_per_op" in r]
            waiting = [sum(g["runnable"] for g in group.values()) * r["ops_per_s"] / 1e6
                       for r, group in zip(runs, groups, strict=True) if group]
            host = (f"  cores busy {np.median(busy):.2f}, threads waiting {np.median(waiting):.2f}"
                    if busy and waiting else "")
            print(f"{op.label:12s} x {clients:3d}: ops/s {sim.ops_per_s:8,.0f} / {m.ops_per_s:8,.0f} "
                  f"({_pct(sim.ops_per_s, m.ops_per_s)})  p50 {_pct(sim.p50_s, m.p50_s)}  p99 {_pct(sim.p99_s, m.p99_s)}"
                  f"  CPU {cpu * 1e6:5.1f} / {m.server_cpu_s * 1e6:5.1f}  wake-ups {sim.server_wakes:.2f}"
                  f"  measured: {threads}{syncs}{host}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("speed")
    s.add_argument("--calls", type=int, default=10_000_000)
    s.add_argument("--scale-files", type=float, default=5400.0,
                   help="Of the built-in profile's type 1 for run's schedule (5,400 over 10,000 s: about 9.7 M operations).")
    v = sub.add_parser("validate")
    v.add_argument("--files", type=int, default=20_000)
    v.add_argument("--repeat", type=int, default=3)
    v.add_argument("--heap", default="2g",
                   help="The NameNode's heap (sessions 19-38: 1g; the runs' namespaces stay, a million files and more).")
    v.add_argument("--keep-calibration", type=Path, default=None,
                   help="Also write the calibration made here, and the validation's rows, to DIR.")
    v.add_argument("--warm-first", type=int, default=2, metavar="N",
                   help="Run every schedule at least N times, untimed, on each fresh cluster before anything is "
                        "measured (0: no warm-up).")
    v.add_argument("--warm-until", type=float, default=10.0, metavar="PCT",
                   help="Then go on, round after round, until each schedule's last two rounds agree within PCT %% "
                        "of its throughput (0: exactly --warm-first rounds; sessions 36-42 were warmed so).")
    v.add_argument("--warm-most", type=int, default=6, metavar="M", help="At most M warm-up rounds.")
    v.add_argument("--calibrate-most", type=int, default=2, metavar="K",
                   help="Calibrate again while the calibration's rounds disagree (more than 1.5x on a figure), at "
                        "most K times in all, and keep the one that disagrees on the fewest (1: once, as sessions "
                        "before 61).")
    v.add_argument("--schedules", choices=sorted(SCALES), default="short", dest="length",
                   help="The schedules' lengths (SCALES; sessions 39 and 40: long).")
    v.add_argument("--keep-runs", type=Path, default=None,
                   help="Also copy every run directory made (measured and predicted) to DIR/runs and DIR/sim.")
    v.add_argument("--no-calibrate-after", dest="after", action="store_false",
                   help="No closing calibration at the fair cluster's end, and no predictions from it merged with "
                        "the opening one (sessions before 62).")
    v.add_argument("--locks", default="fair,unfair", choices=("fair,unfair", "fair"),
                   help="The clusters to measure: both, or the fair lock's alone (the unfair lock's is predicted "
                        "from the fair cluster's calibration).")
    d = sub.add_parser("loads")
    d.add_argument("--ops", default="create,fileStatus", help="The micro operations, comma-separated.")
    d.add_argument("--between", default="4,16,32", help="Three client counts to measure besides 1, 8 and 64.")
    d.add_argument("--keep", type=Path, default=None, help="Also write both calibrations and their micro.json to DIR.")
    d.add_argument("--kept", type=Path, default=None, help="Report on what --keep wrote, without a cluster.")
    d.add_argument("--heap", default="1g")
    r = sub.add_parser("runs")
    r.add_argument("kept", type=Path, nargs="+", help="Directories validate --keep-runs wrote (their runs.json, made from their run directories the first time).")
    r.add_argument("--by-op", action="store_true", help="Each run's p50 and p99 per operation too (sessions 39 on).")
    t = sub.add_parser("threads")
    t.add_argument("kept", type=Path, nargs="+", help="Directories validate --keep-calibration wrote (their threads.json, "
                                                      "made from their micro.json the first time).")
    g = sub.add_parser("again")
    g.add_argument("dirs", type=Path, nargs="+", help="Directories validate --keep-calibration wrote.")
    h = sub.add_parser("path")
    h.add_argument("--iterations", type=int, default=8)
    h.add_argument("--loads", default="16,32,64", help="Three client counts, light to heavy.")
    h.add_argument("--op", default="create")
    h.add_argument("--files", type=int, default=10_000)
    h.add_argument("--heap", default="2g")
    c = sub.add_parser("score")
    c.add_argument("dirs", type=Path, nargs="+", help="Directories validate --keep-calibration wrote.")
    c.add_argument("--edit-us", type=float, default=None,
                   help="The edit-log thread's CPU per edit (settings.edit_s, us) to refit with; default: as kept.")
    c.add_argument("--lock-share", type=float, default=READ_LOCK_SHARE,
                   help="A read's share of its NameNode work under the lock to refit with (simnn calibrate --lock-share).")
    c.add_argument("--calibration", type=Path, default=None, metavar="PATH",
                   help="Predict every session from this calibration (a directory or its file, e.g. the built-in "
                        "src/mimesisbench/data/simnn_calibration.json), refitted once, instead of each one's own.")
    c.add_argument("--other-share", type=float, default=None, metavar="SHARE",
                   help="Refit with the host's other work in the model (settings.other_share, a share of one core), "
                        "taken out of the NameNode's measured CPU; default: none.")
    c.add_argument("--other-ms", type=float, default=2.0, help="With --other-share: its mean run (settings.other_s, ms).")
    c.add_argument("--other-place", type=float, default=None,
                   help="With --other-share: the chance a thread woken while a run holds a core is placed behind it, "
                        "another core free or not (settings.other_place; default: the cores in turn).")
    c.add_argument("--bracket", action="store_true",
                   help="Predict each session from its opening and closing calibrations merged (DIR and DIR/after, "
                        "which validate keeps since session 62), not from its opening one alone.")
    for p in (v, c):
        p.add_argument("--no-fit-dispatch", dest="fit_dispatch", action="store_false",
                       help="Leave the host's switch between threads at 0 (simnn calibrate --no-fit-dispatch).")
    a = ap.parse_args()
    if a.what == "speed":
        speed(a.calls, a.scale_files)
    elif a.what == "loads":
        if a.kept is not None:
            loads_report(a.kept)
        else:
            loads(a.ops, a.between, a.keep, a.heap)
    elif a.what == "runs":
        runs_report(a.kept, by_op=a.by_op)
    elif a.what == "threads":
        threads_report(a.kept)
    elif a.what == "again":
        again_report(a.dirs)
    elif a.what == "path":
        at = tuple(int(x) for x in a.loads.split(","))
        if len(at) != 3:
            ap.error("--loads takes three client counts")
        path(a.iterations, (at[0], at[1], at[2]), a.op, a.files, a.heap)
    elif a.what == "score":
        score(a.dirs, fit_dispatch=a.fit_dispatch, edit_s=a.edit_us * 1e-6 if a.edit_us is not None else None,
              lock_share=a.lock_share, calibration=a.calibration,
              other=None if a.other_share is None else (a.other_share, a.other_ms / 1e3, a.other_place),
              bracket=a.bracket)
    else:
        validate(a.files, a.repeat, a.heap, a.keep_calibration, fit_dispatch=a.fit_dispatch, keep_runs=a.keep_runs,
                 warm=WarmUp(a.warm_first, a.warm_until / 100, a.warm_most), length=a.length,
                 calibrate_most=a.calibrate_most, after=a.after,
                 locks=tuple(lock == "fair" for lock in a.locks.split(",")))


if __name__ == "__main__":
    main()
