"""Archive what a Prometheus server stored during a window: its raw samples, as Parquet.

Experiments keep, beside each run directory, the series a Prometheus scraped while the run went
on: the benchmark's own (``mimesisbench_*``, when Prometheus scrapes ``run --metrics-port``) and
the server's (a NameNode's JMX exporter, node exporter...). The samples are read with one instant
query per selector over a range vector (``SELECTOR[<window>ms]`` at the window's end), which
returns every sample exactly as scraped, not values resampled on a step.

The table (``prometheus.parquet``), one row per sample:

``series`` (UInt32, one id per distinct series), ``name`` (the metric's name), ``labels`` (the
other labels as a JSON object, keys sorted), ``time`` (Datetime ms, UTC), ``value`` (Float64).

Written by hand on ``urllib``: the HTTP API's one call needs no client library (the maintained
``prometheus-api-client`` drags pandas and matplotlib along).
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

import polars as pl

from mimesisbench.errors import BackendError, OutputError

#: the table's columns and types
SCHEMA: Mapping[str, pl.DataType] = MappingProxyType({
    "series": pl.UInt32(), "name": pl.String(), "labels": pl.String(), "time": pl.Datetime("ms", "UTC"),
    "value": pl.Float64()})
#: every series Prometheus holds (narrow it with the experiment's ``match`` on a busy server)
DEFAULT_MATCH: tuple[str, ...] = ('{__name__=~".+"}',)


@dataclass(frozen=True)
class ExportResult:
    """What one export wrote: samples, distinct series, and the file."""

    path: Path
    samples: int
    series: int


def _get_json(url: str, timeout_s: float) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 - the user's own server
            data: dict[str, Any] = json.loads(response.read())
    except urllib.error.HTTPError as e:
        try:  # Prometheus explains a bad query in its JSON body
            detail = json.loads(e.read()).get("error", "")
        except (ValueError, OSError):
            detail = ""
        raise BackendError(f"Prometheus at {url.split('/api/')[0]}: HTTP {e.code} {detail}".rstrip()) from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise BackendError(f"Prometheus at {url.split('/api/')[0]}: {reason}") from None
    if data.get("status") != "success":
        raise BackendError(f"Prometheus at {url.split('/api/')[0]}: {data.get('error', 'query failed')}")
    return data


def query_samples(base_url: str, selector: str, start: datetime, end: datetime,
                  timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """The raw samples of ``selector`` in ``(start, end]``: Prometheus's matrix result."""
    window_ms = max(1, math.ceil((end - start).total_seconds() * 1000))
    query = urllib.parse.urlencode({"query": f"{selector}[{window_ms}ms]", "time": f"{end.timestamp():.3f}"})
    data = _get_json(f"{base_url.rstrip('/')}/api/v1/query?{query}", timeout_s)
    result = data.get("data", {})
    if result.get("resultType") != "matrix":
        raise BackendError(f"Prometheus: {selector!r} is not a series selector (got a {result.get('resultType')})")
    return list(result.get("result", []))


def samples_table(results: Sequence[dict[str, Any]]) -> pl.DataFrame:
    """The Parquet table of a matrix result (series met twice, through two selectors, kept once)."""
    seen: dict[str, int] = {}
    series: list[int] = []
    names: list[str] = []
    labels: list[str] = []
    times: list[int] = []
    values: list[float] = []
    for item in results:
        metric = dict(item.get("metric", {}))
        name = str(metric.pop("__name__", ""))
        label_text = json.dumps(metric, sort_keys=True)
        key = name + label_text
        if key in seen:
            continue
        seen[key] = len(seen)
        for stamp, value in item.get("values", []):  # native histograms ("histograms") are not kept
            series.append(seen[key])
            names.append(name)
            labels.append(label_text)
            times.append(round(float(stamp) * 1000))
            values.append(float(value))
    return pl.DataFrame({"series": series, "name": names, "labels": labels, "time": times, "value": values},
                        schema={**SCHEMA, "time": pl.Int64()}).with_columns(
        pl.col("time").cast(pl.Datetime("ms")).dt.replace_time_zone("UTC"))


def export_window(base_url: str, start: datetime, end: datetime, out: Path,
                  match: Sequence[str] = DEFAULT_MATCH, timeout_s: float = 30.0) -> ExportResult:
    """Write every sample of the ``match`` selectors in ``(start, end]`` to ``out`` (Parquet)."""
    results: list[dict[str, Any]] = []
    for selector in match:
        results.extend(query_samples(base_url, selector, start, end, timeout_s))
    table = samples_table(results)
    tmp = out.with_name(out.name + ".tmp")
    try:
        table.write_parquet(tmp)
        tmp.replace(out)
    except OSError as e:
        raise OutputError(f"cannot write {out}: {e.strerror or e}") from None
    return ExportResult(path=out, samples=table.height,
                        series=int(table["series"].n_unique()) if table.height else 0)
