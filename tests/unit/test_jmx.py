"""The JMX sampler against a tiny local HTTP server replaying JMX JSON recorded from a real NameNode.

``data/jmx_namenode_3.4.3.json`` holds two answers per bean query, captured from a managed
single-node HDFS (Hadoop 3.4.3) about 11 s apart with 300 creates and 300 getfileinfo between.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import polars as pl
import pytest

from mimesisbench.monitoring.jmx import (
    DEFAULT_METRICS,
    FETCH_TIMEOUT_S,
    TIMESERIES_FILE,
    JmxSampler,
    counter_rates,
    extract,
    jmx_base_url,
    jmx_url_for_backend,
    refresh_mask,
    rpc_port_of,
)

RECORDED = json.loads((Path(__file__).parent / "data" / "jmx_namenode_3.4.3.json").read_text(encoding="utf-8"))
CAPTURES: list[dict[str, Any]] = RECORDED["captures"]
RPC_PORT = RECORDED["rpc_port"]


class FakeNameNode(ThreadingHTTPServer):
    """Answers ``/jmx?qry=PATTERN`` from a recorded capture (``phase`` picks which one)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.phase = 0
        self.garbage = False
        self.delay_s = 0.0  # how late each answer comes
        self.requests = 0
        beans: dict[str, dict[str, Any]] = {}
        for capture in CAPTURES:
            for answer in capture.values():
                for bean in answer["beans"]:
                    beans.setdefault(bean["name"], bean)
        self.names = sorted(beans)

    def answer(self, query: str) -> dict[str, Any]:
        capture = CAPTURES[min(self.phase, len(CAPTURES) - 1)]
        if query in capture:
            return capture[query]
        return {"beans": [b for a in capture.values() for b in a["beans"] if fnmatch.fnmatch(b["name"], query)]}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FakeNameNode

    def do_GET(self) -> None:  # noqa: N802 - http.server's spelling
        parts = urllib.parse.urlsplit(self.path)
        self.server.requests += 1
        if parts.path != "/jmx":
            self.send_error(404)
            return
        query = urllib.parse.parse_qs(parts.query).get("qry", ["*:*"])[0]
        time.sleep(self.server.delay_s)
        body = b"<html>not json" if self.server.garbage else json.dumps(self.server.answer(query)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass


_Server = TypeVar("_Server", bound=FakeNameNode)


@contextlib.contextmanager
def serving(server: _Server) -> Iterator[_Server]:
    """The server answering from a thread of its own until the block ends."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def namenode() -> Iterator[FakeNameNode]:
    with serving(FakeNameNode()) as server:
        yield server


def test_urls() -> None:
    assert jmx_base_url("http://h:9870") == "http://h:9870/jmx"
    assert jmx_base_url("http://h:9870/jmx?qry=Hadoop:*") == "http://h:9870/jmx"
    assert jmx_url_for_backend("hdfs://nn.example:8020/bench") == "http://nn.example:9870/jmx"
    assert jmx_url_for_backend("hdfs://nn:8020/b", http_port=50070) == "http://nn:50070/jmx"
    assert jmx_url_for_backend("posix:/tmp/x") is None
    assert rpc_port_of("hdfs://nn:8020/b") == 8020 and rpc_port_of("memory") is None
    with pytest.raises(ValueError):
        jmx_base_url("hdfs://nn:8020")


def test_extract_reads_the_recorded_beans() -> None:
    answers = {query: answer["beans"] for query, answer in CAPTURES[1].items()}
    row = extract(answers, DEFAULT_METRICS, rpc_port=RPC_PORT)
    activity = CAPTURES[1]["Hadoop:service=NameNode,name=NameNodeActivity"]["beans"][0]
    assert row["create_file_ops"] == activity["CreateFileOps"]
    assert row["files_total"] is not None and row["files_total"] > 0
    assert row["heap_used_mb"] is not None and row["heap_used_mb"] > 1
    assert row["gc_count"] is not None  # summed over the collectors
    assert row["call_queue_length"] == 0
    assert extract({}, DEFAULT_METRICS)["rpc_ops"] is None


def test_sampler_turns_counters_into_rates(namenode: FakeNameNode, tmp_path: Path) -> None:
    sampler = JmxSampler(namenode.url, interval_s=1.0, rpc_port=RPC_PORT)
    assert sampler.sample_once()
    time.sleep(0.05)
    namenode.phase = 1
    assert sampler.sample_once()
    sampler.set_origin(sampler.frame()["wall_ns"][0])
    frame = sampler.frame()
    assert frame.height == 2 and frame["t_s"][0] == 0.0
    assert all(spec.output in frame.columns for spec in DEFAULT_METRICS)
    assert all(c == "t_s" or c == "wall_ns" or c.startswith("jmx_") for c in frame.columns)
    before = CAPTURES[0]["Hadoop:service=NameNode,name=NameNodeActivity"]["beans"][0]["CreateFileOps"]
    after = CAPTURES[1]["Hadoop:service=NameNode,name=NameNodeActivity"]["beans"][0]["CreateFileOps"]
    expected = (after - before) / frame["t_s"][1]
    assert frame["jmx_create_file_ops_per_s"][0] is None
    assert frame["jmx_create_file_ops_per_s"][1] == pytest.approx(expected)
    assert frame["jmx_rpc_ops_per_s"][1] > 0
    path = sampler.write(tmp_path)
    assert path.name == TIMESERIES_FILE
    assert pl.read_parquet(path).equals(frame)
    assert sampler.warnings == []


def test_background_thread_samples_until_stopped(namenode: FakeNameNode) -> None:
    sampler = JmxSampler(namenode.url + "/jmx", interval_s=0.05).start()
    deadline = time.monotonic() + 10
    while sampler.samples < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sampler.stop() == []
    taken = sampler.samples
    assert taken >= 3
    time.sleep(0.15)
    assert sampler.samples == taken  # really stopped


def test_a_late_answer_is_a_late_sample_not_a_failure(namenode: FakeNameNode) -> None:
    """A busy NameNode's servlet may answer after the sampling interval: the fetch waits for it
    (FETCH_TIMEOUT_S, not the interval), and the sample counts."""
    namenode.delay_s = 0.4
    sampler = JmxSampler(namenode.url, interval_s=0.2, rpc_port=RPC_PORT)
    assert sampler.timeout_s == FETCH_TIMEOUT_S > namenode.delay_s
    assert sampler.sample_once()
    assert sampler.warnings == [] and sampler.failures == 0 and sampler.samples == 1


def test_an_unreachable_endpoint_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    server = FakeNameNode()  # bound, then closed: nothing listens on the port any more
    url = server.url
    server.server_close()
    sampler = JmxSampler(url, interval_s=0.05, timeout_s=0.5).start()
    time.sleep(0.2)
    warnings = sampler.stop()
    assert any("did not answer" in w for w in warnings)
    assert any("no server metrics recorded" in w for w in warnings)
    assert len(warnings) == len(set(warnings))  # each problem once
    frame = pl.read_parquet(sampler.write(tmp_path))
    assert frame.height == 0 and "jmx_rpc_queue_time_avg_ms" in frame.columns


def test_garbage_answers_and_bad_urls_are_warnings(namenode: FakeNameNode) -> None:
    namenode.garbage = True
    sampler = JmxSampler(namenode.url)
    assert not sampler.sample_once()
    assert sampler.warnings and "did not answer" in sampler.warnings[0]
    disabled = JmxSampler("hdfs://nn:8020/x").start()
    assert any("disabled" in w for w in disabled.stop())


def test_refresh_mask_and_rates_follow_the_metrics_period() -> None:
    t = np.arange(0.0, 25.0, 1.0)
    changed = np.zeros(len(t), dtype=bool)
    changed[[10, 20]] = True  # the bean showed new values at 10 s and 20 s
    mask = refresh_mask(changed, live=False)
    assert list(np.flatnonzero(mask)) == [0, 10, 20]
    values = np.where(t < 10, 100.0, np.where(t < 20, 150.0, 170.0))
    rates = counter_rates(t, values, mask)
    assert np.isnan(rates[0])
    assert np.allclose(rates[1:11], 5.0)  # 50 operations spread over the 10 s window
    assert np.allclose(rates[11:21], 2.0)
    assert np.isnan(rates[21:]).all()  # after the last refresh: unknown
    assert refresh_mask(changed, live=True).all()
    reset = counter_rates(np.array([0.0, 1.0, 2.0]), np.array([10.0, 3.0, 5.0]), np.ones(3, dtype=bool))
    assert np.isnan(reset[1]) and reset[2] == pytest.approx(2.0)


def test_sampler_for_run_derives_or_overrides_the_url() -> None:
    from mimesisbench.monitoring.jmx import sampler_for_run

    derived = sampler_for_run("hdfs://nn:8020/bench")
    assert derived is not None and derived.url == "http://nn:9870/jmx" and derived.rpc_port == 8020
    given = sampler_for_run("hdfs://nn:8020/bench", "http://nn:50070", interval_s=2.0)
    assert given is not None and given.url == "http://nn:50070" and given.interval_s == 2.0
    assert sampler_for_run("hdfs://nn:8020/bench", "off") is None
    assert sampler_for_run("posix:/tmp/x") is None
    assert sampler_for_run("posix:/tmp/x", "http://127.0.0.1:9870") is not None
