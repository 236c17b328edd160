"""The analysis behind the report: time series, histograms, load points, server-side series."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
from tests.unit.test_compare_stats import write_synthetic_run

from mimesisbench.analysis.histogram import BINS_PER_DECADE, run_histograms
from mimesisbench.analysis.knee import is_load_series, load_points
from mimesisbench.analysis.series import choose_bin, series_from_samples, series_from_timeseries
from mimesisbench.analysis.server import server_series
from mimesisbench.report.style import _scoped_svg
from mimesisbench.results import rundir
from mimesisbench.results.load import load_run


def test_choose_bin_keeps_series_short() -> None:
    assert choose_bin(4.0) == 0.1
    assert choose_bin(600.0) == 1.0
    assert choose_bin(3600.0) == 5.0
    assert 3600.0 / choose_bin(3600.0, max_points=100) <= 100
    assert 86400 * 30 / choose_bin(86400 * 30) <= 900


def test_series_conserve_operations_and_match_raw_percentiles(tmp_path: Path) -> None:
    run = load_run(write_synthetic_run(tmp_path, "r", n=4000, duration_s=20.0))
    series = series_from_samples(run, max_points=50)
    assert series.bin_s == 0.5
    comp = series.completion
    samples = pl.read_parquet(run.samples_path)
    assert comp.filter(pl.col("op") == "all")["ops"].sum() == samples.height
    for op in ("open", "create"):
        assert comp.filter(pl.col("op") == op)["ops"].sum() == samples.filter(pl.col("op") == op).height
    # one bin recomputed by hand from the raw samples
    lat = ((samples["end_us"] - samples["scheduled_us"]) / 1000.0).to_numpy()
    t_bin = np.floor(samples["end_us"].to_numpy() / 0.5e6) * 0.5
    row = comp.filter((pl.col("op") == "all") & (pl.col("t_s") == 5.0))
    assert row["latency_p99_ms"][0] == pytest.approx(np.quantile(lat[t_bin == 5.0], 0.99))
    assert row["throughput_ops_per_s"][0] == pytest.approx((t_bin == 5.0).sum() / 0.5)
    assert series.issue["offered_ops_per_s"].sum() * 0.5 == pytest.approx(samples.height, rel=0.02)
    assert series.ops[0] == "all"


def test_series_fall_back_to_stored_timeseries(tmp_path: Path) -> None:
    path = write_synthetic_run(tmp_path, "r", n=1000)
    (path / rundir.SAMPLES).unlink()
    run = load_run(path)
    series = series_from_timeseries(run)
    assert series.source == "timeseries" and series.bin_s == 1.0
    assert series.completion.filter(pl.col("op") == "all")["ops"].sum() == 1000


def test_histograms_are_accurate_to_one_bin(tmp_path: Path) -> None:
    run = load_run(write_synthetic_run(tmp_path, "r", n=5000))
    hists = run_histograms(run)
    samples = pl.read_parquet(run.samples_path)
    lat = ((samples["end_us"] - samples["scheduled_us"]) / 1000.0).to_numpy()
    overall = hists.latency_by_op[0]
    assert overall.group == "all" and overall.total == samples.height
    assert {h.group for h in hists.latency_by_op} == {"all", "open", "create"}
    assert [h.group for h in hists.latency_by_type] == ["1"]
    width = 10 ** (1 / BINS_PER_DECADE)
    for q in (0.5, 0.9, 0.99):
        exact = float(np.quantile(lat, q))
        assert exact / width * 0.999 <= overall.quantile(q) <= exact * width * 1.001
    pct, ms = overall.percentile_curve()
    assert np.all(np.diff(pct) >= 0) and np.all(np.diff(ms) >= 0) and pct.max() < 100.0
    _, frac = overall.cdf()
    assert frac[-1] == pytest.approx(1.0)


def test_load_points_order_and_knee_detection(tmp_path: Path) -> None:
    runs = [load_run(write_synthetic_run(tmp_path, f"r{i}", n=1000, duration_s=d)) for i, d in enumerate((5.0, 20.0, 10.0))]
    points = load_points(runs)
    assert [p.offered_ops_per_s for p in points] == pytest.approx([50.0, 100.0, 200.0])
    assert is_load_series(runs) and not is_load_series(runs[:1])


def test_server_series_from_extra_columns_and_files(tmp_path: Path) -> None:
    path = write_synthetic_run(tmp_path, "r", n=500)
    ts = pl.read_parquet(path / rundir.TIMESERIES)
    ts.with_columns(pl.col("second").cast(pl.Float64).alias("jmx_heap_mb")).write_parquet(path / rundir.TIMESERIES)
    pl.DataFrame({"timestamp": [1767225600.0 + s for s in range(5)], "qlen": [1, 2, 3, 2, 1]}).write_csv(path / "server.csv")
    pl.DataFrame({"nothing": [1, 2]}).write_parquet(path / "other.parquet")  # no time column: ignored
    found = {s.name: s for s in server_series(load_run(path))}
    assert set(found) == {"jmx_heap_mb", "qlen"}
    assert found["jmx_heap_mb"].values.tolist() == found["jmx_heap_mb"].t_s.tolist()
    # epoch seconds made relative to the run's start (2026-01-01T00:01:00 in the synthetic manifest)
    assert found["qlen"].t_s.tolist() == pytest.approx([-60.0, -59.0, -58.0, -57.0, -56.0])


def test_scoped_svg_ids_do_not_collide() -> None:
    svg = '<?xml version="1.0"?>\n<svg><defs><clipPath id="p1"><rect/></clipPath></defs><g clip-path="url(#p1)"/><use xlink:href="#p1"/></svg>'
    out = _scoped_svg(svg, "fig")
    assert out.startswith("<svg") and 'id="fig-p1"' in out and "url(#fig-p1)" in out and 'xlink:href="#fig-p1"' in out
