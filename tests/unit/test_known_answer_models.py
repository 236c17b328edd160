"""Known-answer fits: hand-made audit logs whose time structure is known, through model -> generate.

(a) A poller lists one directory every 10 s (+-1 %) for 20 minutes: the generated listings of the
    poller's directory must come out periodic (median gap ~10 s, a small interquartile range), not
    as a renewal process with exponential-looking gaps.
(b) Every 60 s a job makes a ``_temporary`` directory, creates 20 files in it within one second,
    renames them into the job's directory, deletes ``_temporary`` and, 30 s later, the files: the
    generated creates must come in bursts (most create gaps under a second, creates per second as
    over-dispersed as the trace's) and every file must keep its create -> rename -> delete order.

The logs are in the NameNode's audit format (as in ``test_trace_audit.py``); the CLI runs in-process.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from numpy.typing import NDArray
from scipy.stats import ks_2samp
from tests.unit.cli_run import run_cli

from mimesisbench.schedule import read_schedule
from mimesisbench.schedule.format import OpCode
from mimesisbench.synth.check import check_schedule

T0 = datetime(2015, 10, 11, tzinfo=UTC)
WINDOW_S = 20 * 60
POLL_PERIOD_S = 10.0
JOB_PERIOD_S = 60.0
JOB_FILES = 20


def _line(ms: float, cmd: str, src: str, dst: str = "null") -> str:
    ts = T0 + timedelta(milliseconds=round(ms))
    stamp = ts.strftime("%Y-%m-%d %H:%M:%S") + f",{ts.microsecond // 1000:03d}"
    return (
        f"{stamp} INFO FSNamesystem.audit: allowed=true\tugi=etl (auth:SIMPLE)\tip=/10.0.0.1\tcmd={cmd}"
        f"\tsrc={src}\tdst={dst}\tperm=null\tproto=rpc"
    )


def _write(path: Path, events: list[tuple[float, str, str, str]]) -> Path:
    events.sort(key=lambda e: e[0])
    path.write_text("\n".join(_line(*e) for e in events) + "\n", encoding="utf-8")
    return path


def _fit_and_generate(
    log: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], types: str = "auto"
) -> pl.DataFrame:
    profile = tmp_path / "profile.json"
    code, _, err = run_cli(["model", "--audit", str(log), "--types", types, "--seed", "1", "-o", str(profile)], capsys)
    assert code == 0, err
    schedule = tmp_path / "schedule"
    code, _, err = run_cli(["generate", str(profile), "--seed", "1", "-o", str(schedule)], capsys)
    assert code == 0, err
    return read_schedule(schedule).events


def poller_trace(rng: np.random.Generator) -> list[tuple[float, str, str, str]]:
    """A daemon: getfileinfo of /apps then listStatus of /apps/incoming every 10 s (+-1 %); every
    2 minutes a batch lands in /apps/incoming (so the trace itself shows it is a directory) and is
    deleted a minute later; a few warehouse files opened now and then."""
    events: list[tuple[float, str, str, str]] = []
    t = 1000.0
    while t < WINDOW_S * 1000 - 1000:
        events.append((t, "getfileinfo", "/apps", "null"))
        events.append((t + 3, "listStatus", "/apps/incoming", "null"))
        t += POLL_PERIOD_S * 1000 * rng.uniform(0.99, 1.01)
    for batch in range(WINDOW_S // 120):
        landed = 5000.0 + 120_000 * batch + float(rng.uniform(0, 1000))
        events.append((landed, "create", f"/apps/incoming/batch-{batch:03d}", "null"))
        events.append((landed + 60_000, "delete", f"/apps/incoming/batch-{batch:03d}", "null"))
    for _ in range(60):
        k = int(rng.integers(8))
        events.append((float(rng.uniform(0, WINDOW_S * 1000)), "open", f"/warehouse/part-{k:05d}", "null"))
    return events


def test_a_poller_comes_out_periodic(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(7)
    trace = poller_trace(rng)
    events = _fit_and_generate(_write(tmp_path / "poller.audit.log", trace), tmp_path, capsys)
    listings = events.filter(pl.col("op") == int(OpCode.LIST_DIR))
    assert listings.height > 0, "the schedule lists no directory"
    # the poller's directory is the one listed most often
    poller = listings.group_by("target").len().sort(["len", "target"], descending=[True, False])["target"][0]
    times_s = listings.filter(pl.col("target") == poller).sort("time_us")["time_us"].to_numpy() / 1e6
    gaps = np.diff(times_s)
    expected = sum(1 for e in trace if e[1] == "listStatus")
    assert len(gaps) >= 0.5 * expected, (len(gaps), expected)
    q1, median, q3 = np.quantile(gaps, [0.25, 0.5, 0.75])
    assert median == pytest.approx(POLL_PERIOD_S, rel=0.05)
    # the trace's gaps lie within +-1 %: their IQR is ~0.1 s; exponential gaps of mean 10 s have ~11 s
    assert q3 - q1 < 1.0, (q1, median, q3)


def test_a_path_only_ever_listed_is_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without a snapshot, a path the trace only lists (no child seen) is taken for a directory:
    listings of it are directory listings in the schedule, not listStatus of a file."""
    events: list[tuple[float, str, str, str]] = []
    for k in range(120):
        events.append((10_000.0 * k + 1000, "listStatus", "/apps/queue", "null"))
        events.append((10_000.0 * k + 5000, "open", f"/warehouse/part-{k % 8:05d}", "null"))
    generated = _fit_and_generate(_write(tmp_path / "listed.audit.log", events), tmp_path, capsys)
    listed_dirs = generated.filter(pl.col("op") == int(OpCode.LIST_DIR)).height
    listed_files = generated.filter(pl.col("op") == int(OpCode.LIST_FILE)).height
    assert listed_dirs > 0 and listed_files == 0, (listed_dirs, listed_files)


def job_trace() -> list[tuple[float, str, str, str]]:
    """A job per minute: mkdirs _temporary, 20 creates within 1 s, 20 renames out of it, delete of
    _temporary (recursive); the job's files are deleted 30 s later."""
    events: list[tuple[float, str, str, str]] = []
    for job in range(int(WINDOW_S / JOB_PERIOD_S) - 1):
        t = 2000.0 + job * JOB_PERIOD_S * 1000
        base = f"/jobs/job-{job:03d}"
        events.append((t, "mkdirs", f"{base}/_temporary", "null"))
        for k in range(JOB_FILES):
            events.append((t + 10 + 45 * k, "create", f"{base}/_temporary/part-{k:05d}", "null"))
        for k in range(JOB_FILES):
            src = f"{base}/_temporary/part-{k:05d}"
            events.append((t + 1000 + 5 * k, "rename", src, f"{base}/part-{k:05d}"))
        events.append((t + 1200, "delete", f"{base}/_temporary", "null"))
        for k in range(JOB_FILES):
            events.append((t + 30_000 + 5 * k, "delete", f"{base}/part-{k:05d}", "null"))
    return events


def _dispersion(times_s: np.ndarray, window_s: float) -> float:
    """Variance over mean of the number of events per 1-second bin (1 for a Poisson stream)."""
    counts = np.bincount(np.floor(times_s).astype(np.int64), minlength=int(window_s) + 1).astype(float)
    return float(counts.var() / counts.mean())


def test_job_bursts_stay_bursts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = job_trace()
    events = _fit_and_generate(_write(tmp_path / "jobs.audit.log", trace), tmp_path, capsys)
    creates = events.filter(pl.col("op") == int(OpCode.CREATE)).sort("time_us")
    n_trace = sum(1 for e in trace if e[1] == "create")
    assert creates.height >= 0.5 * n_trace, (creates.height, n_trace)
    create_s = creates["time_us"].to_numpy() / 1e6
    gaps = np.diff(create_s)
    # the trace: 19 of every 20 create gaps are 45 ms; a Poisson stream at 1 create per 3 s has 28 % < 1 s
    assert float(np.mean(gaps < 1.0)) > 0.7
    trace_s = np.array(sorted(e[0] for e in trace if e[1] == "create")) / 1000.0
    trace_dispersion = _dispersion(trace_s, WINDOW_S)
    schedule_dispersion = _dispersion(create_s, max(WINDOW_S, float(create_s.max()) + 1))
    assert trace_dispersion / 3 <= schedule_dispersion <= trace_dispersion * 3, (trace_dispersion, schedule_dispersion)

    # every file keeps the order create -> rename -> delete (each of them at most once here)
    order = {int(OpCode.CREATE): 0, int(OpCode.RENAME_FILE): 1, int(OpCode.DELETE): 2}
    file_ops = events.filter(pl.col("op").is_in(list(order))).sort(["target", "time_us", "seq"])
    per_file = file_ops.group_by("target", maintain_order=True).agg(pl.col("op"))
    complete = 0
    for ops in per_file["op"].to_list():
        ranks = [order[int(op)] for op in ops]
        assert ranks == sorted(ranks), ops
        assert len(ranks) == len(set(ranks)), ops
        complete += ranks == [0, 1, 2]
    created = int((file_ops["op"] == int(OpCode.CREATE)).sum())
    assert complete >= 0.8 * created, (complete, created)


def test_a_concat_line_fits_and_generates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The NameNode logs concat's sources as one bracketed list (``src=[/a/x, /a/y]``, as the
    ``mixed`` trace of ``bench/make_real_traces.py`` has it): not a path of the namespace, so it must
    not become a directory at depth 0 that ``generate`` then refuses."""
    events: list[tuple[float, str, str, str]] = []
    for k in range(40):
        events.append((1000.0 * k, "create", f"/data/f{k:03d}", "null"))
        events.append((1000.0 * k + 500, "open", f"/data/f{k:03d}", "null"))
    events.append((50_000.0, "concat", "[/data/f001, /data/f002]", "/data/f000"))
    log = _write(tmp_path / "concat.audit.log", events)
    generated = _fit_and_generate(log, tmp_path, capsys)
    assert generated.height > 0


def test_files_made_late_keep_the_accesses_the_window_left_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file made at second k of a 10-minute window is stat-ed and opened every 10 s until the
    window ends: early files have many accesses, late ones few (popularity 2 .. 120). The
    generator draws each file's stream apart from its creation time; given to a late file, a long
    stream would lose its tail to the window's end (a fifth of a MapReduce trace's accesses were
    lost so). The streams go to the files with room for them: nearly every access is kept."""
    window_ms = 600_000
    events: list[tuple[float, str, str, str]] = []
    for k in range(60):
        made = 10_000.0 * k + 100
        path = f"/out/part-{k:05d}"
        events.append((made, "create", path, "null"))
        t = made + 5000
        while t < window_ms - 500:
            events.append((t, "getfileinfo", path, "null"))
            events.append((t + 20, "open", path, "null"))
            t += 10_000.0
    # one type: every file's stream is drawn from the same laws (K-means would split early and late)
    generated = _fit_and_generate(_write(tmp_path / "late.audit.log", events), tmp_path, capsys, types="1")
    accesses = generated.filter(pl.col("op").is_in([int(OpCode.GETFILEINFO), int(OpCode.OPEN)])).height
    n_trace = sum(1 for e in events if e[1] != "create")
    assert accesses >= 0.93 * n_trace, (accesses, n_trace)


def test_files_made_near_the_end_keep_their_first_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file made every 5 s of a 10-minute window is stat-ed and opened once, 1 to 90 s after it
    was made; near the end the window cuts the delays short (a file made 20 s before the end is
    read within those 20 s, or the trace would not show it read). The generator draws each file's
    delay from the type's law apart from when the file was made: a late file drawing a delay past
    the end lost its whole stream (7 % of the reads here; on a real trace 1.3 points of the op
    mix). It draws again below the room it has: every file keeps its reads."""
    window_ms = 600_000
    rng = np.random.default_rng(11)
    events: list[tuple[float, str, str, str]] = []
    for k in range(120):
        made = 5000.0 * k + 100
        path = f"/in/batch-{k:04d}"
        events.append((made, "create", path, "null"))
        room = window_ms - 200 - made
        delay = float(rng.uniform(1000, 90_000))
        if delay >= room:
            delay = float(rng.uniform(0, room))
        events.append((made + delay, "getfileinfo", path, "null"))
        events.append((made + delay + 20, "open", path, "null"))
    generated = _fit_and_generate(_write(tmp_path / "batches.audit.log", events), tmp_path, capsys, types="1")
    opens = generated.filter(pl.col("op") == int(OpCode.OPEN)).height
    assert abs(opens - 120) <= 3, opens


def _warehouse_reads(rng: np.random.Generator, window_ms: int) -> list[tuple[float, str, str, str]]:
    """60 warehouse files, each stat-ed and opened 15 ms later at Poisson times (every 15 s on
    average) through the window."""
    events: list[tuple[float, str, str, str]] = []
    for k in range(60):
        path = f"/wh/t{k:02d}/part-00000"
        t = float(rng.exponential(15_000.0))
        while t < window_ms - 100:
            events.append((t, "getfileinfo", path, "null"))
            events.append((t + 15, "open", path, "null"))
            t += float(rng.exponential(15_000.0))
    return events


def test_files_read_through_the_window_keep_their_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Reader-style load: 60 files of a warehouse (none made in the window) are each stat-ed and
    opened at random (Poisson, every 15 s on average) through a 10-minute window. A stream of N
    accesses drawn from the gap law lasts about the window, give or take a fifth: cut at the
    window's end, a third of the files lost reads. A stream too long for its room is redrawn
    (its gaps conditioned on fitting, as every stream in the trace did): the reads are kept."""
    window_ms = 600_000
    rng = np.random.default_rng(5)
    events = [(window_ms - 1.0, "getfileinfo", "/wh", "null"), *_warehouse_reads(rng, window_ms)]
    generated = _fit_and_generate(_write(tmp_path / "readers.audit.log", events), tmp_path, capsys, types="1")
    opens = generated.filter(pl.col("op") == int(OpCode.OPEN)).height
    n_trace = sum(1 for e in events if e[1] == "open")
    assert abs(opens - n_trace) <= 0.03 * n_trace, (opens, n_trace)


def test_rare_transitions_keep_their_own_gaps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Readers stat a file and open it 15 ms later (the type's one frequent transition); now and
    then (20 times in all, at random) a file's times are set. The rare transitions into and out
    of setTimes (under ``MIN_TRANSITION_GAPS`` each) share one law of their own gaps, seconds
    long: drawn from the type's pooled law instead, about half of them would be the 15 ms of
    getfileinfo>open, where the trace has almost none under 100 ms."""
    window_ms = 600_000
    rng = np.random.default_rng(8)
    events = _warehouse_reads(rng, window_ms)
    for k in range(20):
        path = f"/wh/t{k:02d}/part-00000"
        events.append((float(rng.uniform(1000, window_ms - 1000)), "setTimes", path, "null"))
    generated = _fit_and_generate(_write(tmp_path / "touched.audit.log", events), tmp_path, capsys, types="1")
    ev = generated.filter(pl.col("op") != int(OpCode.CREATE)).sort("target", "time_us", maintain_order=True)
    gap = ev.select(
        pl.col("time_us").diff().over("target").alias("gap"),
        (pl.col("op") == int(OpCode.SET_TIMES)).alias("into"),
        (pl.col("op").shift(1).over("target") == int(OpCode.SET_TIMES)).alias("out"),
    ).drop_nulls("gap")
    near_touch = gap.filter(pl.col("into") | pl.col("out").fill_null(False))
    assert near_touch.height >= 20
    short = near_touch.filter(pl.col("gap") <= 100_000).height / near_touch.height
    assert short < 0.25, short  # 0.06 with the rare law; 0.58 when they draw the pooled one


def test_committed_files_are_renamed_exactly_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A committer's files: created, stat-ed, renamed into the output, stat-ed again and read,
    each exactly once. A first-order chain cannot say so (after a getfileinfo comes a rename or
    an open, half and half: it renames some files twice and never reads them); the type's kept
    sequences make every file's stream the trace's."""
    window_ms = 600_000
    rng = np.random.default_rng(9)
    events: list[tuple[float, str, str, str]] = []
    for k in range(150):
        t = float(rng.uniform(1000, window_ms - 70_000))
        tmp, out = f"/job/_temporary/part-{k:05d}", f"/job/out/part-{k:05d}"
        events += [(t, "create", tmp, "null"), (t + 500, "getfileinfo", tmp, "null"), (t + 1000, "rename", tmp, out),
                   (t + 1500, "getfileinfo", out, "null"), (t + 2000, "open", out, "null"),
                   (t + 60_000, "delete", out, "null")]  # fmt: skip
    generated = _fit_and_generate(_write(tmp_path / "committer.audit.log", events), tmp_path, capsys, types="1")
    per_file = generated.group_by("target").agg(
        renames=(pl.col("op") == int(OpCode.RENAME_FILE)).sum(), opens=(pl.col("op") == int(OpCode.OPEN)).sum()
    )
    assert per_file.height >= 140
    exact = per_file.filter((pl.col("renames") == 1) & (pl.col("opens") == 1)).height / per_file.height
    assert exact >= 0.9, exact


def test_a_fitted_type_keeps_the_creations_its_window_saw(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The job trace's 20 creations a minute fill the window, so the C_j draws of a type sum to
    about the window: cut at the window's end, about every other draw would lose its last bursts.
    A fitted profile's creation count is what the window saw, and the schedule keeps it."""
    trace = job_trace()
    events = _fit_and_generate(_write(tmp_path / "jobs.audit.log", trace), tmp_path, capsys)
    n_trace = sum(1 for e in trace if e[1] == "create")
    creates = events.filter(pl.col("op") == int(OpCode.CREATE)).height
    assert abs(creates - n_trace) <= 0.02 * n_trace, (creates, n_trace)


def test_two_creations_most_of_the_window_apart_are_both_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A daemon drops a marker at 6 s and another at 26.5 s of a 29 s window (as the real 123-line
    poller trace does): C_j holds their one gap, 20.5 s, and a first creation drawn from C_j too
    puts the second past the window whatever the draw. The two keep their gap, placed where they fit."""
    events: list[tuple[float, str, str, str]] = []
    for k in range(15):
        t = 500.0 + 1900.0 * k
        events += [(t, "getfileinfo", "/apps", "null"), (t + 2, "listStatus", "/apps/in", "null")]
    events += [(6000.0, "create", "/apps/in/_MARKER-1", "null"), (26_500.0, "create", "/apps/in/_MARKER-2", "null")]
    for seed in (1, 2, 3):
        profile = tmp_path / "profile.json"
        code, _, err = run_cli(["model", "--audit", str(_write(tmp_path / "markers.audit.log", list(events))), "-o", str(profile)], capsys)
        assert code == 0, err
        schedule = tmp_path / f"schedule-{seed}"
        code, _, err = run_cli(["generate", str(profile), "--seed", str(seed), "-o", str(schedule)], capsys)
        assert code == 0, err
        made = read_schedule(schedule).events.filter(pl.col("op") == int(OpCode.CREATE))["time_us"].sort().to_numpy()
        assert made.size == 2, made
        assert made[1] - made[0] == pytest.approx(20_500_000, abs=2_000), made


def _stream_ends(generated: pl.DataFrame) -> pl.DataFrame:
    """Each file's accesses in order (creations and deletions left out): its ops as a list."""
    accesses = generated.filter(~pl.col("op").is_in([int(OpCode.CREATE), int(OpCode.DELETE)]))
    return accesses.sort("target", "time_us", "seq").group_by("target", maintain_order=True).agg(pl.col("op"))


def test_readers_streams_end_with_the_open_their_lookup_led_to(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """200 warehouse files, each read 4 to 25 times at Poisson times: a read is one or two
    getfileinfo then an open 15 ms later, so every stream ends with an open. A walk of the chain
    drawn for a stream's count ends wherever the count stops it (after a getfileinfo about half
    the time, an open short per such stream); bridged to the type's law of last commands, the
    walks end as the trace's do and the type keeps its share of opens."""
    window_ms = 600_000
    rng = np.random.default_rng(11)
    events: list[tuple[float, str, str, str]] = []
    for k in range(200):
        path = f"/wh/t{k:03d}/part-00000"
        reads = int(rng.integers(4, 26))
        times = np.sort(rng.uniform(1000, window_ms - 1000, reads))
        for t in times:
            for j in range(int(rng.integers(1, 3))):
                events.append((float(t) + 5 * j, "getfileinfo", path, "null"))
            events.append((float(t) + 15, "open", path, "null"))
    generated = _fit_and_generate(_write(tmp_path / "reads.audit.log", events), tmp_path, capsys, types="1")
    streams = _stream_ends(generated)
    assert streams.height >= 190
    ends_with_open = float(np.mean([ops[-1] == int(OpCode.OPEN) for ops in streams["op"].to_list()]))
    assert ends_with_open > 0.9, ends_with_open  # 0.4 for plain walks
    trace_share = sum(1 for e in events if e[1] == "open") / len(events)
    ops = generated.filter(pl.col("op").is_in([int(OpCode.OPEN), int(OpCode.GETFILEINFO)]))["op"]
    share = float((ops == int(OpCode.OPEN)).mean())
    assert share == pytest.approx(trace_share, abs=0.01), (share, trace_share)


def test_a_few_pollers_keep_their_polls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Three daemons list their own directories through a 10-minute window, every 300, 400 and
    500 ms. The type's popularity holds their three counts: drawn as points of a piecewise-linear
    law they came out 4 % short in all; and the gap law pooled over the three makes the busiest
    stream a tenth too long for the window, where it lost its last polls. The counts are drawn
    as the point masses they are and a stream too long for a window that held the trace's
    longest one is squeezed into it: every poll is kept. Each daemon's stream lasts the window,
    as it did in the trace, so the last minute keeps its polls too."""
    window_ms = 600_000
    rng = np.random.default_rng(12)
    events: list[tuple[float, str, str, str]] = []
    for d, period in enumerate((300.0, 400.0, 500.0)):
        t = float(rng.uniform(0, period))
        while t < window_ms - 1:
            events.append((t, "listStatus", f"/daemons/d{d}/inbox", "null"))
            t += period * float(rng.uniform(0.98, 1.02))
    for k in range(30):  # a few files, so that the directories have a kind of their own
        events.append((float(rng.uniform(0, window_ms - 1)), "open", f"/warehouse/part-{k % 6:05d}", "null"))
    # one type per kind: the three daemons' directories share their laws
    generated = _fit_and_generate(_write(tmp_path / "pollers.audit.log", events), tmp_path, capsys, types="1")
    listed = generated.filter(pl.col("op") == int(OpCode.LIST_DIR))
    n_trace = sum(1 for e in events if e[1] == "listStatus")
    assert abs(listed.height - n_trace) <= 0.005 * n_trace, (listed.height, n_trace)
    # each polls at its own rate to the window's end: drawing the pooled gaps, the slowest fell
    # silent before it (its stream a sixth short) and the last minute lost a tenth of its polls
    last = listed.filter(pl.col("time_us") >= (window_ms - 60_000) * 1000).height
    trace_last = sum(1 for e in events if e[1] == "listStatus" and e[0] >= window_ms - 60_000)
    assert abs(last - trace_last) <= 0.03 * trace_last, (last, trace_last)
    # validate --trace: the load per second is the trace's; against the same polls packed into
    # the window's first half (each second twice as busy, then silence) it is far off
    code, out, err = run_cli(["validate", str(tmp_path / "schedule"), "--trace", str(tmp_path / "pollers.audit.log"),
                              "--json"], capsys)  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["ks_load"] < 0.15
    packed = _write(tmp_path / "packed.audit.log", [(t / 2, cmd, src, dst) for t, cmd, src, dst in events])
    code, out, err = run_cli(["validate", str(tmp_path / "schedule"), "--trace", str(packed), "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["ks_load"] > 0.4


def test_files_deleted_in_the_window_are_all_deleted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """300 files created through a 10-minute window, each read once and deleted before the window
    ends (up to 5 minutes after its creation). The deletion delays were drawn apart from the
    creation times: given to a file made late, a long delay fell past the window's end and the
    file was never deleted. Given by rank (the longest to the files made first), they keep their
    law and every deletion lands in the window."""
    window_ms = 600_000
    rng = np.random.default_rng(13)
    events: list[tuple[float, str, str, str]] = []
    for k in range(300):
        made = float(rng.uniform(1000, window_ms - 10_000))
        path = f"/tmp/stage/f{k:04d}"
        delay = float(rng.uniform(2000, min(300_000.0, window_ms - 1000 - made)))
        events += [(made, "create", path, "null"), (made + 1000, "open", path, "null"),
                   (made + delay, "delete", path, "null")]  # fmt: skip
    generated = _fit_and_generate(_write(tmp_path / "stage.audit.log", events), tmp_path, capsys, types="1")
    deletes = generated.filter(pl.col("op") == int(OpCode.DELETE))
    creates = generated.filter(pl.col("op") == int(OpCode.CREATE)).height
    assert creates >= 290
    assert deletes.height >= 0.98 * creates, (deletes.height, creates)


def test_validate_counts_a_job_s_deleted_temporary_as_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Jobs write their parts under ``_temporary`` (made by the creates, no mkdirs is audited),
    rename them out and delete ``_temporary``: in the trace it is a directory (files were made in
    it) whose one access is the delete. The schedule makes it and deletes it empty, so its events
    alone show no child: ``validate --trace`` takes the schedule's directories from its own table
    and counts those deletes as deletes of directories, as in the trace (not of files)."""
    events: list[tuple[float, str, str, str]] = []
    for job in range(60):
        t = 2000.0 + job * 9000.0
        base = f"/jobs/job-{job:03d}"
        for k in range(4):
            events.append((t + 10 * k, "create", f"{base}/_temporary/0/part-{k:05d}", "null"))
            events.append((t + 500 + 10 * k, "rename", f"{base}/_temporary/0/part-{k:05d}", f"{base}/part-{k:05d}"))
        events.append((t + 1000, "delete", f"{base}/_temporary", "null"))
        events.append((t + 2000, "listStatus", base, "null"))
    log = _write(tmp_path / "temporary.audit.log", events)
    _fit_and_generate(log, tmp_path, capsys)
    code, out, err = run_cli(["validate", str(tmp_path / "schedule"), "--trace", str(log), "--json"], capsys)
    assert code == 0, err
    targets = json.loads(out)["by_command"]["delete"]["targets"]
    assert targets["directory"]["n_trace"] == 60
    assert targets["directory"]["n_schedule"] >= 54, targets
    assert targets.get("file", {}).get("n_schedule", 0) <= 6, targets


def test_short_and_long_streams_walk_laws_of_their_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One type, two populations: 400 files touched 5 to 8 times by metadata writes and lookups in
    any order (streams too varied for kept sequences), and 60 files read 15 to 30 times (a lookup,
    then an open). Pooled, the chain's lookups lead to writes as often as to opens: the readers'
    long walks wander into writes and lose opens, the short ones gain them. Each walks the law
    fitted on its own streams: the readers' files keep their reads."""
    window_ms = 600_000
    rng = np.random.default_rng(14)
    events: list[tuple[float, str, str, str]] = []
    touches = ("setTimes", "setOwner", "setPermission", "getfileinfo", "setReplication")
    for k in range(400):
        path = f"/data/touched/f{k:04d}"
        for t in np.sort(rng.uniform(1000, window_ms - 1000, int(rng.integers(5, 9)))):
            events.append((float(t), touches[int(rng.integers(len(touches)))], path, "null"))
    for k in range(60):
        path = f"/data/read/f{k:03d}"
        for t in np.sort(rng.uniform(1000, window_ms - 1000, int(rng.integers(15, 31)))):
            events += [(float(t), "getfileinfo", path, "null"), (float(t) + 15, "open", path, "null")]
    generated = _fit_and_generate(_write(tmp_path / "two.audit.log", events), tmp_path, capsys, types="1")
    per_file = generated.group_by("target").agg(
        n=pl.len(), opens=(pl.col("op") == int(OpCode.OPEN)).sum(), info=(pl.col("op") == int(OpCode.GETFILEINFO)).sum()
    )
    long = per_file.filter(pl.col("n") > 10)
    assert long.height >= 50
    # the readers' long streams are half opens, half lookups (0.26 opens with one pooled chain)
    share = float(long["opens"].sum() / long["n"].sum())
    assert share == pytest.approx(0.5, abs=0.03), share
    n_trace = sum(1 for e in events if e[1] == "open")
    opens = int(per_file["opens"].sum())
    assert abs(opens - n_trace) <= 0.03 * n_trace, (opens, n_trace)


def test_a_file_s_life_is_not_tied_to_its_birth(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """300 files made through the first 250 s of a 10-minute window, each read now and then and
    deleted 10 to 300 s after it was made, whenever it was made (every deletion fits the window).
    Sorted to fit (the longest life to the file made first), the lives were tied to the births:
    the first files made were the last deleted and the deletions piled up at the window's end.
    Assigned at random, mending only what does not fit, the deletions spread as the trace's."""
    rng = np.random.default_rng(15)
    events: list[tuple[float, str, str, str]] = []
    for k in range(300):
        made = float(rng.uniform(1000, 250_000))
        life = float(rng.uniform(10_000, 300_000))
        path = f"/tmp/work/f{k:04d}"
        events += [(made, "create", path, "null"), (made + 1000, "open", path, "null"), (made + life, "delete", path, "null")]
    generated = _fit_and_generate(_write(tmp_path / "lives.audit.log", events), tmp_path, capsys, types="1")
    created = generated.filter(pl.col("op") == int(OpCode.CREATE)).select("target", made="time_us")
    deleted = generated.filter(pl.col("op") == int(OpCode.DELETE)).select("target", gone="time_us")
    lives = created.join(deleted, on="target")
    assert lives.height >= 280
    # the trace: no correlation between when a file is made and how long it lives
    rho = float(np.corrcoef(lives["made"].to_numpy(), (lives["gone"] - lives["made"]).to_numpy())[0, 1])
    assert abs(rho) < 0.3, rho  # -0.99 when sorted


def test_each_file_s_owner_is_set_once_whatever_its_reads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """300 files, each looked up and read 6 to 40 times, and its owner and replication set once
    each. A first-order chain gives a long stream rare commands in proportion to its length: the
    files read most got two or three setOwner and those read least none. The type's kept streams
    give each file the trace's: one of each."""
    window_ms = 600_000
    rng = np.random.default_rng(16)
    events: list[tuple[float, str, str, str]] = []
    for k in range(300):
        path = f"/data/tables/f{k:04d}"
        reads = np.sort(rng.uniform(1000, window_ms - 1000, int(rng.integers(6, 41))))
        for t in reads:
            events += [(float(t), "getfileinfo", path, "null"), (float(t) + 15, "open", path, "null")]
        for cmd in ("setOwner", "setReplication"):
            events.append((float(rng.uniform(reads[0], reads[-1])), cmd, path, "null"))
    generated = _fit_and_generate(_write(tmp_path / "owners.audit.log", events), tmp_path, capsys, types="1")
    per_file = generated.group_by("target").agg(
        owner=(pl.col("op") == int(OpCode.SET_OWNER)).sum(), replication=(pl.col("op") == int(OpCode.SET_REPLICATION)).sum()
    )
    assert per_file.height >= 290
    for column in ("owner", "replication"):
        once = float((per_file[column] == 1).mean())
        assert once >= 0.97, (column, once)


def daemon_rounds_trace(rng: np.random.Generator) -> list[tuple[float, str, str, str]]:
    """A daemon stats /apps then lists its four directories, all within 5 ms, every 2 s (+-1 %) for
    10 minutes; warehouse files opened now and then, apart from its rounds."""
    window_ms = 600_000
    events: list[tuple[float, str, str, str]] = []
    t = 500.0
    while t < window_ms - 500:
        events.append((t, "getfileinfo", "/apps", "null"))
        for k, name in enumerate(("a", "b", "c", "d")):
            events.append((t + 1 + k, "listStatus", f"/apps/{name}", "null"))
        t += 2000.0 * rng.uniform(0.99, 1.01)
    for _ in range(200):
        k = int(rng.integers(40))
        events.append((float(rng.uniform(0, window_ms)), "open", f"/warehouse/part-{k:05d}", "null"))
    return events


def _round_sizes(times_us: NDArray[np.int64], targets: NDArray[np.int64]) -> NDArray[np.int64]:
    """Distinct targets per round: events of the given targets split where 100 ms pass without one."""
    order = np.argsort(times_us, kind="stable")
    times_us, targets = times_us[order], targets[order]
    rounds = np.concatenate([[0], np.cumsum(np.diff(times_us) > 100_000)])
    return pl.DataFrame({"round": rounds, "target": targets}).group_by("round").agg(pl.col("target").n_unique())["target"].to_numpy()


def test_a_daemons_directories_come_out_in_its_rounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Five objects visited together every 2 s: each object's stream, drawn apart from the
    others', would put them at unrelated moments (about one object per 100 ms-separated burst);
    the profile keeps them co-visited, and the schedule visits them together, round after round."""
    trace = daemon_rounds_trace(np.random.default_rng(5))
    log = _write(tmp_path / "daemon.audit.log", trace)
    events = _fit_and_generate(log, tmp_path, capsys)
    profile = json.loads((tmp_path / "profile.json").read_text(encoding="utf-8"))
    rows = profile["covisits"]["groups"]
    assert [(r["size"], r["share"]) for r in rows] == [(5, 1.0)], rows
    polls = events.filter(pl.col("op").is_in([int(OpCode.LIST_DIR), int(OpCode.GETFILEINFO_DIR)]))
    polled = polls.group_by("target").len().filter(pl.col("len") >= 200)["target"]
    assert polled.len() == 5, polls.group_by("target").len()
    daemon = polls.filter(pl.col("target").is_in(polled.implode()))
    sizes = _round_sizes(daemon["time_us"].to_numpy(), daemon["target"].to_numpy())
    # the trace: every round holds all five; streams drawn apart hold one or two
    assert float(np.median(sizes)) == 5, np.bincount(sizes)
    assert float(np.mean(sizes >= 4)) > 0.9, np.bincount(sizes)
    assert check_schedule(tmp_path / "schedule").ok
    # the five share one daemon's ~300 gaps, so their noise counts five times: drawn i.i.d. from
    # the fitted law they were about 0.05 off the trace's in KS, stratified per object (each
    # object's gaps one in each stratum of the law) within the law's table
    made = np.diff(np.sort(daemon.filter(pl.col("target") == polled[0])["time_us"].to_numpy()) / 1000.0)
    seen = np.diff(sorted(round(e[0]) for e in trace if e[2] == "/apps"))  # the log has whole ms
    ks = float(ks_2samp(made, seen).statistic)
    assert ks < 0.025, ks


def queries_trace(rng: np.random.Generator) -> list[tuple[float, str, str, str]]:
    """A query engine for 10 minutes, a query every 0.5-1.5 s: it stats and lists one of three
    tables' directories and lists 1 or 2 of the table's six partitions within 20 ms."""
    events: list[tuple[float, str, str, str]] = []
    t = 300.0
    while t < 600_000 - 2000:
        table = f"/warehouse/t{int(rng.integers(3))}"
        events += [(t, "getfileinfo", table, "null"), (t + 2, "listStatus", table, "null")]
        for k, part in enumerate(rng.choice(6, size=int(rng.integers(1, 3)), replace=False)):
            events.append((t + 5 + 7 * k, "listStatus", f"{table}/dt={int(part)}", "null"))
        t += float(rng.uniform(500, 1500))
    return events


def test_a_querys_partitions_come_out_in_its_tables_visits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each partition is listed on a third of its table's queries: apart, its listings come at
    moments of their own, and the queries lose their bursts; nested in the table's visits, each
    listing follows a listing of its table within milliseconds, as in the trace."""
    log = _write(tmp_path / "queries.audit.log", queries_trace(np.random.default_rng(11)))
    events = _fit_and_generate(log, tmp_path, capsys)
    profile = json.loads((tmp_path / "profile.json").read_text(encoding="utf-8"))
    assert profile["covisits"]["nested"], profile["covisits"]
    listings = events.filter(pl.col("op") == int(OpCode.LIST_DIR))
    counts = listings.group_by("target").len().sort("len", descending=True)
    tables, partitions = counts["target"][:3], counts["target"][3:]
    table_times = np.sort(listings.filter(pl.col("target").is_in(tables.implode()))["time_us"].to_numpy())
    part_times = listings.filter(pl.col("target").is_in(partitions.implode()))["time_us"].to_numpy()
    before = np.searchsorted(table_times, part_times, side="right") - 1
    after_table = (before >= 0) & (part_times - table_times[np.maximum(before, 0)] <= 100_000)
    # the trace: all; drawn apart about one in ten (a table listing per 0.33 s on average, 0.1 s each)
    assert float(after_table.mean()) > 0.8, float(after_table.mean())
    assert check_schedule(tmp_path / "schedule").ok


def job_loop_trace(rng: np.random.Generator) -> list[tuple[float, str, str, str]]:
    """Six job loops for 20 minutes, each on its own output directory, a cycle every 5 s (+-0.5 %):
    mkdirs, a lookup 0.1-2.4 s later (uniform), delete at 4.9 s. The cycle's parts vary, its
    length hardly: the lookup's gaps to the mkdirs before it and to the delete after it go
    together (they sum to 4.9 s)."""
    events: list[tuple[float, str, str, str]] = []
    for job in range(6):
        out = f"/jobs/j{job}/out"
        t = 200.0 + 800.0 * job
        while t < WINDOW_S * 1000 - 6000:
            events.append((t, "mkdirs", out, "null"))
            events.append((t + float(rng.uniform(100, 2400)), "getfileinfo", out, "null"))
            events.append((t + 4900, "delete", out, "null"))
            t += 5000 * float(rng.uniform(0.995, 1.005))
    return events


def test_a_job_loops_cycle_keeps_its_length(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A kept stream keeps its gaps' quantiles (``stream_gaps``): drawn apart, the lookup's two
    gaps in a cycle would spread the delete-to-delete gaps over 2.7-7.3 s (a fifth of them within
    0.25 s of 5 s); kept, they sum to the cycle's 4.9 s as the trace's did."""
    trace = job_loop_trace(np.random.default_rng(3))
    events = _fit_and_generate(_write(tmp_path / "loops.audit.log", trace), tmp_path, capsys)
    profile = json.loads((tmp_path / "profile.json").read_text(encoding="utf-8"))
    chains = [t["commands"] for t in profile["types"] if t.get("commands") and "delete" in t["commands"]["commands"]]
    assert chains and all(len(c["stream_gaps"]) == 2 * sum(len(s) - 1 for s in c["streams"]) > 0 for c in chains), chains
    deletes = events.filter(pl.col("op") == int(OpCode.DELETE_DIR)).sort("target", "time_us")
    gaps = deletes.select(pl.col("time_us").diff().over("target").alias("gap")).drop_nulls()["gap"].to_numpy() / 1e6
    n_trace = sum(1 for e in trace if e[1] == "delete")
    assert gaps.size >= 0.8 * (n_trace - 6), (gaps.size, n_trace)
    near = float(np.mean(np.abs(gaps - 5.0) < 0.25))
    assert near > 0.8, (near, np.quantile(gaps, [0.1, 0.5, 0.9]))
    assert check_schedule(tmp_path / "schedule").ok


def benchmark_files_trace(rng: np.random.Generator) -> list[tuple[float, str, str, str]]:
    """Twenty rounds a minute apart, each making eight files within a second: four a benchmark
    reads 7 s after making them, deletes 8 s later, makes again 6 s after that and renames 8 s
    later (so each is made twice, 21 s apart); four a reader looks up 0.2 s after they are made,
    opens 0.2 s later and deletes at 3 s."""
    events: list[tuple[float, str, str, str]] = []
    for r in range(20):
        t0 = 1000.0 + 60_000.0 * r
        for i in range(4):
            t = t0 + float(rng.uniform(0, 1000))
            path = f"/bench/data/file_{r}_{i}"
            events += [(t, "create", path, "null"), (t + 7000, "open", path, "null"),
                       (t + 15_000, "delete", path, "null"), (t + 21_000, "create", path, "null"),
                       (t + 29_000, "rename", path, f"/bench/done/file_{r}_{i}")]
            t = t0 + float(rng.uniform(0, 1000))
            path = f"/bench/read/file_{r}_{i}"
            events += [(t, "create", path, "null"), (t + 200, "getfileinfo", path, "null"),
                       (t + 400, "open", path, "null"), (t + 3000, "delete", path, "null")]
    return events


def test_a_kept_stream_starts_when_its_object_s_did(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A kept stream keeps when it starts (``stream_starts``): in one type the benchmark's files
    are read 7 s after they are made and the reader's 0.2 s; drawn from the type's first-access
    delays apart from the stream, half the benchmark's files were read 0.2 s after being made and
    made again 14 s after the first time, not 21 s."""
    trace = benchmark_files_trace(np.random.default_rng(5))
    events = _fit_and_generate(_write(tmp_path / "bench.audit.log", trace), tmp_path, capsys, types="1")
    profile = json.loads((tmp_path / "profile.json").read_text(encoding="utf-8"))
    chains = [t["commands"] for t in profile["types"] if t.get("kind", "file") == "file" and t.get("commands")]
    assert len(chains) == 1 and len(chains[0]["stream_starts"]) == 2 * len(chains[0]["streams"]) > 0, chains
    made = events.filter(pl.col("op").is_in([int(OpCode.CREATE), int(OpCode.CREATE_OVERWRITE)])).sort("target", "time_us")
    gaps = made.select(pl.col("time_us").diff().over("target").alias("gap")).drop_nulls()["gap"].to_numpy() / 1e6
    assert gaps.size >= 60, gaps.size
    near = float(np.mean(np.abs(gaps - 21.0) < 1.0))
    assert near > 0.8, (near, np.quantile(gaps, [0.1, 0.5, 0.9]))
    assert check_schedule(tmp_path / "schedule").ok


def control_directories_trace(rng: np.random.Generator) -> list[tuple[float, str, str, str]]:
    """Four benchmark loops for 10 minutes, each with its control directory: every 6 s (+-1 %) the
    loop deletes the directory, creates two control files of the cycle in it (50 and 150 ms
    later: the creates make it again) and reads them 1 and 4 s later; the directory's own stream
    is deletes only, 6 s apart, and the last one removes it."""
    events: list[tuple[float, str, str, str]] = []
    for loop in range(4):
        control = f"/bench/loop{loop}/control"
        t = 500.0 + 1500.0 * loop
        cycle = 0
        while t < 590_000:
            events.append((t, "delete", control, "null"))
            for i, (made, read) in enumerate(((50, 1000), (150, 4000))):
                path = f"{control}/cycle_{cycle}_{i}"
                events += [(t + made, "create", path, "null"), (t + read, "open", path, "null")]
            t += 6000 * float(rng.uniform(0.99, 1.01))
            cycle += 1
    return events


def test_a_directory_deleted_every_cycle_keeps_its_deletes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A directory deleted every 6 s and made again between by the files created in it: each of
    its deletes stays a delete (a file made between two of them goes into it), 6 s apart. With
    every other delete made a mkdirs, half of them were lost and the others came 12 s apart."""
    trace = control_directories_trace(np.random.default_rng(7))
    events = _fit_and_generate(_write(tmp_path / "control.audit.log", trace), tmp_path, capsys)
    deletes = events.filter(pl.col("op") == int(OpCode.DELETE_DIR)).sort("target", "time_us")
    n_trace = sum(1 for e in trace if e[1] == "delete")
    assert deletes.height >= 0.9 * n_trace, (deletes.height, n_trace)
    gaps = deletes.select(pl.col("time_us").diff().over("target").alias("gap")).drop_nulls()["gap"].to_numpy() / 1e6
    near = float(np.mean(np.abs(gaps - 6.0) < 0.5))
    assert near > 0.8, (near, np.quantile(gaps, [0.1, 0.5, 0.9]))
    assert check_schedule(tmp_path / "schedule").ok
