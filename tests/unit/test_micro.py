"""Micro-benchmarks on the in-process backends (memory, null) and on a local directory (posix)."""

from __future__ import annotations

import gc
import json
import os
import time
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from click.testing import CliRunner

from mimesisbench.backends.base import Backend, Outcome
from mimesisbench.backends.safety import OWNER_MARKER
from mimesisbench.cli.cmd_micro import micro_command
from mimesisbench.errors import BackendError, ConfigError, SafetyError
from mimesisbench.micro.bench import run_micro
from mimesisbench.micro.config import OPERATIONS, MicroConfig
from mimesisbench.micro.plan import make_plan
from mimesisbench.micro.runner import run_batch
from mimesisbench.micro.stats import error_counts, latency_summary_ms

ALL_OPS = sorted(OPERATIONS)
JSON_FIELDS = {"op", "files", "concurrency", "ops_per_s", "elapsed_s", "latency_ms", "errors"}


def test_config_rejects_bad_values_with_clear_messages() -> None:
    with pytest.raises(ConfigError, match="did you mean fileStatus"):
        MicroConfig(op="filestatus", files=10, backend="memory")
    with pytest.raises(ConfigError, match="--files"):
        MicroConfig(op="create", files=0, backend="memory")
    with pytest.raises(ConfigError, match="--concurrency"):
        MicroConfig(op="create", files=10, backend="memory", concurrency=0)
    with pytest.raises(ConfigError, match="--dirs"):
        MicroConfig(op="create", files=10, backend="memory", dirs=11)
    assert MicroConfig(op="create", files=2500, backend="memory").n_dirs == 3


def test_plan_spreads_files_over_directories() -> None:
    plan = make_plan(MicroConfig(op="rename", files=5, backend="memory", dirs=2), root="/r")
    assert plan.dirs.to_list() == ["/r", "/r/d0", "/r/d1"]
    assert plan.files.to_list() == ["/r/d0/f0", "/r/d1/f1", "/r/d0/f2", "/r/d1/f3", "/r/d0/f4"]
    assert plan.targets2 is not None and plan.targets2.to_list()[1] == "/r/d1/f1.r"
    mk = make_plan(MicroConfig(op="mkdirs", files=3, backend="memory", dirs=1), root="/r")
    assert mk.files.len() == 0 and mk.targets.to_list() == ["/r/d0/m0", "/r/d0/m1", "/r/d0/m2"]
    ls = make_plan(MicroConfig(op="listDir", files=4, backend="memory", dirs=2), root="/r")
    assert ls.targets.to_list() == ["/r/d0", "/r/d1", "/r/d0", "/r/d1"]


@pytest.mark.parametrize("op", ALL_OPS)
def test_every_operation_runs_on_memory(op: str) -> None:
    result = run_micro(MicroConfig(op=op, files=300, backend="memory", concurrency=4, dirs=3))
    data = result.to_json()
    assert JSON_FIELDS <= set(data)
    assert set(data["latency_ms"]) == {"mean", "p50", "p90", "p99", "p999", "max"}
    assert data["errors"] == 0, data["errors_by_outcome"]
    assert result.summary["operations"] == 300
    assert data["ops_per_s"] > 0 and data["elapsed_s"] > 0
    assert data["client"] == "threads"


@pytest.mark.parametrize("op", ALL_OPS)
def test_every_operation_runs_on_posix_and_cleans_up(tmp_path: Path, op: str) -> None:
    base = tmp_path / "base"
    result = run_micro(MicroConfig(op=op, files=120, backend=f"posix:{base}", concurrency=3, dirs=2))
    assert result.summary["errors"] == 0, result.summary["errors_by_outcome"]
    assert sorted(os.listdir(base)) == [OWNER_MARKER]  # only our marker is left
    assert result.warnings == []


def test_keep_leaves_the_tree_for_inspection(tmp_path: Path) -> None:
    base = tmp_path / "base"
    result = run_micro(MicroConfig(op="create", files=10, backend=f"posix:{base}", dirs=2, keep=True))
    kept = Path(result.root)
    assert kept.parent == base and sorted(p.name for p in kept.iterdir()) == ["d0", "d1"]
    assert len(list(kept.glob("d*/f*"))) == 10


def test_null_backend_measures_the_harness() -> None:
    result = run_micro(MicroConfig(op="delete", files=1000, backend="null", concurrency=2))
    assert result.summary["errors"] == 0 and result.summary["operations"] == 1000


def test_a_foreign_non_empty_base_is_refused(tmp_path: Path) -> None:
    base = tmp_path / "precious"
    base.mkdir()
    (base / "data.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(SafetyError, match="not empty"):
        run_micro(MicroConfig(op="create", files=5, backend=f"posix:{base}"))
    assert sorted(os.listdir(base)) == ["data.txt"]


def test_failed_operations_are_counted_not_fatal(tmp_path: Path) -> None:
    class Flaky(Backend):
        scheme: ClassVar[str] = "flaky"

        def create(self, path: str) -> None:
            if path.endswith("3"):
                raise FileExistsError(17, "exists", path)

        open = list_file = delete = mkdirs = getfileinfo = create  # type: ignore[assignment]

        def list_dir(self, path: str) -> list[str] | None:
            return None

        def rename(self, src: str, dst: str) -> None:
            pass

    backend = Flaky("flaky")
    timings = run_batch(backend, backend.create, None, [f"/f{i}" for i in range(20)], 4)
    assert error_counts(timings.outcome) == {"exists": 2}
    assert int(timings.outcome[3]) == int(Outcome.EXISTS)


def test_the_client_cpu_is_the_replay_alone_and_the_marks_bound_that_span() -> None:
    """The client's CPU is taken after the garbage collection that opens a batch, as a run's
    worker takes it (in a process holding many objects the collection costs far more than a few
    operations), and ``mark`` (where micro reads the server's and the host's CPU) is called at
    both ends of that span, with the collector off."""
    from mimesisbench.backends.null import NullBackend

    held = [(i, str(i)) for i in range(1_000_000)]  # objects the collection must walk
    t0 = time.process_time()
    gc.collect()
    collection_s = time.process_time() - t0
    backend = NullBackend()
    marks: list[tuple[bool, float]] = []
    timings = run_batch(backend, backend.create, None, [f"/f{i}" for i in range(20)], 1,
                        mark=lambda: marks.append((gc.isenabled(), time.process_time())))
    assert len(held) == 1_000_000
    assert [enabled for enabled, _ in marks] == [False, False]
    assert gc.isenabled()
    assert 0.0 <= timings.cpu_s <= marks[1][1] - marks[0][1]
    assert timings.cpu_s < collection_s / 2, (timings.cpu_s, collection_s)


def test_a_broken_backend_stops_the_batch_with_a_backend_error() -> None:
    class Broken(Backend):
        scheme: ClassVar[str] = "broken"

        def create(self, path: str) -> None:
            raise RuntimeError("connection reset")

        open = list_file = delete = mkdirs = getfileinfo = create  # type: ignore[assignment]

        def list_dir(self, path: str) -> Any:
            return None

        def rename(self, src: str, dst: str) -> None:
            pass

    backend = Broken("broken")
    with pytest.raises(BackendError, match="connection reset"):
        run_batch(backend, backend.create, None, ["/a", "/b", "/c"], 2)


def test_client_kind_follows_the_backend_and_the_concurrency() -> None:
    from mimesisbench.backends.hdfs import HdfsBackend
    from mimesisbench.backends.memory import MemoryBackend
    from mimesisbench.micro.runner import ASYNC_ABOVE, choose_client

    hdfs = HdfsBackend("hdfs://nn.invalid:8020/bench")  # not connected: only its class matters
    assert choose_client(hdfs, ASYNC_ABOVE) == "threads"
    assert choose_client(hdfs, ASYNC_ABOVE + 1) == "asyncio"
    assert choose_client(hdfs, 4, "asyncio") == "asyncio"
    assert choose_client(MemoryBackend(), 1000) == "threads"
    with pytest.raises(ConfigError, match="no asyncio client"):
        choose_client(MemoryBackend(), 8, "asyncio")
    with pytest.raises(ConfigError, match="--client"):
        MicroConfig(op="create", files=1, backend="memory", client="fibers")


def test_latency_summary_is_derived_from_raw_samples() -> None:
    lat_ns = np.arange(1, 101, dtype=np.int64) * 1_000_000  # 1 .. 100 ms
    summary = latency_summary_ms(lat_ns)
    assert summary["mean"] == pytest.approx(50.5)
    assert summary["p50"] == pytest.approx(50.5)
    assert summary["p99"] == pytest.approx(99.01)
    assert summary["p999"] == pytest.approx(99.901)
    assert summary["max"] == pytest.approx(100.0)
    assert latency_summary_ms(np.zeros(0, dtype=np.int64))["p90"] == 0.0


def test_cli_prints_json(tmp_path: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(
        micro_command,
        ["fileStatus", "--files", "50", "--concurrency", "2", "--backend", f"posix:{tmp_path / 'b'}", "--json"],
    )
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["op"] == "fileStatus" and data["files"] == 50 and data["errors"] == 0
    table = runner.invoke(micro_command, ["mkdirs", "-n", "20", "-b", "memory"])
    assert table.exit_code == 0 and "ops/s" in table.output
    bad = runner.invoke(micro_command, ["chmod", "-n", "20", "-b", "memory"])
    assert bad.exit_code != 0
