"""Data jobs (IOR-like writers and readers beside the replay): the spec, the layouts, the trace,
and a run on a real local file system with the replay and the data jobs from one barrier."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from tests.unit.cli_run import run_cli

from mimesisbench.datajobs.layout import file_size, task_offsets
from mimesisbench.datajobs.spec import DataJob, parse_data_job, parse_data_jobs
from mimesisbench.datajobs.trace import busy_ns, data_summary
from mimesisbench.errors import ConfigError
from mimesisbench.profile.io import load_profile
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.synth.options import GenerateOptions
from mimesisbench.synth.pipeline import generate_to


def test_a_data_job_parses_with_units_and_defaults() -> None:
    job = parse_data_job("n-1-strided:tasks=4,block=256KiB,transfer=64k,segments=8,ops=write+read,fsync=true", 3)
    assert (job.name, job.layout, job.tasks, job.block, job.transfer, job.segments) == ("data3", "n-1-strided", 4, 262144, 65536, 8)
    assert job.ops == ("write", "read") and job.fsync and not job.keep and job.passes is None
    assert parse_data_job("n-n").describe()["ops"] == ["write"]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("n-2", "unknown layout"),
        ("n-n:tasks=0", "tasks must be"),
        ("n-n:block=1MiB,transfer=300KiB", "must divide block"),
        ("n-n:ops=write+delete", "ops must be"),
        ("n-n:block=lots", "block: 'lots' is not a size"),
        ("n-n:colour=red", "'colour=red' is not one of"),
        ("n-n:fsync=maybe", "not true or false"),
        ("n-n:passes=0", "passes must be"),
    ],
)
def test_a_bad_data_job_is_a_config_error_naming_the_part(text: str, names: str) -> None:
    with pytest.raises(ConfigError, match=names):
        parse_data_job(text)


def test_two_data_jobs_need_two_names() -> None:
    with pytest.raises(ConfigError, match="two data jobs are named 'x'"):
        parse_data_jobs(["n-n:name=x", "n-1-strided:name=x"])
    assert [j.name for j in parse_data_jobs(["n-n", "n-n"])] == ["data1", "data2"]


@pytest.mark.parametrize("layout", ["n-n", "n-1-segmented", "n-1-strided"])
def test_a_pass_covers_each_file_exactly_once(layout: str) -> None:
    job = DataJob(name="j", layout=layout, tasks=3, block=4096, transfer=1024, segments=5)
    per_task = [task_offsets(job, t) for t in range(job.tasks)]
    assert all(o.size == job.calls_per_task == 20 for o in per_task)
    if job.shared:
        starts = np.sort(np.concatenate(per_task))
        assert starts.tolist() == list(range(0, file_size(job), job.transfer))  # no gap, no overlap
    else:
        for offsets in per_task:
            assert offsets.tolist() == list(range(0, file_size(job), job.transfer))


def test_strided_and_segmented_layouts_differ_as_ior_says() -> None:
    strided = DataJob(name="s", layout="n-1-strided", tasks=2, block=100, transfer=50, segments=2)
    segmented = DataJob(name="g", layout="n-1-segmented", tasks=2, block=100, transfer=50, segments=2)
    assert task_offsets(strided, 1).tolist() == [100, 150, 300, 350]  # segment s: task 0's block, then task 1's
    assert task_offsets(segmented, 1).tolist() == [200, 250, 300, 350]  # task 1 owns the second half


def _calls(rows: list[tuple[int, int, str, int, int, int]]) -> pl.DataFrame:
    task, pass_, op, start, end, done = zip(*rows)
    return pl.DataFrame({
        "job": ["j"] * len(rows), "task": list(task), "pass": list(pass_), "op": list(op),
        "start_ns": list(start), "end_ns": list(end), "done": list(done), "errno": [0] * len(rows),
    })


def test_an_ops_time_is_the_union_of_its_phases() -> None:
    # task 0 writes in [0, 1 s] and [3 s, 4 s]; task 1 writes in [0.5 s, 1.5 s]: 2.5 s of writing
    s = 1_000_000_000
    calls = _calls([(0, 0, "write", 0, s // 2, 1), (0, 0, "write", s // 2, s, 1), (1, 0, "write", s // 2, 3 * s // 2, 1),
                    (0, 1, "write", 3 * s, 4 * s, 1)])
    assert busy_ns(calls) == 5 * s // 2
    job = DataJob(name="j", tasks=2, ops=("write",))
    figures = data_summary(calls.with_columns(pl.col("done") * 1024**2), [job])["jobs"]["j"]["ops"]["write"]
    assert figures["calls"] == 4 and figures["bytes"] == 4 * 1024**2
    assert figures["bandwidth_mib_s"] == pytest.approx(4 / 2.5)


@pytest.fixture(scope="module")
def small_schedule(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("datajobs")
    profile = Path(__file__).resolve().parents[2] / "src" / "mimesisbench" / "data" / "demo_profile.json"
    out = root / "schedule"
    generate_to(load_profile(profile), out, GenerateOptions(duration_ms=3000, scale_files=0.02), seed=5)
    return out


def test_a_run_with_data_jobs_traces_every_call_and_cleans_up(small_schedule: Path, tmp_path: Path) -> None:
    base = tmp_path / "base"
    config = RunConfig(
        schedule=str(small_schedule), backend=f"posix:{base}", out=str(tmp_path / "runs"), max_drift_s=None,
        data_jobs=("n-1-strided:tasks=2,block=64KiB,transfer=16KiB,segments=3,ops=write+read,passes=2,name=ckpt",
                   "n-n:tasks=2,block=32KiB,transfer=32KiB,passes=1,fsync=true,keep=true,name=own"),
    )
    report = run_benchmark(config, show_progress=False)
    assert report.complete, report.message
    calls = pl.read_parquet(report.run_dir / "data_calls.parquet")
    ckpt = calls.filter(pl.col("job") == "ckpt")
    # 2 tasks x 2 passes x (12 writes + 12 reads), every call whole and ok
    assert ckpt.height == 96 and (ckpt["done"] == 16 * 1024).all() and (ckpt["errno"] == 0).all()
    for (task, _pass, _op), group in ckpt.group_by(["task", "pass", "op"]):
        assert sorted(group["offset"].to_list()) == task_offsets(parse_data_job("n-1-strided:tasks=2,block=64KiB,"
                                                                               "transfer=16KiB,segments=3"), int(task)).tolist()
    for (task,), mine in ckpt.group_by(["task"]):  # a task writes its share, then reads it back, pass after pass
        in_order = mine.sort("start_ns")
        assert in_order["op"].to_list() == (["write"] * 12 + ["read"] * 12) * 2, task
    own = calls.filter(pl.col("job") == "own")
    assert sorted(own["op"].to_list()) == ["fsync", "fsync", "write", "write"]
    summary = json.loads((report.run_dir / "summary.json").read_text())
    assert summary["data"]["jobs"]["ckpt"]["ops"]["read"]["bytes"] == 2 * 2 * 3 * 64 * 1024
    assert summary["operations_issued"] == summary["operations_scheduled"] > 0  # the replay ran beside them
    manifest = json.loads((report.run_dir / "manifest.json").read_text())
    assert [j["name"] for j in manifest["data_jobs"]["jobs"]] == ["ckpt", "own"]
    data_dir = base / ".mimesisbench-data"
    assert sorted(os.listdir(data_dir)) == ["own.00000", "own.00001"]  # keep=true stays; the rest is removed
    assert (data_dir / "own.00000").stat().st_size == 32 * 1024


def test_data_jobs_alone_run_for_the_replays_span(small_schedule: Path, tmp_path: Path) -> None:
    config = RunConfig(
        schedule=str(small_schedule), backend=f"posix:{tmp_path / 'base'}", out=str(tmp_path / "runs"),
        data_jobs=("n-n:tasks=1,block=16KiB,transfer=16KiB",), replay=False, time_scale=0.2,
    )
    report = run_benchmark(config, show_progress=False)
    assert report.complete, report.message
    assert report.summary["operations_issued"] == 0
    calls = pl.read_parquet(report.run_dir / "data_calls.parquet")
    last_due_ms = 3000 * 0.2
    assert calls["end_ns"].max() >= last_due_ms * 1e6 * 0.9  # type: ignore[operator]  # passes until the replay's end
    assert not (tmp_path / "base" / ".mimesisbench-data").exists()


@pytest.mark.parametrize(
    ("backend", "job", "names"),
    [("memory", "n-n", "keeps no file data"), ("null", "n-n", "keeps no file data")],
)
def test_data_jobs_on_a_backend_without_files_are_refused(
    small_schedule: Path, tmp_path: Path, backend: str, job: str, names: str
) -> None:
    config = RunConfig(schedule=str(small_schedule), backend=backend, out=str(tmp_path / "runs"), data_jobs=(job,))
    with pytest.raises(ConfigError, match=names):
        run_benchmark(config, show_progress=False)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_no_replay_needs_a_data_job() -> None:
    with pytest.raises(ConfigError, match="give at least one --data-job"):
        RunConfig(schedule="s", backend="null", replay=False)


def test_the_interference_table_knows_its_answers() -> None:
    """Hand-made summaries: the replay's mean latency 1, 2, 3 ms alone and 2, 4, 6 together (a
    100 % rise; Welch's interval of the difference, 2 +- t(0.975, 2.94) * sqrt(1/3 + 4/3), over 2);
    the data job's bandwidth 100 alone, 50 together (no spread: exactly -50 %)."""
    from mimesisbench.analysis.interference import interference_table

    def md(latency: float) -> dict[str, object]:
        return {"latency_ms": {"mean": latency}, "throughput_ops_per_s": 10.0}

    def data(bw: float) -> dict[str, object]:
        return {"data": {"jobs": {"j": {"ops": {"write": {"calls": 5, "bandwidth_mib_s": bw, "latency_ms": None}}}}}}

    runs = [("metadata", md(x)) for x in (1.0, 2.0, 3.0)] + [("data", data(100.0))] * 3
    runs += [("both", {**md(2 * x), **data(50.0)}) for x in (1.0, 2.0, 3.0)]
    rows = {row.figure: row for row in interference_table(runs)}
    latency = rows["latency mean"]
    assert latency.alone.mean == pytest.approx(2.0) and latency.together.mean == pytest.approx(4.0)
    assert latency.alone.ci95 == pytest.approx((2.0 - 4.302653 * 1 / 3**0.5, 2.0 + 4.302653 / 3**0.5), rel=1e-5)
    assert latency.change_pct.mean == pytest.approx(100.0)
    se = (1 / 3 + 4 / 3) ** 0.5
    dof = (1 / 3 + 4 / 3) ** 2 / ((1 / 3) ** 2 / 2 + (4 / 3) ** 2 / 2)
    from scipy import stats

    half = stats.t.ppf(0.975, dof) * se
    assert latency.change_pct.ci95 == pytest.approx(((2 - half) / 2 * 100, (2 + half) / 2 * 100), rel=1e-6)
    assert not latency.worse  # the interval includes 0 with three runs this noisy
    bandwidth = rows["j write bandwidth"]
    assert bandwidth.change_pct.mean == pytest.approx(-50.0) and bandwidth.change_pct.ci95 == (-50.0, -50.0)
    assert bandwidth.worse and rows["throughput"].change_pct.mean == 0.0


def test_a_study_runs_every_kind_on_its_own_namespace(
    small_schedule: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from mimesisbench.analysis.interference import interference_table, rows_json
    from mimesisbench.run.interference import InterferenceConfig, run_interference, run_order, sub_backend

    assert sub_backend("delay:1ms+hdfs://h:1/b?mkdirs=native", "r") == "delay:1ms+hdfs://h:1/b/r?mkdirs=native"
    order = run_order(2, seed=7)
    assert sorted(order) == sorted((k, r) for k in ("metadata", "data", "both") for r in (0, 1))
    run = RunConfig(schedule=str(small_schedule), backend=f"posix:{tmp_path / 'base'}", out="unused", max_drift_s=None,
                    time_scale=0.3, data_jobs=("n-n:tasks=1,block=64KiB,transfer=16KiB",))
    study = run_interference(InterferenceConfig(run=run, repeat=2, seed=7), tmp_path / "study",
                             lambda runs: rows_json(interference_table(runs)))
    assert [f"{r['kind']}/{r['repetition']}" for r in study["runs"]] == study["order"] == [f"{k}/{r}" for k, r in order]
    assert all(r["complete"] for r in study["runs"])
    assert len(os.listdir(tmp_path / "base")) == 6  # a namespace per run
    figures = {(row["side"], row["figure"]) for row in study["table"]}
    assert {("metadata", "latency mean"), ("metadata", "throughput"), ("data", "data1 write bandwidth")} <= figures
    on_disk = json.loads((tmp_path / "study" / "interference.json").read_text())
    assert on_disk["table"] == study["table"]
    for r in study["runs"]:
        summary = json.loads((Path(r["run_dir"]) / "summary.json").read_text())
        assert (summary.get("data") is not None) == (r["kind"] != "metadata")
        assert (summary["operations_issued"] > 0) == (r["kind"] != "data")
    # the report of the study: its table and its figure, beside the runs
    code, out, err = run_cli(["report", str(tmp_path / "study"), "-o", str(tmp_path / "report")], capsys)
    assert code == 0 and "report of 6 run(s)" in out, err
    html = (tmp_path / "report" / "index.html").read_text()
    assert "Interference" in html
    assert "data1 write bandwidth" in html and "change % (95 % CI)" in html
    assert (tmp_path / "report" / "figures" / "interference1.svg").is_file()
    worse = sum(row["worse"] for row in study["table"])
    assert html.count("<strong>worse</strong>") == worse + 1  # each row beyond its interval, and the note
