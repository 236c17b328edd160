"""The Parquet table of a Prometheus matrix result (``monitoring.prometheus_export``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import polars as pl
import pytest

from mimesisbench.errors import BackendError
from mimesisbench.monitoring.prometheus_export import SCHEMA, export_window, samples_table

MATRIX = [
    {"metric": {"__name__": "up", "job": "nn", "instance": "a:1"}, "values": [[1700000000.5, "1"], [1700000001.5, "0"]]},
    {"metric": {"__name__": "mimesisbench_operations_total", "run_id": "r1", "op": "open"},
     "values": [[1700000000.5, "10"], [1700000001.5, "25"]]},
    # the same series again, as a second selector returns it: kept once
    {"metric": {"__name__": "up", "instance": "a:1", "job": "nn"}, "values": [[1700000000.5, "1"], [1700000001.5, "0"]]},
    {"metric": {"__name__": "nn_rpc", "job": "nn"}, "values": [[1700000001.0, "NaN"]]},
]


def test_samples_are_rows_of_their_series() -> None:
    table = samples_table(MATRIX)
    assert table.schema == pl.Schema(SCHEMA)
    assert table.height == 5
    assert table["series"].to_list() == [0, 0, 1, 1, 2]
    assert table["name"].to_list()[:3] == ["up", "up", "mimesisbench_operations_total"]
    assert json.loads(table["labels"][0]) == {"instance": "a:1", "job": "nn"}
    assert table["time"][1] == datetime(2023, 11, 14, 22, 13, 21, 500000, tzinfo=UTC)
    assert table["value"].to_list()[:4] == [1.0, 0.0, 10.0, 25.0]
    assert table["value"].is_nan().to_list()[-1]


def test_an_empty_result_is_an_empty_table_of_the_same_columns() -> None:
    assert samples_table([]).schema == pl.Schema(SCHEMA)


def test_a_server_that_is_not_there_is_a_backend_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(BackendError, match=f"Prometheus at http://127.0.0.1:{port}: "):
        export_window(f"http://127.0.0.1:{port}", datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, 0, 1, tzinfo=UTC),
                      tmp_path / "p.parquet", timeout_s=2)
    assert not (tmp_path / "p.parquet").exists()
