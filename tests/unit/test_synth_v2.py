"""Generation of format-2 profiles: command chains, directory types, files in created
directories and pathless commands (hand-made profiles: the fitter is tested elsewhere)."""

from __future__ import annotations

import hashlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from test_synth_helpers import exp_dist, make_profile

from mimesisbench.profile.distribution import Distribution
from mimesisbench.profile.schema import (
    CommandChain,
    FileType,
    NamespaceShape,
    OpMix,
    PathlessCommand,
    ProfileSource,
    WorkloadProfile,
)
from mimesisbench.results import rundir
from mimesisbench.run.config import RunConfig
from mimesisbench.run.coordinator import run_benchmark
from mimesisbench.schedule import read_schedule
from mimesisbench.schedule.format import OpCode
from mimesisbench.synth.audit import export_audit, schedule_to_events
from mimesisbench.synth.chains import ORIGIN_SHIFT, ChainLaw, gap_uniforms, stratified_within
from mimesisbench.synth.check import check_schedule
from mimesisbench.synth.fidelity import read_trace_events, validate_profile
from mimesisbench.synth.options import GenerateOptions
from mimesisbench.synth.pipeline import generate_to
from mimesisbench.synth.recreation import GUARD_US, resolve
from mimesisbench.synth.schedule import GeneratedSchedule, generate_schedule
from mimesisbench.synth.streams import RANK_BITS

WINDOW_MS = 120_000
FILE_CHAIN = CommandChain(
    commands=["getfileinfo", "open"],
    share=[0.4375, 0.5625],
    first=[1.0, 0.0],
    next=[[0.1, 0.9], [0.7, 0.3]],
)
#: stationary shares of FILE_CHAIN (getfileinfo, open)
FILE_STATIONARY = (0.4375, 0.5625)


def _near(ms: float) -> Distribution:
    """About ``ms`` (within 0.5 %)."""
    return Distribution(values=[ms * 0.995, ms * 1.005], weights=[0.0, 1.0])


def v2_profile(**over: Any) -> WorkloadProfile:
    """A file type (chain getfileinfo -> open, half its created files in created directories), a
    poller directory type (listStatus every 10 s) and a volatile created-directory type (listed,
    stat'ed, some renamed, all deleted), and a pathless command."""
    files = FileType(
        id=1,
        weight=1.0,
        pre_existing=200,
        create_interarrival=exp_dist(WINDOW_MS / 400 * 0.6, seed=1),
        activation_delay=exp_dist(500.0, seed=2),
        active_span=exp_dist(5000.0, seed=3),
        access_interarrival=exp_dist(800.0, seed=4),
        delete_delay=exp_dist(1000.0, seed=5),
        delete_share=0.6,
        observed={"popularity": Distribution(values=[1, 4, 10, 40], weights=[0.2, 0.4, 0.3, 0.1])},
        commands=FILE_CHAIN,
        new_dir_share=0.5,
    )
    poller = FileType(
        id=2,
        kind="directory",
        weight=0.0,
        pre_existing=3,
        activation_delay=Distribution(values=[0.0, 1000.0], weights=[0.0, 1.0]),
        active_span=_near(WINDOW_MS),
        access_interarrival=_near(10_000.0),
        observed={"popularity": Distribution(values=[30.0], weights=[1.0])},
        commands=CommandChain(
            commands=["listStatus"],
            share=[1.0],
            first=[1.0],
            next=[[1.0]],
            gaps={"listStatus>listStatus": _near(10_000.0)},
        ),
    )
    jobs = FileType(
        id=3,
        kind="directory",
        weight=1.0,
        pre_existing=2,
        create_interarrival=exp_dist(WINDOW_MS / 30 * 0.6, seed=6),
        activation_delay=exp_dist(300.0, seed=7),
        active_span=exp_dist(8000.0, seed=8),
        access_interarrival=exp_dist(3000.0, seed=9),
        delete_delay=exp_dist(15_000.0, seed=10),
        delete_share=1.0,
        observed={"popularity": Distribution(values=[1, 3, 8], weights=[0.3, 0.4, 0.3])},
        commands=CommandChain(
            commands=["listStatus", "getfileinfo", "rename"],
            share=[0.5, 0.4, 0.1],
            first=[0.6, 0.4, 0.0],
            next=[[0.4, 0.5, 0.1], [0.6, 0.3, 0.1], [0.5, 0.5, 0.0]],
        ),
    )
    spec: dict[str, Any] = dict(
        version=2,
        name="v2-test",
        source=ProfileSource(kind="builtin"),
        window_ms=WINDOW_MS,
        total_creates=400,
        created_directories=40,
        types=[files, poller, jobs],
        op_mix=OpMix(),
        namespace=NamespaceShape(
            directories=31,
            dirs_per_depth=[1, 5, 10, 15],
            subdirs_per_dir=Distribution(values=[0, 2, 6], weights=[0.3, 0.4, 0.3]),
            files_at_depth={1: 0.1, 2: 0.2, 3: 0.3, 4: 0.4},
        ),
        pathless=[PathlessCommand(command="getDatanodeReport", count=40, interarrival=exp_dist(2000.0, seed=11))],
    )
    spec.update(over)
    return WorkloadProfile(**spec)


def test_chain_op_mix_follows_the_stationary_shares() -> None:
    s = generate_schedule(v2_profile(total_creates=3000), GenerateOptions(), seed=3)
    ft = s.etype == 1
    op = s.op[ft]
    gfi = int(np.count_nonzero(op == OpCode.GETFILEINFO))
    opens = int(np.count_nonzero(op == OpCode.OPEN))
    assert opens + gfi > 3000
    assert not np.isin(op, [OpCode.LIST_FILE]).any()
    # each stream starts with getfileinfo: streams of a few accesses hold more of it than the
    # stationary share; the mix lies between the two
    share = gfi / (gfi + opens)
    assert FILE_STATIONARY[0] - 0.03 < share < 0.6


def test_transitions_follow_the_chain() -> None:
    s = generate_schedule(v2_profile(total_creates=3000), GenerateOptions(), seed=4)
    sel = np.flatnonzero((s.etype == 1) & np.isin(s.op, [OpCode.GETFILEINFO, OpCode.OPEN]))
    target, op = s.target[sel], s.op[sel]
    order = np.argsort(target, kind="stable")
    target, op = target[order], op[order]
    same = target[1:] == target[:-1]
    prev, nxt = op[:-1][same], op[1:][same]
    from_gfi = nxt[prev == OpCode.GETFILEINFO]
    from_open = nxt[prev == OpCode.OPEN]
    assert np.mean(from_gfi == OpCode.OPEN) == pytest.approx(0.9, abs=0.03)
    assert np.mean(from_open == OpCode.GETFILEINFO) == pytest.approx(0.7, abs=0.03)
    first = np.ones(target.size, dtype=bool)
    first[1:] = ~same
    assert (op[first] == OpCode.GETFILEINFO).all()


def test_a_10_s_poller_lists_every_10_s() -> None:
    s = generate_schedule(v2_profile(), GenerateOptions(), seed=5)
    sel = np.flatnonzero(s.etype == 2)
    assert (s.op[sel] == OpCode.LIST_DIR).all() and sel.size >= 3 * 11
    tree = s.pre_dirs
    for d in np.unique(s.target[sel]):
        assert 0 < d < tree  # a stable type's objects are directories of the tree
        times = s.time_us[sel][s.target[sel] == d]
        gaps = np.diff(times) / 1000.0
        assert gaps.size >= 10
        assert np.all(np.abs(gaps - 10_000.0) <= 60.0), gaps


def test_files_in_created_directories_live_within_them_and_renamed_directories_hold_none() -> None:
    s = generate_schedule(v2_profile(), GenerateOptions(), seed=6)
    ns = s.namespace
    dir_type = ns.dtype
    made = np.flatnonzero(s.op == OpCode.MKDIRS)
    made_dirs = s.target[made].astype(np.int64)
    assert made_dirs.size >= 10 and (dir_type[made_dirs] == 3).all()
    in_new = np.flatnonzero(np.isin(s.file_dir, made_dirs))
    created_files = int((~s.file_pre).sum())
    assert 0.25 * created_files < in_new.size <= 0.55 * created_files
    on_dir = np.array([OpCode(o).on_directory for o in s.op])
    file_ev = ~on_dir & (s.op != OpCode.NAMENODE)
    renamed = set(s.target[s.op == OpCode.RENAME_DIR].astype(np.int64).tolist())
    assert renamed, "the chain renames some directories"
    dele = {
        int(t): int(i) for i, t in zip(np.flatnonzero(s.op == OpCode.DELETE_DIR), s.target[s.op == OpCode.DELETE_DIR])
    }
    mk = {int(t): int(i) for i, t in zip(made, made_dirs)}
    for f in in_new.tolist():
        d = int(s.file_dir[f])
        assert d not in renamed
        seqs = np.flatnonzero(file_ev & (s.target == f))
        assert seqs.size and seqs[0] > mk[d]
        if d in dele:
            assert seqs[-1] < dele[d]


def test_v2_schedule_checks_and_exports(tmp_path: Path) -> None:
    out, s, manifest = generate_to(v2_profile(), tmp_path / "s", GenerateOptions(), seed=8)
    assert manifest["pathless_commands"] == ["getDatanodeReport"]
    res = check_schedule(out)
    assert res.ok, res.message
    counts = s.op_counts()
    for label in (
        "getfileinfo",
        "open",
        "list_dir",
        "getfileinfo_dir",
        "rename_dir",
        "mkdirs",
        "delete_dir",
        "namenode",
    ):
        assert counts[label] > 0, label
    tables = read_schedule(out)
    pre = tables.directories.filter(pl.col("pre_existing") & (pl.col("type") == 3))
    assert pre.height == 2  # the volatile type's pre-existing objects: extra directories of phase 1


def test_isolating_a_directory_type_and_scaling_keep_working(tmp_path: Path) -> None:
    p = v2_profile()
    only = generate_schedule(p, GenerateOptions(types=(3,)), seed=2)
    assert only.file_type.size == 0 and set(np.unique(only.etype).tolist()) <= {0, 3}
    assert int(np.count_nonzero(only.op == OpCode.MKDIRS)) > 5
    half = generate_schedule(p, GenerateOptions(scale_files=0.5), seed=2)
    full = generate_schedule(p, GenerateOptions(), seed=2)
    n_half = int(np.count_nonzero(half.op == OpCode.MKDIRS))
    n_full = int(np.count_nonzero(full.op == OpCode.MKDIRS))
    assert 0.3 * n_full <= n_half <= 0.7 * n_full
    nn_half = int(np.count_nonzero(half.op == OpCode.NAMENODE))
    assert 10 <= nn_half <= 25
    out, _, _ = generate_to(p, tmp_path / "iso", GenerateOptions(types=(1, 3), duration_ms=30_000), seed=2)
    assert check_schedule(out).ok


def _digest(s: GeneratedSchedule) -> str:
    h = hashlib.sha256()
    for a in (s.time_us, s.meta, s.target.astype(np.int64), s.file_dir, s.file_type, s.file_pre, s.namespace.parent):
        h.update(np.ascontiguousarray(a).tobytes())
    h.update("\n".join(s.namespace.paths.to_list()).encode())
    return h.hexdigest()


#: digests of schedules made before format 2's generator (main at 5f2cfb4): profiles without
#: chains or directory types must come out byte-identical
BEFORE = {
    "last_access": "421fb34436f3bdd6a0707cbc9a45cf15f7fb5157d25d00cb1525163e5e992334",
    "creation": "93af44e98af42190e1e05697c554e9f0949c7f9e815518b815522f8d121b6854",
    "popularity": "00826631b69876d49d96af4bdd021ee8322e9cfa4cfcd415eb0635c21443362a",
}


@pytest.mark.skipif(sys.byteorder != "little", reason="digests of little-endian arrays")
@pytest.mark.parametrize("case", sorted(BEFORE))
def test_profiles_without_chains_generate_as_before(case: str) -> None:
    pop = Distribution(values=[1, 3, 8, 20], weights=[0.4, 0.3, 0.2, 0.1])
    profile = {
        "last_access": make_profile(),
        "creation": make_profile(origin="creation"),
        "popularity": make_profile(observed={"popularity": pop}),
    }[case]
    assert _digest(generate_schedule(profile, GenerateOptions(), 7)) == BEFORE[case]
    if case == "last_access":
        iso = generate_schedule(profile, GenerateOptions(types=(2, 3), scale_files=0.5), 3)
        assert _digest(iso) == "1549015000f05caf5432e11a7b2e0281ccbf4e15c6ccdceb1c3d62dca74afbf7"


def test_export_audit_writes_each_ops_command_and_pathless_lines(tmp_path: Path) -> None:
    out, _, _ = generate_to(v2_profile(), tmp_path / "s", GenerateOptions(duration_ms=60_000), seed=9)
    tables = read_schedule(out)
    buf = io.StringIO()
    n = export_audit(tables, buf, base="/bench")
    lines = buf.getvalue().splitlines()
    assert n == len(lines) == tables.events.height
    cmds = [line.split("\tcmd=", 1)[1].split("\t", 1)[0] for line in lines]
    assert {"getfileinfo", "open", "listStatus", "mkdirs", "delete", "rename", "getDatanodeReport"} <= set(cmds)
    for line, cmd in zip(lines, cmds):
        src = line.split("\tsrc=", 1)[1].split("\t", 1)[0]
        assert (src == "null") == (cmd == "getDatanodeReport"), line
        assert src == "null" or src.startswith("/bench")
    log = tmp_path / "audit.log"
    log.write_text(buf.getvalue())
    parsed = read_trace_events([log])
    mine = schedule_to_events(tables, base="/bench")
    assert parsed.height == mine.height
    got = parsed.select(pl.col("op").cast(pl.String), pl.col("path").cast(pl.String), pl.col("dst").cast(pl.String))
    assert got.equals(mine.select("op", "path", "dst"))


def test_profile_show_prints_kinds_command_mix_and_directory_types(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.unit.cli_run import run_cli

    from mimesisbench.profile.io import save_profile

    path = tmp_path / "v2.json"
    save_profile(v2_profile(), path)
    code, out, _ = run_cli(["profile", "show", str(path)], capsys)
    assert code == 0, out
    assert "directory types" in out and "1 " in out.split("file types (K)", 1)[1]
    assert "getDatanodeReport" in out
    mix = {line.split()[0]: line for line in out.splitlines() if "%" in line and line.split()[0] in ("1", "2", "3")}
    assert "file" in mix["1"] and "open 56%, getfileinfo 44%" in mix["1"] and "50% in new dirs" in mix["1"]
    assert "directory" in mix["2"] and "listStatus 100%" in mix["2"]
    assert "directory" in mix["3"] and "listStatus 50%, getfileinfo 40%, rename 10%" in mix["3"]
    code, out, _ = run_cli(["profile", "show", str(path), "--json"], capsys)
    data = json.loads(out)
    kinds = {t["id"]: t["kind"] for t in data["types"]}
    assert kinds == {1: "file", 2: "directory", 3: "directory"}
    assert data["types"][0]["commands"][0] == {"command": "open", "share": pytest.approx(0.5625)}
    assert data["created_directories"] == 40 and data["directory_type_count"] == 2
    assert data["types"][2]["created"] == 40


def test_validate_profile_reports_command_shares_and_directory_types(tmp_path: Path) -> None:
    out, _, _ = generate_to(v2_profile(total_creates=2000), tmp_path / "s", GenerateOptions(), seed=10)
    report = validate_profile(read_schedule(out), v2_profile(total_creates=2000))
    files = report["types"]["1"]
    cmds = files["commands"]
    assert set(cmds) == {"getfileinfo", "open"}
    assert cmds["open"]["profile_share"] == pytest.approx(0.5625)
    assert abs(cmds["open"]["schedule_share"] - 0.5625) < 0.08
    assert files["n_popularity"] > 500 and files["ks_popularity"] < 0.1
    poller = report["types"]["2"]
    assert poller["kind"] == "directory" and poller["objects"] == 3 and poller["creates"] == 0
    assert poller["commands"]["listStatus"]["schedule_share"] == pytest.approx(1.0)
    jobs = report["types"]["3"]
    assert jobs["creates_target"] == 40 and 20 <= jobs["creates"] <= 40
    assert set(jobs["commands"]) == {"listStatus", "getfileinfo", "rename"}
    for cmd, row in jobs["commands"].items():
        assert abs(row["schedule_share"] - row["profile_share"]) < 0.2, cmd


def _lister(type_id: int, pre: int, gap_ms: Distribution, accesses: float) -> FileType:
    """A stable directory type: ``pre`` directories, each listed ``accesses`` times, ``gap_ms`` apart."""
    return FileType(
        id=type_id,
        kind="directory",
        weight=0.0,
        pre_existing=pre,
        activation_delay=Distribution(values=[0.0, 1000.0], weights=[0.0, 1.0]),
        active_span=_near(WINDOW_MS),
        access_interarrival=gap_ms,
        observed={"popularity": Distribution(values=[accesses], weights=[1.0])},
        commands=CommandChain(commands=["listStatus"], share=[1.0], first=[1.0], next=[[1.0]]),
    )


def test_stable_directory_types_get_distinct_directories() -> None:
    """Two stable directory types' objects (3 + 20 of the tree's 31 directories) never share one:
    a directory listed by two types would merge two objects into one."""
    base = v2_profile()
    types = [base.types[0], base.types[1], _lister(4, 20, _near(10_000.0), 5.0), base.types[2]]
    s = generate_schedule(v2_profile(types=types), GenerateOptions(), seed=8)
    targets = {t: set(s.target[(s.etype == t) & (s.op == OpCode.LIST_DIR)].tolist()) for t in (2, 4)}
    assert len(targets[2]) == 3 and len(targets[4]) == 20
    assert not targets[2] & targets[4]


def test_a_chain_types_counted_accesses_stay_in_the_window() -> None:
    """Directories listed 30 times at 3.2-4.8 s (29 gaps: 116 s on average, +-2.5 s) in a 120 s
    window, as a poller seen for the whole window: each keeps its 30 listings (the stream starts
    earlier or is squeezed by at most 5 %), none is cut by the window's end."""
    base = v2_profile()
    gaps = Distribution(values=[3200.0, 4800.0], weights=[0.0, 1.0])
    types = [base.types[0], _lister(2, 25, gaps, 30.0), base.types[2]]
    s = generate_schedule(v2_profile(types=types), GenerateOptions(), seed=9)
    sel = (s.etype == 2) & (s.op == OpCode.LIST_DIR)
    per_dir = np.unique(s.target[sel], return_counts=True)[1]
    assert per_dir.size == 25
    assert (per_dir == 30).all(), per_dir
    assert int(s.time_us[sel].max()) < WINDOW_MS * 1000


def _deleting_directory_law() -> ChainLaw:
    """A directory type's chain of getfileinfo, delete and listStatus (states 0, 1, 2)."""
    return ChainLaw(v2_profile().types[2].model_copy(update={
        "commands": CommandChain(
            commands=["getfileinfo", "delete", "listStatus"],
            share=[0.4, 0.3, 0.3],
            first=[1.0, 0.0, 0.0],
            next=[[0.4, 0.3, 0.3], [0.5, 0.2, 0.3], [0.4, 0.3, 0.3]],
        )
    }))


def test_lookups_after_a_mid_stream_delete_are_misses_not_re_creations() -> None:
    """A job checks that its output is gone (``delete``, then ``getfileinfo``s that miss) before it
    writes it again. The lookups after the delete stay lookups (GETFILEINFO_ABSENT); only the first
    other access re-creates the object. A directory's delete right after a delete's lookups is that
    re-creation and starts a run of its own: it waits as a MKDIRS_EXISTING for ``synth.recreation``
    to give it its delete back (its own command in the high byte: the next test), and the lookups
    after it miss."""
    law = _deleting_directory_law()
    gfi, dele, ls = 0, 1, 2
    streams = [[dele, gfi, gfi, ls, dele], [ls, dele, dele, dele, gfi, ls], [dele, gfi], [gfi, dele, gfi, dele, gfi]]
    states = np.array([s for stream in streams for s in stream], dtype=np.int16)
    counts = np.array([len(s) for s in streams], dtype=np.int64)
    ops = law.labels(states, counts)
    o = OpCode
    absent, mk, dd, gd, ld = o.GETFILEINFO_ABSENT_DIR, o.MKDIRS_EXISTING, o.DELETE_DIR, o.GETFILEINFO_DIR, o.LIST_DIR
    assert [OpCode(x) for x in ops] == [
        dd, absent, absent, mk, dd,
        ld, dd, mk, mk, absent, mk,
        dd, absent,
        gd, dd, absent, mk, absent,
    ]
    # a stream that ends with a delete waiting for its re-creation is gone: no lifecycle delete follows
    assert law.ends_deleted(ops, counts, counts, states).tolist() == [True, False, True, True]


def test_kept_streams_hand_out_their_gap_cells() -> None:
    """An object that takes a kept stream gets its gaps' cells (``stream_gaps``: two digits per
    gap, most significant first; -1 before its first access); one cut from a longer stream has
    no cell where its head meets its end (that gap was never seen). Kept streams with cells come
    before the kept sequences: they are a sample of all the type's streams."""
    law = ChainLaw(v2_profile().types[2].model_copy(update={
        "commands": CommandChain(
            commands=["getfileinfo", "delete", "listStatus"], share=[0.4, 0.3, 0.3], first=[1.0, 0.0, 0.0],
            next=[[0.4, 0.3, 0.3], [0.5, 0.2, 0.3], [0.4, 0.3, 0.3]],
            sequences={"getfileinfo>getfileinfo>getfileinfo>getfileinfo": 1.0},
            streams=["ABCA"], stream_gaps="ABAC_-",  # cells 1, 2, 4094
        )
    }))
    counts = np.array([4, 3], dtype=np.int64)
    cells = np.full(7, -1, dtype=np.int32)
    states = law.states(counts, np.random.default_rng(1), cells)
    assert states.tolist() == [0, 1, 2, 0, 0, 1, 0]  # the kept stream, not the sequence; then cut
    assert cells.tolist() == [-1, 1, 2, 4094, -1, 1, -1]
    fresh = np.full(7, 0.5)
    u = gap_uniforms(cells, fresh, np.random.default_rng(2))
    assert ((u[[1, 2, 3, 5]] * 4096).astype(int) == [1, 2, 4094, 1]).all()
    assert (u[[0, 4, 6]] == 0.5).all()


def test_objects_of_one_access_take_the_kept_sequences_before_the_kept_single_accesses() -> None:
    """With gap codes the kept streams of two or more accesses are a sample of all, but the
    single accesses kept are only those no sequence covers (a rare command): an object of one
    access takes a kept sequence with its share and the kept single accesses only the rest."""
    law = ChainLaw(v2_profile().types[2].model_copy(update={
        "commands": CommandChain(
            commands=["getfileinfo", "delete", "listStatus"], share=[0.6, 0.1, 0.3], first=[1.0, 0.0, 0.0],
            next=[[0.4, 0.3, 0.3], [0.5, 0.2, 0.3], [0.4, 0.3, 0.3]],
            sequences={"getfileinfo": 0.8, "listStatus": 0.15},  # the other 5 %: the kept "B"
            streams=["B", "AC"], stream_gaps="AB",
        )
    }))
    counts = np.ones(2000, dtype=np.int64)
    states = law.states(counts, np.random.default_rng(3), np.full(2000, -1, dtype=np.int32))
    share = np.bincount(states, minlength=3) / states.size
    assert abs(share[0] - 0.80) < 0.04 and abs(share[2] - 0.15) < 0.04 and 0.0 < share[1] < 0.1, share.tolist()
    two = law.states(np.full(10, 2, dtype=np.int64), np.random.default_rng(4))
    assert two.tolist() == [0, 2] * 10  # every object of two accesses takes the kept stream of two


def test_the_command_of_an_implicit_re_creation_is_kept() -> None:
    """The first non-lookup access after a directory's mid-stream delete re-creates it; when that
    access was not a mkdirs, its own command rides in the high byte for ``synth.recreation`` (a
    job lists its output directory once a task has made it again; a job deletes its control
    directory every 6 s, made again between by the files it creates in it)."""
    law = _deleting_directory_law()
    gfi, dele, ls = 0, 1, 2
    streams = [[dele, gfi, gfi, ls, dele], [ls, dele, dele, dele, gfi, ls], [gfi, dele, gfi, dele, gfi]]
    states = np.array([s for stream in streams for s in stream], dtype=np.int16)
    counts = np.array([len(s) for s in streams], dtype=np.int64)
    ops = law.labels(states, counts)
    marked = law.with_origins(states, ops)
    assert ((marked & 0xFF) == ops).all()
    origin = marked >> ORIGIN_SHIFT
    assert np.flatnonzero(origin).tolist() == [3, 7, 8, 10, 14]  # the listings and the deletes after deletes
    assert (origin[[3, 10]] == OpCode.LIST_DIR).all()
    assert (origin[[7, 8, 14]] == OpCode.DELETE_DIR).all()
    files = ChainLaw(v2_profile().types[0])
    fs = files.states(np.array([6, 6]), np.random.default_rng(1))
    assert (files.with_origins(fs, files.labels(fs, np.array([6, 6]))) >> ORIGIN_SHIFT == 0).all()


def _dir_events(*events: tuple[int, OpCode, int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(time_us, op, target, origin op) -> key, meta, target arrays as ``resolve`` takes them."""
    key = np.array([t << RANK_BITS for t, _, _, _ in events], dtype=np.int64)
    meta = np.array([int(op) | (origin << ORIGIN_SHIFT) | (3 << 16) for _, op, _, origin in events], dtype=np.uint32)
    target = np.array([d for _, _, d, _ in events], dtype=np.int64)
    return key, meta, target


def test_an_implicit_re_creation_gets_the_file_that_moves_least() -> None:
    """Directory 7 is deleted at 10 s and listed at 20 s (made again implicitly), deleted again
    at 30 s: a created file whose whole life fits between 10 and 30 s, made before 20 s, goes
    into it, the one that has to move least; the listing gets its command back. Directory 8
    (renamed) and directory 9 (no file fits) keep their mkdirs."""
    o = OpCode
    sec = 1_000_000
    key, meta, target = _dir_events(
        (10 * sec, o.DELETE_DIR, 7, 0), (20 * sec, o.MKDIRS_EXISTING, 7, int(o.LIST_DIR)),
        (30 * sec, o.DELETE_DIR, 7, 0),
        (10 * sec, o.DELETE_DIR, 8, 0), (20 * sec, o.MKDIRS_EXISTING, 8, int(o.LIST_DIR)),
        (25 * sec, o.RENAME_DIR, 8, 0),
        (100 * sec, o.DELETE_DIR, 9, 0), (101 * sec, o.MKDIRS_EXISTING, 9, int(o.GETFILEINFO_DIR)),
        (102 * sec, o.DELETE_DIR, 9, 0),
    )  # fmt: skip
    # candidates: made at, last event at
    made = np.array([2, 12, 15, 40, 60], dtype=np.int64) * sec
    last = np.array([6, 35, 29, 45, 70], dtype=np.int64) * sec
    done = resolve(key, meta, target, made, last, window_us=1000 * sec)
    ops = (meta & 0xFF).tolist()
    assert ops == [o.DELETE_DIR, o.LIST_DIR, o.DELETE_DIR, o.DELETE_DIR, o.MKDIRS_EXISTING, o.RENAME_DIR,
                   o.DELETE_DIR, o.MKDIRS_EXISTING, o.DELETE_DIR]  # fmt: skip
    assert ((meta >> ORIGIN_SHIFT) & 0xFF == 0).all()  # every origin byte cleared
    # file 2 (15..29 s) fits as it is; file 0 (2..6 s) would have to move by 8 s, file 1 ends too late
    assert done.files.tolist() == [2] and done.dirs.tolist() == [7] and done.shift_us.tolist() == [0]
    assert done.kept_mkdirs == 2
    key, meta, target = _dir_events(
        (10 * sec, o.DELETE_DIR, 7, 0), (20 * sec, o.MKDIRS_EXISTING, 7, int(o.LIST_DIR))
    )
    done = resolve(key, meta, target, np.array([2, 40]) * sec, np.array([6, 50]) * sec, window_us=1000 * sec)
    # file 0 moves to the delete + the guard (file 1 would move back by 20 s)
    assert done.files.tolist() == [0] and done.shift_us.tolist() == [8 * sec + GUARD_US]


def test_a_delete_after_a_delete_gets_a_file_that_is_done_before_it() -> None:
    """Directory 7 is deleted at 10 s and again at 16 s (a job's control directory, made again
    between by the files the job creates in it): the second delete waits as a MKDIRS_EXISTING
    with its own command in the high byte. The file that goes in must be done before that delete
    (by the guard), not merely before the directory's next one: file 1 (11.5..18 s) would
    outlive it, so file 0 (9..10.5 s) goes in, moved to just after the first delete; the delete
    gets its command back. The third delete (at 22 s) gets a file made after the second (file 2),
    not one made before it (file 3 spans the second delete)."""
    o = OpCode
    sec = 1_000_000
    key, meta, target = _dir_events(
        (10 * sec, o.DELETE_DIR, 7, 0), (16 * sec, o.MKDIRS_EXISTING, 7, int(o.DELETE_DIR)),
        (22 * sec, o.MKDIRS_EXISTING, 7, int(o.DELETE_DIR)),
    )  # fmt: skip
    made = np.array([9_000, 11_500, 17_000, 12_000], dtype=np.int64) * 1000
    last = np.array([10_500, 18_000, 18_000, 19_000], dtype=np.int64) * 1000
    done = resolve(key, meta, target, made, last, window_us=1000 * sec)
    assert (meta & 0xFF).tolist() == [o.DELETE_DIR] * 3
    assert done.files.tolist() == [0, 2] and done.dirs.tolist() == [7, 7] and done.kept_mkdirs == 0
    assert done.shift_us.tolist() == [1 * sec + GUARD_US, 0]


def test_a_directory_deleted_mid_stream_is_made_again_by_a_file_created_in_it(tmp_path: Path) -> None:
    """A job directory deleted and then listed again without a mkdirs (as MapReduce's committer
    does: a task's create makes it): the schedule holds listings right after deletes, each with a
    file created in the directory between them; it checks, and a real file system replays it
    with every operation ok."""
    chain = CommandChain(
        commands=["getfileinfo", "delete", "listStatus"],
        share=[0.4, 0.2, 0.4],
        first=[0.5, 0.0, 0.5],
        next=[[0.3, 0.3, 0.4], [0.6, 0.0, 0.4], [0.4, 0.3, 0.3]],
    )
    p = v2_profile()
    jobs = p.types[2].model_copy(update={"commands": chain})
    files = p.types[0].model_copy(update={"new_dir_share": 0.0})
    p = p.model_copy(update={"types": [files, p.types[1], jobs]})
    out, _s, _ = generate_to(p, tmp_path / "s", GenerateOptions(duration_ms=30_000), seed=4)
    res = check_schedule(out)
    assert res.ok, res.message
    tables = read_schedule(out)
    ev = tables.events.with_row_index("row")
    dir_ops = {int(o) for o in OpCode if o.on_directory}
    on_dirs = ev.filter(pl.col("op").is_in(list(dir_ops)) & (pl.col("op") != OpCode.GETFILEINFO_ABSENT_DIR))
    creates = ev.filter(pl.col("op") == OpCode.CREATE).join(
        tables.files.select(pl.col("file_id").alias("target"), "dir_id"), on="target"
    )
    implicit = 0
    for (d,), part in on_dirs.sort("row").partition_by(["target"], as_dict=True).items():
        rows = part.select("time_us", "op").rows()
        for (t0, a), (t1, b) in zip(rows, rows[1:]):
            if a == OpCode.DELETE_DIR and b not in (OpCode.MKDIRS_EXISTING, OpCode.DELETE_DIR):
                made_in = creates.filter((pl.col("dir_id") == d) & pl.col("time_us").is_between(t0, t1))
                assert made_in.height >= 1, f"directory {d} accessed at {t1} after its delete at {t0}"
                implicit += 1
    assert implicit >= 3
    config = RunConfig(schedule=str(out), backend=f"posix:{tmp_path / 'base'}", out=str(tmp_path / "runs"))
    report = run_benchmark(config, show_progress=False)
    assert report.complete
    summary = json.loads((report.run_dir / rundir.SUMMARY).read_text())
    assert all(stats["failed"] == 0 for stats in summary["operations"].values()), summary["operations"]


def test_a_schedule_with_misses_checks_and_replays_without_failures(tmp_path: Path) -> None:
    """Files deleted mid-stream and stat-ed afterwards: the schedule is valid and a real file
    system replays it with every operation ok (a miss is the lookup's expected answer)."""
    chain = CommandChain(
        commands=["getfileinfo", "delete", "create", "open"],
        share=[0.4, 0.2, 0.2, 0.2],
        first=[0.5, 0.0, 0.0, 0.5],
        next=[[0.2, 0.3, 0.2, 0.3], [0.8, 0.0, 0.2, 0.0], [0.3, 0.0, 0.0, 0.7], [0.4, 0.4, 0.0, 0.2]],
    )
    p = v2_profile(total_creates=200)
    p = p.model_copy(update={"types": [p.types[0].model_copy(update={"commands": chain, "new_dir_share": 0.0})]})
    out, s, _ = generate_to(p, tmp_path / "s", GenerateOptions(duration_ms=20_000), seed=4)
    res = check_schedule(out)
    assert res.ok, res.message
    counts = s.op_counts()
    assert counts["getfileinfo_absent"] > 0 and counts["create_overwrite"] > 0
    config = RunConfig(schedule=str(out), backend=f"posix:{tmp_path / 'base'}", out=str(tmp_path / "runs"))
    report = run_benchmark(config, show_progress=False)
    assert report.complete
    summary = json.loads((report.run_dir / rundir.SUMMARY).read_text())
    assert summary["operations"]["getfileinfo_absent"]["issued"] == counts["getfileinfo_absent"]
    assert all(stats["failed"] == 0 for stats in summary["operations"].values()), summary["operations"]


def test_stratified_within_puts_each_group_one_draw_per_stratum() -> None:
    """Each object's k gaps take one uniform in each of k equal strata, whatever the order of
    the entries, and the strata come in a random order (not the entries' order)."""
    rng = np.random.default_rng(3)
    sizes = np.array([1, 2, 7, 50, 300])
    group = rng.permutation(np.repeat(np.arange(sizes.size), sizes))
    u = stratified_within(rng, group)
    assert ((u >= 0.0) & (u < 1.0)).all()
    for g, k in enumerate(sizes):
        strata = np.sort(np.floor(u[group == g] * k).astype(np.int64))
        assert (strata == np.arange(k)).all(), (g, strata)
    big = u[group == 4]
    assert abs(float(np.corrcoef(np.arange(big.size), big)[0, 1])) < 0.2
