"""Experiments end to end on the memory backend: the file validated, the design's runs made (a
schedule generated per generate level), their responses in results.csv, resumed after an
interruption without running anything twice, and analysed."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from cli_run import run_cli

from mimesisbench.errors import ConfigError
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.study.experiment_file import PaperFigure, load_experiment
from mimesisbench.study.experiment_run import plan, run_experiment, status

EXPERIMENT = """
name = "rate-and-scale"
seed = 7
responses = ["throughput_ops_per_s", "latency_p99_ms"]
profile = "demo"
backend = "memory"

[generate]
duration = "6s"
seed = 3

[run]
workers = 1

[[factors]]
name = "rate"
kind = "run"
option = "rate"
levels = ["600/s", "300/s"]

[[factors]]
name = "scale"
kind = "generate"
option = "scale_files"
levels = [0.5, 1.0]
"""


PAPER = """
[[paper]]
source = "Fig. X"
says = "the larger namespace is as fast"
response = "throughput_ops_per_s"
of = { scale = 1.0 }
over = { scale = 0.5 }
value = 1.0
"""


def _file(tmp_path: Path, text: str = EXPERIMENT) -> Path:
    path = tmp_path / "experiment.toml"
    path.write_text(text)
    return path


def _run(config: RunConfig) -> Path:
    return run_benchmark(config, console=None, show_progress=False).run_dir


def test_experiment_runs_its_design_resumes_and_is_analysed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = _file(tmp_path)
    out = tmp_path / "exp"
    made: list[Path] = []

    def interrupted_after_two(config: RunConfig) -> Path:
        if len(made) == 2:
            raise KeyboardInterrupt
        made.append(_run(config))
        return made[-1]

    with pytest.raises(KeyboardInterrupt):
        run_experiment(file, out, interrupted_after_two)
    first = pl.read_csv(out / "results.csv", infer_schema=False)
    assert first.height == 2 and status(out)["finished"] == 2 and status(out)["planned"] == 4
    again: list[Path] = []
    results = run_experiment(file, out, lambda c: again.append(_run(c)) or again[-1])
    assert results.height == 4 and len(again) == 2  # the two finished runs were not run again
    assert results["run_dir"].to_list()[:2] == first["run_dir"].to_list()
    assert sorted(results["order"].cast(pl.Int64).to_list()) == [1, 2, 3, 4]
    assert set(zip(results["rate"], results["scale"])) == {(r, s) for r in ("600/s", "300/s") for s in ("0.5", "1.0")}
    assert len(list((out / "schedules").iterdir())) == 2  # one schedule per scale level
    throughput = dict(zip(results["rate"], results["throughput_ops_per_s"].cast(pl.Float64)))
    assert throughput["600/s"] == pytest.approx(600, rel=0.1) and throughput["300/s"] == pytest.approx(300, rel=0.1)

    code, printed, _ = run_cli(["experiment", "analyze", str(out), "--response", "throughput_ops_per_s", "--json"], capsys)
    assert code == 0
    analysis = json.loads(printed)
    assert analysis["coding"]["rate"] == {"-1": "600/s", "+1": "300/s"}  # the file's order, not the text's
    assert analysis["effects"]["A"]["effect"] == pytest.approx(-300, rel=0.1)
    assert abs(analysis["effects"]["B"]["effect"]) < 30

    # a paper's figure beside ours: half the rate, half the throughput (open loop)
    from mimesisbench.study.paper_figures import SERVED_SHARE, compare_all

    kept = load_experiment(out / "experiment.toml")
    exp = kept.model_copy(update={"paper": [PaperFigure(
        source="Fig. X", says="half the rate", response="throughput_ops_per_s", of={"rate": "300/s"},
        over={"rate": "600/s"}, value=0.5)]})
    table = pl.read_csv(out / "results.csv", infer_schema=False)
    [c] = compare_all(exp, table)
    assert c.ours == pytest.approx(0.5, rel=0.1) and c.runs == (2, 2)
    assert c.ci95 is not None and c.ci95[0] <= c.ours <= c.ci95[1]
    def served_as_offered(run_dir: str) -> bool:  # operations ended within their scheduled span (2 % more)
        samples = pl.read_parquet(Path(run_dir) / "samples.parquet")
        offered = samples["scheduled_us"].max() - samples["scheduled_us"].min()
        return bool(samples["end_us"].max() - samples["start_us"].min() <= offered / SERVED_SHARE)

    said = any("served the rate its schedule offered" in n for n in c.notes)
    assert said == all(served_as_offered(d) for d in table["run_dir"])
    # a run whose client set the pace is said so beside the figure
    summary_path = Path(table.filter(pl.col("rate") == "300/s")["run_dir"][0]) / "summary.json"
    summary = json.loads(summary_path.read_text())
    summary["cost"]["bottleneck"] = "client"
    summary_path.write_text(json.dumps(summary))
    [c] = compare_all(exp, table)
    assert any(n.startswith("in 1 of 4 runs the client, not the server, set the pace") for n in c.notes)

    report = tmp_path / "report"
    assert run_cli(["experiment", "report", str(out), "-o", str(report)], capsys)[0] == 0
    page = (report / "index.html").read_text()
    assert "Effects on throughput_ops_per_s" in page and "Effects on latency_p99_ms" in page and "<svg" in page
    assert page.count("<tr>") >= 4 + 2 * 3  # the four runs, and each response's three effects
    assert sorted(p.name for p in (report / "figures").iterdir()) == [
        "effects-1.png", "effects-1.svg", "effects-2.png", "effects-2.svg", "latency-load.png", "latency-load.svg"]
    assert "Latency against the load served" in page
    # the paper's figures go to the page too
    import shutil

    shutil.copytree(out, tmp_path / "exp-paper")
    with (tmp_path / "exp-paper" / "experiment.toml").open("a") as fh:
        fh.write(PAPER.replace("scale = 1.0", "rate = \"300/s\"").replace("scale = 0.5", "rate = \"600/s\"")
                 .replace("the larger namespace is as fast", "half the rate, half the throughput"))
    assert run_cli(["experiment", "report", str(tmp_path / "exp-paper"), "-o", str(tmp_path / "report2")], capsys)[0] == 0
    page = (tmp_path / "report2" / "index.html").read_text()
    assert "Beside the paper" in page and "half the rate, half the throughput" in page and "Fig. X" in page


def test_posix_runs_start_from_a_copy_of_phase_1s_tree(tmp_path: Path) -> None:
    """On a plain posix base each run starts from the tree phase 1 made (copied back before it):
    phase 1 skipped by the restored marker, and the two replications of each rate issue the same
    operations with the same outcomes, although every run creates, renames and deletes files;
    everything lies inside the base."""
    base = tmp_path / "base"
    text = (EXPERIMENT.replace('backend = "memory"', f'backend = "posix:{base}"')
            .replace("seed = 7\n", "seed = 1\nreplications = 2\n", 1)
            .replace('["throughput_ops_per_s", "latency_p99_ms"]', '["issued", "failed"]'))
    text = text[: text.index('[[factors]]\nname = "scale"')]  # the rate factor alone: one schedule
    results = run_experiment(_file(tmp_path, text), tmp_path / "exp", _run)
    assert results.height == 4 and set(results["status"]) == {"complete"}
    for run_dir in results["run_dir"]:
        manifest = json.loads((Path(run_dir) / "manifest.json").read_text())
        assert manifest["phase1"]["skipped"] and "marker" in manifest["phase1"]["reason"]
    by_rate: dict[str, set[tuple[str, str]]] = {}
    for rate, issued, failed in zip(results["rate"], results["issued"], results["failed"]):
        by_rate.setdefault(rate, set()).add((issued, failed))
    assert all(len(outcomes) == 1 for outcomes in by_rate.values())  # the same start: the same outcomes
    assert [p.name for p in (base / ".mimesisbench-checkpoints").iterdir()] == [  # one schedule, one copy
        p.name for p in base.iterdir() if not p.name.startswith(".")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base", "exp", "experiment.toml"]


def test_a_directory_keeps_its_experiment(tmp_path: Path) -> None:
    out = tmp_path / "exp"
    (out).mkdir()
    (out / "experiment.toml").write_text(EXPERIMENT.replace("seed = 7", "seed = 8"))
    with pytest.raises(ConfigError, match="holds another experiment"):
        run_experiment(_file(tmp_path), out, _run)


def test_plan_is_the_design_in_a_seeded_order(tmp_path: Path) -> None:
    exp = load_experiment(_file(tmp_path, EXPERIMENT.replace('seed = 7', 'seed = 7\nreplications = 3')))
    runs = plan(exp)
    assert len(runs) == 12 and [r.order for r in runs] == list(range(1, 13))
    assert sorted((r.point, r.replication) for r in runs) == [(p, r) for p in range(1, 5) for r in range(1, 4)]
    assert [r.point for r in runs] == [r.point for r in plan(exp)]


@pytest.mark.parametrize(("change", "message"), [
    (("backend = \"memory\"", "backend = \"memory\"\ncolour = \"blue\""), "colour"),
    (("levels = [0.5, 1.0]", "levels = [0.5, 1.0, 2.0]"), "'scale' has 3 levels"),
    (("option = \"scale_files\"", "option = \"colour\""), "is not a generate option"),
    (("profile = \"demo\"", "schedule = \"s\""), "a generate factor needs a profile"),
    (("\"latency_p99_ms\"", "\"latency_p42_ms\""), "responses: 'latency_p42_ms' is not one of"),
    (("name = \"rate-and-scale\"", "name = "), "not TOML"),
    (("kind = \"run\"\noption = \"rate\"", "kind = \"hdfs\"\noption = \"audit\""), "an hdfs factor needs \\[managed_hdfs\\]"),
    (("backend = \"memory\"", "backend = \"memory\"\n[managed_hdfs]\nheap = \"1g\""), "give exactly one"),
    (("levels = [0.5, 1.0]", "levels = [0.5, 1.0]\n[prometheus]\nurl = \"http://p:9090\"\nlinger = \"soon\""),
     "prometheus.linger: cannot read 'soon'"),
    (("levels = [0.5, 1.0]", "levels = [0.5, 1.0]\n[prometheus]\nurl = \"p:9090\""), "prometheus.url"),
    (("levels = [0.5, 1.0]", "levels = [0.5, 1.0]\n" + PAPER.replace("scale = 1.0", "scale = 2.0")),
     "paper.0.of.scale: 2.0 is not one of its levels"),
    (("levels = [0.5, 1.0]", "levels = [0.5, 1.0]\n" + PAPER.replace("of = { scale", "of = { colour")),
     "paper.0.of: 'colour' is not a factor"),
    (("levels = [0.5, 1.0]", "levels = [0.5, 1.0]\n" + PAPER.replace("\"throughput_ops_per_s\"", "\"failed\"")),
     "paper.0.response: 'failed' is not one of the experiment's responses"),
])
def test_bad_experiment_files_name_the_key(tmp_path: Path, change: tuple[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_experiment(_file(tmp_path, EXPERIMENT.replace(*change, 1)))


@pytest.mark.parametrize("example", sorted((Path(__file__).resolve().parents[2] / "examples").rglob("*.toml")),
                         ids=lambda p: p.name)
def test_shipped_examples_are_valid_experiments(example: Path) -> None:
    """Every experiment file under examples/ validates and plans its design."""
    exp = load_experiment(example)
    runs = plan(exp)
    assert runs and len(runs) % exp.replications == 0


def test_a_prometheus_that_does_not_answer_costs_the_archive_not_the_runs(tmp_path: Path) -> None:
    """The series of a run are archived after it; a server that is down is a warning per run."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    text = EXPERIMENT.replace('duration = "6s"', 'duration = "2s"').replace("levels = [0.5, 1.0]", "levels = [0.5, 0.6]")
    file = _file(tmp_path, text + f'\n[prometheus]\nurl = "http://127.0.0.1:{port}"\n')
    said: list[str] = []
    results = run_experiment(file, tmp_path / "exp", _run, said.append)
    assert results.height == 4 and set(results["status"]) == {"complete"}
    warnings = [m for m in said if m.startswith("warning: the run's Prometheus series are not archived")]
    assert len(warnings) == 4 and f"127.0.0.1:{port}" in warnings[0]
    assert not list((tmp_path / "exp" / "runs").glob("*/prometheus.parquet"))


def test_a_capacity_experiment_measures_q_per_design_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """With [capacity], each run of the design is a capacity search (trials at target rates),
    here of a server of known capacity (``rate:300+null``) with one worker or two: q near 300
    ops/s at both, Wu's p_max from it, and the closing check's peak; the report draws each
    search and the latency of every trial against its load."""
    events = tmp_path / "events.csv"
    n = list(range(600))
    pl.DataFrame({"time_ms": [1_700_000_000_000 + i * 10 for i in n], "op": "getfileinfo",
                  "path": [f"/data/f{i % 30}" for i in n], "dst": None, "user": "u", "allowed": True}).write_csv(events)
    assert run_cli(["schedule-from-trace", str(events), "-o", str(tmp_path / "schedule")], capsys)[0] == 0
    file = _file(tmp_path, f"""
name = "capacity-by-workers"
schedule = "{tmp_path / 'schedule'}"
backend = "rate:300+null"
responses = ["capacity_ops_per_s", "p_max_ops_per_s", "peak_latency_mean_ms"]

[[factors]]
name = "workers"
kind = "run"
option = "workers"
levels = [1, 2]

[design]
kind = "sweep"

[capacity]
start = "200/s"
tolerance = 0.25
max_trials = 4
bound = "100ms"
peak_length = "1s"
check = true
""")
    results = run_experiment(file, tmp_path / "exp", _run)
    assert results.height == 2
    for row in results.iter_rows(named=True):
        q = float(row["capacity_ops_per_s"])
        assert 0.7 * 300 <= q <= 1.25 * 300
        assert float(row["p_max_ops_per_s"]) == pytest.approx(2 * q * 0.1 / 1.0 + q)
        assert float(row["peak_latency_mean_ms"]) > 0
        search = json.loads((Path(row["run_dir"]) / "capacity.json").read_text())
        assert 2 <= len(search["trials"]) <= 4 and search["peak_check"]["run_dir"]
    report = tmp_path / "report"
    assert run_cli(["experiment", "report", str(tmp_path / "exp"), "-o", str(report)], capsys)[0] == 0
    page = (report / "index.html").read_text()
    assert "Capacity search, run 1" in page and "Capacity search, run 2" in page and "Closing check" in page
    assert {"capacity-1.svg", "capacity-2.svg", "latency-load.svg", "sweep-1.svg"} <= {f.name for f in (report / "figures").iterdir()}


@pytest.mark.parametrize(("responses", "table", "message"), [
    ("throughput_ops_per_s", "", "is not one of a capacity search's"),
    ("capacity_ops_per_s", 'bound = "1s"', "bound, peak_length: give both"),
    ("capacity_ops_per_s", 'start = "fast"', "capacity.start: cannot read 'fast'"),
    ("capacity_ops_per_s", "", "no rate in \\[run\\] nor as a factor"),
])
def test_bad_capacity_tables_name_the_key(tmp_path: Path, responses: str, table: str, message: str) -> None:
    text = EXPERIMENT.replace('["throughput_ops_per_s", "latency_p99_ms"]', f'["{responses}"]')
    with pytest.raises(ConfigError, match=message):
        load_experiment(_file(tmp_path, text + f"\n[capacity]\n{table}\n"))


def test_a_folder_of_experiments_is_a_study_run_and_reported_in_one_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``experiment run FOLDER`` runs each file into its own directory (all validated first: a bad
    file stops the study before any run), and ``experiment report`` on the study's directory
    writes each experiment's page and an index with wall times and the paper's figures."""
    folder = tmp_path / "study"
    folder.mkdir()
    small = EXPERIMENT.replace('duration = "6s"', 'duration = "2s"')
    sweep = small.split("[[factors]]")[0] + """[[factors]]
name = "rate"
kind = "run"
option = "rate"
levels = ["600/s", "300/s"]

[design]
kind = "sweep"
"""
    (folder / "a-sweep.toml").write_text(sweep + PAPER.replace("scale = 1.0", 'rate = "300/s"')
                                         .replace("scale = 0.5", 'rate = "600/s"').replace("value = 1.0", "value = 0.5"))
    (folder / "b-bad.toml").write_text(small.replace("workers = 1", "workers = 1\ncolour = 2"))
    code, _, err = run_cli(["experiment", "run", str(folder), "-o", str(tmp_path / "out")], capsys)
    assert code == 2 and "b-bad.toml: run.colour" in err and not (tmp_path / "out").exists()

    (folder / "b-bad.toml").rename(folder / "b-design.toml")
    (folder / "b-design.toml").write_text(small)
    code, out, err = run_cli(["experiment", "run", str(folder), "-o", str(tmp_path / "out")], capsys)
    assert code == 0, err
    assert "a-sweep: 2 runs" in out and "b-design: 4 runs" in out
    for name, runs in (("a-sweep", 2), ("b-design", 4)):
        s = status(tmp_path / "out" / name)
        assert s["finished"] == s["planned"] == runs and s["wall_s"] > 0
    code, _, err = run_cli(["experiment", "report", str(tmp_path / "out"), "-o", str(tmp_path / "report")], capsys)
    assert code == 0, err
    index = (tmp_path / "report" / "index.html").read_text()
    assert 'href="a-sweep/index.html"' in index and 'href="b-design/index.html"' in index
    assert "Beside the paper" in index and "0.5" in index and "6 of 6 finished" in index
    assert (tmp_path / "report" / "a-sweep" / "index.html").exists()
    # a sweep's levels come in the order the file lists them, whatever order they ran in
    code, out, _ = run_cli(["experiment", "analyze", str(tmp_path / "out" / "a-sweep"), "--response",
                            "throughput_ops_per_s", "--json"], capsys)
    assert code == 0 and list(json.loads(out)["levels"]) == ["600/s", "300/s"]


def test_ctrl_c_stops_the_experiment_and_a_rerun_resumes_it(tmp_path: Path) -> None:
    """A real ``experiment run`` process on a posix base interrupted (SIGINT) during its second
    run: it stops (exit 6, no traceback) with the first run kept and the second not recorded; run
    again, it runs the second and third (each from phase 1's tree) and not the first."""
    import os
    import signal
    import subprocess
    import sys
    import time

    text = EXPERIMENT.replace('duration = "6s"', 'duration = "4s"').replace(
        'backend = "memory"', f'backend = "posix:{tmp_path / "base"}"').split("[[factors]]")[0] + """[[factors]]
name = "rate"
kind = "run"
option = "rate"
levels = ["300/s", "301/s", "302/s"]

[design]
kind = "sweep"
"""
    file = _file(tmp_path, text)
    out = tmp_path / "exp"
    argv = [sys.executable, "-m", "mimesisbench", "experiment", "run", str(file), "-o", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None:
        if (out / "results.csv").exists() and len(list((out / "runs").iterdir())) >= 2:
            break  # the first run is recorded and the second one's directory exists: it is under way
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    # exit 6 with the run in progress (130 should the signal land between runs on a slow machine)
    assert proc.returncode in (6, 130), err
    assert "Traceback" not in err and (proc.returncode == 130 or "run the experiment again to resume" in err)
    first = pl.read_csv(out / "results.csv", infer_schema=False)
    assert first.height in (1, 2)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    results = pl.read_csv(out / "results.csv", infer_schema=False)
    assert results.height == 3 and results["run_dir"][0] == first["run_dir"][0]
    assert sorted(results["rate"].to_list()) == ["300/s", "301/s", "302/s"]
    assert len(pl.read_csv(out / "sessions.csv")) == 2
    for run_dir in results["run_dir"]:  # every run from the tree phase 1 made, the rerun ones too
        manifest = json.loads((Path(run_dir) / "manifest.json").read_text())
        assert manifest["phase1"]["skipped"] and "marker" in manifest["phase1"]["reason"]
