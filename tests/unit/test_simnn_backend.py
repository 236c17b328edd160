"""The simulated NameNode as a backend (``simnn:``): its URL, its calibration file, and ``run``,
``micro`` and ``capacity`` against it through the CLI, writing what any run writes."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from tests.unit.cli_run import run_cli

from mimesisbench.backends.registry import open_backend
from mimesisbench.backends.simnn import SimnnBackend, parse_simnn_url
from mimesisbench.errors import ConfigError, InputError
from mimesisbench.run.synthetic import _phased_tables, _write, write_phased_schedule
from mimesisbench.schedule.format import OpCode
from mimesisbench.sim.fit_check import fit_misses, round_spreads
from mimesisbench.sim.model import Calibration, OpCost, ServerSettings


def _calibration(tmp_path: Path, **settings: object) -> Path:
    cal = Calibration(
        {OpCode.GETFILEINFO: OpCost(0.0, 100e-6, 0.0, delay_sigma=0.0, cpu_cv=0.0),
         OpCode.CREATE: OpCost(0.0, 200e-6, 0.0, delay_sigma=0.0, cpu_cv=0.0, lock_share=1.0)},
        ServerSettings(**{"handlers": 4, "cores": 0, "colocated": False, "sync_s": 0.0, "wake_s": 0.0, "park_s": 0.0,
                          **settings}),
        {"note": "made by the test"},
    )
    tmp_path.mkdir(parents=True, exist_ok=True)
    return cal.write(tmp_path / "calibration.json")


def test_the_url_sets_the_server_and_the_built_in_calibration_loads() -> None:
    backend = open_backend("simnn:?handlers=32&fair=false&cores=4&sync=1ms&wake=5us&park=7us&seed=3&colocated=no"
                           "&async_edits=false&dispatch=4us&edit=8us&other=0.15&other_run=3ms&other_place=0.02"
                           "&slow_sync=4ms")
    assert isinstance(backend, SimnnBackend)
    s = backend.calibration.settings
    assert (s.handlers, s.fair, s.cores, s.colocated, s.async_edits) == (32, False, 4, False, False)
    assert s.sync_s == pytest.approx(1e-3) and s.wake_s == pytest.approx(5e-6) and s.park_s == pytest.approx(7e-6)
    assert s.dispatch_s == pytest.approx(4e-6) and s.edit_s == pytest.approx(8e-6)
    assert s.other_share == pytest.approx(0.15) and s.other_s == pytest.approx(3e-3)
    assert s.other_place == pytest.approx(0.02) and s.slow_sync_s == pytest.approx(4e-3)
    assert backend.options.seed == 3
    builtin = open_backend("simnn:").calibration  # the calibration shipped with the package
    assert OpCode.GETFILEINFO in builtin.costs and OpCode.CREATE in builtin.costs
    assert builtin.source.get("hadoop_version")


@pytest.mark.parametrize(("url", "says"), [
    ("simnn:handlers=3", "options go after '?'"),
    ("simnn:?handlers=0", "handlers must be >= 1"),
    ("simnn:?fair=maybe", "is not true or false"),
    ("simnn:?async_edits=2", "is not true or false"),
    ("simnn:?sync=3", "is not a duration"),
    ("simnn:?threads=4", "unknown option"),
    ("simnn:?engine=fast", "engine must be"),
    ("simnn:?other=much", "is not a number"),
    ("simnn:?other=-0.1", "share of one core >= 0"),
    ("simnn:?other_run=often", "is not a duration"),
    ("simnn:?other_place=often", "is not a number"),
    ("simnn:?other_place=1.5", "chance from 0 to 1"),
    ("simnn:?slow_sync=long", "is not a duration"),
])
def test_a_bad_url_names_what_is_wrong(url: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        parse_simnn_url(url)


def test_a_wrapper_in_front_of_the_simulated_server_is_refused() -> None:
    with pytest.raises(ConfigError, match="simulated in virtual time"):
        open_backend("delay:2ms+simnn:")


def test_a_broken_calibration_names_the_bad_key(tmp_path: Path) -> None:
    path = _calibration(tmp_path)
    data = json.loads(path.read_text())
    data["costs"]["create"]["server_cpu"] = 1.0
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"costs\.create\.server_cpu: unknown key"):
        Calibration.load(path)
    data["costs"]["create"].pop("server_cpu")
    data["settings"]["fair"] = "yes"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"settings\.fair: expected true or false"):
        Calibration.load(path)
    data["settings"]["fair"] = True
    data["settings"]["other_place"] = "often"  # a number, or null (none: the cores in turn)
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"settings\.other_place: expected a number"):
        Calibration.load(path)
    for place in (None, 0.02):
        data["settings"]["other_place"] = place
        path.write_text(json.dumps(data))
        assert Calibration.load(path).settings.other_place == place
    data["settings"]["other_place"] = 2.0
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"other_place must be a chance"):
        Calibration.load(path)
    data["settings"]["other_place"] = None
    data["costs"]["stat"] = data["costs"]["create"]
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"costs\.stat: not an operation"):
        Calibration.load(path)


def test_run_simulates_a_schedule_and_writes_a_run_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """2 x 300 creates then getfileinfos, Poisson at 1,000 ops/s: below the model's capacity (4
    handlers; a create holds the write lock 200 us), so every operation starts on time, an
    operation that found the server idle took exactly its cost (others queued behind a create),
    and the run is written like a real one."""
    cal = _calibration(tmp_path / "cal")
    schedule = write_phased_schedule(tmp_path / "s", types=2, files_per_type=300,
                                     phases=(OpCode.CREATE, OpCode.GETFILEINFO), rate_per_s=1000.0)
    out = tmp_path / "runs"
    code, stdout, err = run_cli(["run", str(schedule), "-b", f"simnn:?calibration={cal.parent}", "--out", str(out),
                                 "-q"], capsys)
    assert code == 0, err
    run_dir = next(out.iterdir())
    summary = json.loads((run_dir / "summary.json").read_text())
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert summary["complete"] and summary["operations_issued"] == 1200 and summary["mode"] == "paced"
    assert manifest["simulation"]["engine"] == "native" and manifest["simulation"]["calls"] == 1200
    assert manifest["backend"]["calibration_source"] == {"note": "made by the test"}
    samples = pl.read_parquet(run_dir / "samples.parquet")
    service = (samples["end_us"] - samples["start_us"]).to_numpy()
    by_op = samples.with_columns(service=pl.Series(service)).group_by("op").agg(pl.col("service").min())
    assert dict(zip(by_op["op"].cast(pl.String), by_op["service"])) == pytest.approx(
        {"create": 200.0, "getfileinfo": 100.0})
    assert (samples["start_us"] - samples["scheduled_us"]).abs().max() < 1e-3  # on time
    code, _, err = run_cli(["report", str(run_dir), "--output", str(tmp_path / "report")], capsys)
    assert code == 0, err


def test_a_simulated_server_slower_than_the_schedule_stops_for_drift(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Creates at 10,000/s on a lock that serves 5,000/s: the backlog passes --max-drift 0.05s."""
    cal = _calibration(tmp_path / "cal")
    schedule = write_phased_schedule(tmp_path / "s", types=1, files_per_type=3000, phases=(OpCode.CREATE,),
                                     rate_per_s=10_000.0)
    out = tmp_path / "runs"
    code, _, err = run_cli(["run", str(schedule), "-b", f"simnn:?calibration={cal}", "--max-drift", "0.05s",
                            "--out", str(out), "-q"], capsys)
    assert code == 6, err
    summary = json.loads((next(out.iterdir()) / "summary.json").read_text())
    assert summary["status"] == "drift" and 0 < summary["operations_issued"] < 3000
    code, _, err = run_cli(["run", str(schedule), "-b", f"simnn:?calibration={cal}", "--as-fast-as-possible",
                            "--concurrency", "8", "--out", str(out), "-q"], capsys)
    assert code == 0, err
    fast = max(out.iterdir(), key=lambda p: p.stat().st_mtime)
    summary = json.loads((fast / "summary.json").read_text())
    assert summary["operations_issued"] == 3000
    assert summary["throughput_ops_per_s"] == pytest.approx(5000, rel=0.01)  # the lock's rate


def test_each_worker_of_a_simulated_run_has_its_own_lanes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As fast as possible with one lane per worker: type 1's opens (1 ms away) and type 2's
    getfileinfos (0.1 ms), interleaved in the schedule. Each worker (a type) has its own lane, as
    in a real run, so the getfileinfos are done in 20 x 0.1 ms, not held behind the opens (with
    one bound of two for the run they would end near the opens' 20 ms)."""
    cal = Calibration(
        {OpCode.OPEN: OpCost(0.0, 0.0, 1e-3, delay_sigma=0.0, cpu_cv=0.0),
         OpCode.GETFILEINFO: OpCost(0.0, 0.0, 0.1e-3, delay_sigma=0.0, cpu_cv=0.0)},
        ServerSettings(handlers=4, cores=0, colocated=False, sync_s=0.0, wake_s=0.0, park_s=0.0),
    ).write(tmp_path / "calibration.json")
    dirs, files, events = _phased_tables(2, 20, (OpCode.GETFILEINFO,), None, 0)
    events = events.with_columns(op=pl.when(pl.col("type") == 1).then(int(OpCode.OPEN))
                                 .otherwise(pl.col("op")).cast(pl.UInt8))
    schedule = _write(tmp_path / "s", dirs, files, events, {"synthetic": "two speeds", "seed": 0})
    out = tmp_path / "runs"
    code, _, err = run_cli(["run", str(schedule), "-b", f"simnn:?calibration={cal}", "--as-fast-as-possible",
                            "--concurrency", "1", "--out", str(out), "-q"], capsys)
    assert code == 0, err
    run_dir = next(out.iterdir())
    assert json.loads((run_dir / "manifest.json").read_text())["simulation"]["clients"] == 2
    samples = pl.read_parquet(run_dir / "samples.parquet")
    ends = samples.group_by("op").agg(pl.col("end_us").max())
    assert dict(zip(ends["op"].cast(pl.String), ends["end_us"])) == pytest.approx(
        {"getfileinfo": 2000.0, "open": 20000.0})


def test_micro_on_the_simulated_server(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cal = _calibration(tmp_path / "cal")
    code, out, err = run_cli(["micro", "fileStatus", "-n", "4000", "-t", "16", "-b", f"simnn:?calibration={cal}",
                              "--json"], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result["ops_per_s"] == pytest.approx(4 / 100e-6, rel=0.01)  # 4 handlers of 100 us each
    assert result["latency_ms"]["p50"] == pytest.approx(16 * 0.1 / 4, rel=0.01)  # 16 clients, 4 served at a time
    code, out, err = run_cli(["micro", "mkdirs", "-n", "100", "-t", "2", "-b", f"simnn:?calibration={cal}",
                              "--json"], capsys)
    assert code == 0, err
    assert any("mkdirs simulated with the costs measured on create" in w for w in json.loads(out)["warnings"])


def test_the_host_s_other_work_slows_micro_on_the_simulated_server(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    # 2 cores, 4 handlers of 100 us reads from 16 clients: the cores bound it at 20,000 a second;
    # the host's other work taking half a core between its runs leaves the reads 1.5 cores
    cal = _calibration(tmp_path / "cal")
    figures = []
    for other in ("", "&other=0.5&other_run=1ms"):
        code, out, err = run_cli(["micro", "fileStatus", "-n", "20000", "-t", "16", "-b",
                                  f"simnn:?calibration={cal}&cores=2{other}", "--json"], capsys)
        assert code == 0, err
        figures.append(json.loads(out))
    assert figures[0]["ops_per_s"] == pytest.approx(2 / 100e-6, rel=0.01)
    assert figures[1]["ops_per_s"] == pytest.approx(1.5 / 100e-6, rel=0.05)
    assert figures[1]["latency_ms"]["p99"] > 1.5 * figures[0]["latency_ms"]["p99"]


def test_a_missing_calibration_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(["micro", "fileStatus", "-n", "10", "-b", f"simnn:?calibration={tmp_path / 'none'}"],
                           capsys)
    assert code == 3 and "cannot read the calibration" in err


def test_simnn_show_prints_a_calibration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cal = _calibration(tmp_path / "cal")
    code, out, err = run_cli(["simnn", "show", str(cal.parent), "--json"], capsys)
    assert code == 0, err
    assert json.loads(out)["costs"]["create"]["server_cpu_s"] == pytest.approx(200e-6)
    # the table form says where the sync time came from
    data = json.loads(cal.read_text())
    data["source"]["sync"] = {"source": "namenode", "namenode_s": 210e-6, "fdatasync_s": 90e-6}
    data["settings"]["sync_s"] = 210e-6
    data["source"]["edit_thread"] = {"us_per_edit": 7.4, "us_per_sync": 61.0, "measurements": 18}
    data["settings"]["edit_s"] = 7.4e-6
    data["source"]["host_steal"] = {"share": 0.021, "max_share": 0.45, "worst": "create x 1 (round 1)"}
    data["source"]["host_other"] = {"share": 0.104, "by_clients": {"1": 0.075, "8": 0.104, "64": 0.212}}
    cal.write_text(json.dumps(data))
    code, out, err = run_cli(["simnn", "show", str(cal.parent)], capsys)
    assert code == 0, err
    assert "edit-log sync: 210 us, the NameNode's own" in out and "fdatasync from this host: 90 us" in out
    assert "edit-log thread: 7.4 us an edit (edit_s), 61 us a sync" in out
    assert "the host's steal: 2.1 % of this machine's busy CPU" in out and "45.0 % (create x 1 (round 1))" in out
    assert "the host's other work: 10.4 % of one core" in out and "21.2 % at 64" in out
    assert "simnn:?other=0.10" in out


def test_an_experiment_sets_the_simulated_server_per_design_point(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 2^2 design over the simulated NameNode's handlers (a simnn factor) and the load: each run
    is simulated with its point's URL, and the responses say what the model says (one handler
    serves 10,000 getfileinfo/s, four serve 40,000)."""
    cal = _calibration(tmp_path / "cal")
    schedule = write_phased_schedule(tmp_path / "s", types=1, files_per_type=2000,
                                     phases=(OpCode.GETFILEINFO, OpCode.GETFILEINFO), rate_per_s=None)
    experiment = tmp_path / "e.toml"
    experiment.write_text(f"""
name = "simnn-handlers"
seed = 1
responses = ["throughput_ops_per_s"]
schedule = "{schedule}"
backend = "simnn:?calibration={cal.parent}"

[run]
time_scale = 0.0
workers = 1
concurrency = 16

[[factors]]
name = "handlers"
kind = "simnn"
option = "handlers"
levels = [1, 4]

[[factors]]
name = "lock"
kind = "simnn"
option = "fair"
levels = [true, false]
""")
    out = tmp_path / "study"
    code, _, err = run_cli(["experiment", "run", str(experiment), "-o", str(out)], capsys)
    assert code == 0, err
    results = pl.read_csv(out / "results.csv")
    assert results.height == 4 and (results["status"] == "complete").all()
    by_handlers = {h: results.filter(pl.col("handlers") == h)["throughput_ops_per_s"].to_list() for h in (1, 4)}
    assert by_handlers[1] == pytest.approx([10_000] * 2, rel=0.01)
    assert by_handlers[4] == pytest.approx([40_000] * 2, rel=0.01)
    urls = sorted(json.loads((Path(d) / "manifest.json").read_text())["backend"]["url"] for d in results["run_dir"])
    assert urls[0] == f"simnn:?calibration={cal.parent}&handlers=1&fair=false"
    bad = experiment.read_text().replace(f'backend = "simnn:?calibration={cal.parent}"', 'backend = "memory"')
    experiment.write_text(bad)
    code, _, err = run_cli(["experiment", "run", str(experiment), "-o", str(tmp_path / "bad")], capsys)
    assert code == 2 and "a simnn factor needs backend" in err


def _fit_row(clients: int, ops: tuple[float, float], p99: tuple[float, float], load: str = "middle") -> dict:
    """One load of a fit report: (measured, fitted) throughput and p99, the other figures equal."""
    return {f"{load}_clients": clients, f"{load}_measured_ops_per_s": ops[0], f"{load}_fitted_ops_per_s": ops[1],
            f"{load}_measured_mean_ms": 1.0, f"{load}_fitted_mean_ms": 1.0,
            f"{load}_measured_p50_ms": 1.0, f"{load}_fitted_p50_ms": 1.0,
            f"{load}_measured_p99_ms": p99[0], f"{load}_fitted_p99_ms": p99[1]}


def test_fit_misses_lists_the_figures_beyond_the_bar() -> None:
    report = {
        "create": {**_fit_row(1, (2000.0, 2010.0), (0.5, 0.52), "light"), **_fit_row(8, (10_000.0, 11_000.0), (1.6, 0.85)),
                   **_fit_row(64, (26_000.0, 25_000.0), (5.7, 5.7), "heavy")},
        "mkdirs": {**_fit_row(8, (12_800.0, 16_200.0), (1.0, 1.1)), "heavy_clients": 64},  # heavy figures missing
        "open": _fit_row(8, (0.0, 5.0), (1.0, 1.0)),  # nothing measured: not checked
    }
    misses = fit_misses(report)
    assert [(m.op, m.load, m.clients, m.figure) for m in misses] == [
        ("create", "middle", 8, "p99"), ("mkdirs", "middle", 8, "throughput")]
    assert misses[0].error == pytest.approx(0.85 / 1.6 - 1) and misses[1].error == pytest.approx(16_200 / 12_800 - 1)
    assert misses[0].describe() == "create at 8 clients: p99 -47%"
    # the create's middle throughput is 10 % over: listed only under a tighter bar
    assert ("create", "throughput") in [(m.op, m.figure) for m in fit_misses(report, bar=0.05)]


def test_simnn_show_warns_where_the_model_misses_its_own_calibration(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cal = _calibration(tmp_path / "cal")
    data = json.loads(cal.read_text())
    data["source"]["fit"] = {"create": _fit_row(8, (10_000.0, 10_500.0), (1.0, 1.1))}
    cal.write_text(json.dumps(data))
    code, out, err = run_cli(["simnn", "show", str(cal.parent)], capsys)
    assert code == 0, err
    assert "the fit: measured / model" in out and "warning" not in out
    data["source"]["fit"] = {"create": _fit_row(8, (10_000.0, 10_500.0), (1.6, 0.85))}
    cal.write_text(json.dumps(data))
    code, out, err = run_cli(["simnn", "show", str(cal.parent)], capsys)
    assert code == 0, err
    assert "misses 1 of its own calibration's figures" in " ".join(out.split())
    assert "create at 8 clients: p99 -47%" in " ".join(out.split())


def _rounds(op: str, clients: int, ops: list[float], p99: list[float]) -> dict:
    return {"op": op, "clients": clients, "ops_per_s": ops, "p99_ms": p99}


def test_round_spreads_lists_the_figures_whose_rounds_disagree() -> None:
    rounds = [_rounds("create", 1, [2000.0, 2100.0, 1950.0], [0.50, 0.55, 0.52]),
              _rounds("create", 8, [10_000.0, 9_800.0, 10_400.0], [2.0, 3.0, 7.4]),  # session 59's
              _rounds("create", 64, [10_400.0, 19_700.0, 9_800.0], [10.0, 11.0, 9.5])]
    spreads = round_spreads(rounds)
    assert [(s.op, s.clients, s.figure) for s in spreads] == [("create", 8, "p99"), ("create", 64, "throughput")]
    assert spreads[0].ratio == pytest.approx(3.7) and spreads[1].ratio == pytest.approx(19_700 / 9_800)
    assert spreads[0].describe() == "create at 8 clients: p99 2.00, 3.00, 7.40 ms (x3.7)"
    assert spreads[1].describe() == "create at 64 clients: throughput 10,400, 19,700, 9,800 ops/s (x2.0)"
    # a tighter bar lists the light load's p99 too (0.55 / 0.50); one round alone never disagrees
    assert ("create", 1, "p99") in [(s.op, s.clients, s.figure) for s in round_spreads(rounds, bar=1.05)]
    assert round_spreads([_rounds("mkdirs", 8, [5000.0], [9.0])], bar=1.0) == []
    assert round_spreads(None) == []  # a calibration made before rounds were recorded


@pytest.mark.parametrize(("rounds", "key"), [
    ({"op": "create"}, "source.rounds: expected a list"),
    (["create"], "source.rounds[0]: expected an object"),
    ([_rounds("create", 8, [1.0], [1.0]) | {"op": 3}], "source.rounds[0].op"),
    ([_rounds("create", 0, [1.0], [1.0])], "source.rounds[0].clients"),
    ([_rounds("create", 8, [1.0], [1.0]), _rounds("create", 64, [1.0, -2.0], [1.0, 1.0])], "source.rounds[1].ops_per_s"),
    ([_rounds("create", 8, [1.0], [])], "source.rounds[0].p99_ms"),
    ([_rounds("create", 8, [1.0], [float("nan")])], "source.rounds[0].p99_ms"),
])
def test_a_malformed_rounds_record_names_the_bad_key(rounds: object, key: str) -> None:
    with pytest.raises(InputError, match=key.replace("[", r"\[").replace("]", r"\]")):
        round_spreads(rounds)


def test_simnn_show_warns_where_the_calibration_s_rounds_disagree(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cal = _calibration(tmp_path / "cal")
    data = json.loads(cal.read_text())
    data["source"]["rounds"] = [_rounds("create", 8, [10_000.0, 9_800.0, 10_400.0], [2.0, 2.2, 2.1])]
    cal.write_text(json.dumps(data))
    code, out, err = run_cli(["simnn", "show", str(cal.parent)], capsys)
    assert code == 0, err
    assert "warning" not in out
    data["source"]["rounds"] = [_rounds("create", 8, [10_000.0, 9_800.0, 10_400.0], [2.0, 3.0, 7.4])]
    data["source"]["fit"] = {"create": _fit_row(8, (10_000.0, 10_500.0), (3.0, 3.1))}
    cal.write_text(json.dumps(data))
    code, out, err = run_cli(["simnn", "show", str(cal.parent)], capsys)
    assert code == 0, err
    text = " ".join(out.split())
    assert "the rounds of 1 of the calibration's figures disagree" in text
    assert "create at 8 clients: p99 2.00, 3.00, 7.40 ms (x3.7)" in text
    assert "misses" not in text  # the fit itself reproduces the median
    data["source"]["rounds"] = [_rounds("create", 8, [10_000.0], ["fast"])]
    cal.write_text(json.dumps(data))
    code, out, err = run_cli(["simnn", "show", str(cal.parent)], capsys)
    assert code == 3 and "source.rounds[0].p99_ms" in err and "Traceback" not in err
