"""profile/summary.py: the per-type figures follow the model's expectations."""

from __future__ import annotations

import pytest

from mimesisbench.profile.distribution import Distribution
from mimesisbench.profile.schema import FileType, NamespaceShape, ProfileSource, WorkloadProfile
from mimesisbench.profile.summary import expected_accesses_per_file, summarize, summary_to_dict


def _type(**kw: object) -> FileType:
    base: dict[str, object] = {
        "id": 1,
        "weight": 1.0,
        "pre_existing": 10,
        "create_interarrival": Distribution(values=[0.0, 20.0], weights=[0.0, 1.0]),  # mean 10
        "activation_delay": Distribution.point(5.0),
        "active_span": Distribution(values=[0.0, 1000.0], weights=[0.0, 1.0]),  # mean 500
        "access_interarrival": Distribution.point(50.0),
        "delete_delay": Distribution.point(1.0),
        "delete_share": 0.5,
        "open_share": 0.75,
    }
    base.update(kw)
    return FileType.model_validate(base)


def _profile(*types: FileType, n: int = 90) -> WorkloadProfile:
    return WorkloadProfile(
        source=ProfileSource(kind="edited"),
        window_ms=60_000,
        total_creates=n,
        types=list(types),
        namespace=NamespaceShape(directories=1, dirs_per_depth=[1]),
    )


def test_accesses_per_file() -> None:
    assert expected_accesses_per_file(_type()) == pytest.approx(1 + 500 / 50)


def test_type_row_counts() -> None:
    summary = summarize(_profile(_type()))
    row = summary.types[0]
    assert (row.created, row.pre_existing, row.files) == (90, 10, 100)
    assert row.mean_create_interarrival_ms == pytest.approx(10.0)
    assert row.mean_active_span_ms == pytest.approx(500.0)
    assert row.mean_access_interarrival_ms == pytest.approx(50.0)
    assert row.reads == pytest.approx(100 * 11)
    assert row.opens == pytest.approx(0.75 * 1100)
    assert row.file_listings == pytest.approx(0.25 * 1100)
    assert row.writes == pytest.approx(90 + 0.5 * 100)
    assert row.read_share == pytest.approx(1100 / (1100 + 140))
    assert summary.read_share == pytest.approx(row.read_share)


def test_never_accessed_type_has_no_reads() -> None:
    summary = summarize(_profile(_type(accessed_share=0.0, delete_share=0.0)))
    row = summary.types[0]
    assert row.reads == 0.0 and row.writes == 90 and row.read_share == 0.0


def test_created_files_follow_weights() -> None:
    a = _type(id=1, weight=0.25)
    b = _type(id=2, weight=0.75, pre_existing=0)
    summary = summarize(_profile(a, b, n=1000))
    assert [r.created for r in summary.types] == [250, 750]
    assert summary.pre_existing_total == 10
    assert summary.type_count == 2
    assert summary.max_dir_depth == 0


def test_summary_to_dict_is_json_ready() -> None:
    data = summary_to_dict(summarize(_profile(_type())))
    assert isinstance(data["open_share_range"], list)
    assert data["types"][0]["files"] == 100
