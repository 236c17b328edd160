"""The hdfs backend against the real NameNode of the ``local_hdfs`` session fixture.

The public backend conformance suite (``mimesisbench.backends.conformance``) runs here with an
hdfs factory (a backend on a fresh base directory per case): each explicit case as a test, then
its Hypothesis state machine.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hdfs_native import Client

from mimesisbench.backends.base import Backend, Outcome
from mimesisbench.backends.conformance import CASES, Case, check_random_sequences, run_case
from mimesisbench.backends.hdfs import HDFS_CAPABILITIES, HdfsBackend, HdfsUrl
from mimesisbench.backends.registry import open_backend
from mimesisbench.errors import BackendError, ConfigError, SafetyError
from mimesisbench.hdfs.cluster import LocalHdfs
from mimesisbench.schedule.format import OpCode

pytestmark = pytest.mark.integration


ROOT = "/conformance"


@pytest.fixture(scope="module", autouse=True)
def _remove_root(local_hdfs: LocalHdfs) -> Iterator[None]:
    """Leave the session's namespace as found (other modules model its image and audit log)."""
    yield
    Client(local_hdfs.url).delete(ROOT, True)


def _factory(cluster: LocalHdfs) -> Callable[[], tuple[Backend, Callable[[], None]]]:
    def make() -> tuple[Backend, Callable[[], None]]:
        base = f"{ROOT}/{uuid.uuid4().hex[:12]}"
        backend = HdfsBackend(f"{cluster.url}{base}")
        backend.setup(reuse=False)
        backend.connect()

        def cleanup() -> None:
            backend.client.delete(base, True)
            backend.close()

        return backend, cleanup

    return make


HDFS_CASES = [c for c in CASES if c.applies_to(HDFS_CAPABILITIES)]


@pytest.mark.parametrize("case", HDFS_CASES, ids=[c.name for c in HDFS_CASES])
def test_conformance_case(local_hdfs: LocalHdfs, case: Case) -> None:
    assert run_case(_factory(local_hdfs), case), f"{case.name} should apply to hdfs"


def test_format_2_commands_async_agree_with_sync_and_audit_their_cmd(local_hdfs: LocalHdfs) -> None:
    """Every command hdfs performs or maps, through ``async_ops`` and ``sync_ops`` on twin objects:
    the same outcomes, and the NameNode audits the documented command."""
    backend, cleanup = _factory(local_hdfs)()
    assert isinstance(backend, HdfsBackend)
    base = backend.base
    sync, aio = backend.sync_ops(), backend.async_ops()
    ops = [op for op in OpCode if int(op) > 9 and not HDFS_CAPABILITIES.skips(op)]
    for side in ("s", "a"):
        backend.mkdirs(f"{base}/{side}")
        for op in ops:
            backend.mkdirs(f"{base}/{side}/{op.label}")
            backend.create(f"{base}/{side}/{op.label}/f")

    def target(side: str, op: OpCode) -> str:
        return f"{base}/{side}/{op.label}" + ("" if op.on_directory else "/f")

    def outcome_of(call: Callable[[], object]) -> Outcome:
        try:
            call()
        except backend.op_errors as exc:
            return backend.classify(exc)
        return Outcome.OK

    async def run_async() -> list[Outcome]:
        got = []
        for op in ops:
            try:
                await aio[op](target("a", op))
                got.append(Outcome.OK)
            except backend.op_errors as exc:
                got.append(backend.classify(exc))
        return got

    try:
        by_sync = [outcome_of(lambda op=op: sync[op](target("s", op))) for op in ops]  # type: ignore[misc]
        assert by_sync == [Outcome.OK] * len(ops), dict(zip([o.label for o in ops], by_sync))
        assert asyncio.run(run_async()) == by_sync
        seen = {cmd for cmd, src, _ in _audit(local_hdfs.audit_log, f"{base}/s/")}
        for op in ops:
            performed = HDFS_CAPABILITIES.performed_as(op)
            assert performed is not None and performed.audit_cmd in seen, op.label
    finally:
        cleanup()


def test_random_sequences_agree_with_the_reference(local_hdfs: LocalHdfs) -> None:
    check_random_sequences(_factory(local_hdfs), max_examples=40, steps=25)


def test_async_operations_agree_with_the_sync_ones(local_hdfs: LocalHdfs) -> None:
    backend, cleanup = _factory(local_hdfs)()
    assert isinstance(backend, HdfsBackend) and backend.is_async
    base = backend.base

    async def run() -> list[Outcome]:
        got = []
        calls = [
            ("mkdirs", (f"{base}/d",)),
            ("mkdirs", (f"{base}/d",)),
            ("create", (f"{base}/d/f",)),
            ("create", (f"{base}/d/f",)),
            ("open", (f"{base}/d/f",)),
            ("list_file", (f"{base}/d/f",)),
            ("getfileinfo", (f"{base}/d/f",)),
            ("rename", (f"{base}/d/f", f"{base}/d/g")),
            ("open", (f"{base}/d/f",)),
            ("delete", (f"{base}/d/g",)),
            ("delete", (f"{base}/d/g",)),
            ("create", (f"{base}/made/on/the/way/f",)),  # the missing parents are made
            ("getfileinfo", (f"{base}/made/on/the/way",)),
        ]
        for name, args in calls:
            try:
                await getattr(backend, f"aio_{name}")(*args)
                got.append(Outcome.OK)
            except backend.op_errors as exc:
                got.append(backend.classify(exc))
        assert await backend.aio_list_dir(f"{base}/d") == []
        return got

    try:
        ok, ex, nf = Outcome.OK, Outcome.EXISTS, Outcome.NOT_FOUND
        assert asyncio.run(run()) == [ok, ex, ok, ex, ok, ok, ok, ok, nf, ok, nf, ok, ok]
    finally:
        cleanup()


AUDIT = re.compile(r"\tcmd=(?P<cmd>[^\t]+)\tsrc=(?P<src>[^\t]+)\tdst=(?P<dst>[^\t]+)\t")


def _audit(path: Path, prefix: str) -> list[tuple[str, str, str]]:
    found = []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = AUDIT.search(line)
        if match and match["src"].startswith(prefix):
            found.append((match["cmd"], match["src"], match["dst"]))
    return found


def test_each_operation_is_the_documented_rpc_in_the_audit_log(local_hdfs: LocalHdfs) -> None:
    backend, cleanup = _factory(local_hdfs)()
    base = backend.base
    try:
        start = len(_audit(local_hdfs.audit_log, base))
        backend.mkdirs(f"{base}/d")
        backend.create(f"{base}/d/f")
        backend.open(f"{base}/d/f")
        backend.list_file(f"{base}/d/f")
        backend.list_dir(f"{base}/d")
        backend.getfileinfo(f"{base}/d/f")
        backend.rename(f"{base}/d/f", f"{base}/d/g")
        backend.delete(f"{base}/d/g")
        backend.create(f"{base}/gone/again/f")  # makes /gone/again: only the create is audited
        expected = [
            ("getfileinfo", f"{base}/d", "null"),  # mkdirs asks first (strict mode)
            ("mkdirs", f"{base}/d", "null"),
            ("create", f"{base}/d/f", "null"),
            ("open", f"{base}/d/f", "null"),
            ("listStatus", f"{base}/d/f", "null"),
            ("listStatus", f"{base}/d", "null"),
            ("getfileinfo", f"{base}/d/f", "null"),
            ("rename (options=[NONE])", f"{base}/d/f", f"{base}/d/g"),
            ("delete", f"{base}/d/g", "null"),
            ("create", f"{base}/gone/again/f", "null"),
        ]
        deadline = time.monotonic() + 10
        while True:  # the audit appender flushes each line; allow for a slow disk
            got = _audit(local_hdfs.audit_log, base)[start:]
            if len(got) >= len(expected) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert got == expected
    finally:
        cleanup()


def test_native_mkdirs_is_one_rpc_with_hdfs_semantics(local_hdfs: LocalHdfs) -> None:
    base = f"{ROOT}/{uuid.uuid4().hex[:12]}"
    backend = open_backend(f"{local_hdfs.url}{base}?mkdirs=native")
    backend.setup(reuse=False)
    backend.connect()
    try:
        backend.mkdirs(f"{base}/d")
        backend.mkdirs(f"{base}/d")  # an existing directory is fine for HDFS
        assert backend.list_dir(base) is not None
    finally:
        Client(local_hdfs.url).delete(base, True)


def test_setup_refuses_a_foreign_base_and_reuses_its_own(local_hdfs: LocalHdfs) -> None:
    client = Client(local_hdfs.url)
    foreign = f"{ROOT}/{uuid.uuid4().hex[:12]}"
    client.mkdirs(f"{foreign}/someones-data", create_parent=True)
    try:
        with pytest.raises(SafetyError, match="not empty"):
            HdfsBackend(f"{local_hdfs.url}{foreign}").setup(reuse=False)
        HdfsBackend(f"{local_hdfs.url}{foreign}").setup(reuse=True)
        ours = HdfsBackend(f"{local_hdfs.url}{foreign}/ours")
        ours.setup(reuse=False)
        ours.create(f"{ours.base}/x")
        HdfsBackend(f"{local_hdfs.url}{foreign}/ours").setup(reuse=False)  # has our marker
        assert ours.read_marker() is None
        ours.write_marker('{"namespace_hash": "abc", "state": "ready"}\n')
        ours.write_marker('{"namespace_hash": "abc", "state": "used"}\n')
        assert ours.read_marker() == '{"namespace_hash": "abc", "state": "used"}\n'
        with pytest.raises(SafetyError, match="not below the base"):
            ours.remove_tree(foreign)
    finally:
        client.delete(foreign, True)


def test_an_unreachable_namenode_is_a_backend_error_quickly() -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    backend = HdfsBackend(f"hdfs://127.0.0.1:{port}/x")
    with pytest.raises(BackendError, match="cannot reach the NameNode"):
        backend.setup(reuse=False)


def test_url_validation() -> None:
    for bad in ("hdfs://nn:8020", "hdfs://nn:8020/", "hdfs://nn:8020/a/../b", "hdfs:///x", "hdfs://nn/x?bogus=1"):
        with pytest.raises(ConfigError):
            HdfsUrl(bad)
    parts = HdfsUrl("hdfs://nn:8020/a/b/?mkdirs=native&dfs.client.failover.max.attempts=5")
    assert parts.base == "/a/b" and parts.mkdirs_mode == "native" and parts.port == 8020
    assert parts.config["dfs.client.failover.max.attempts"] == "5"


def test_client_errors_map_to_outcomes_or_backend_errors() -> None:
    from mimesisbench.backends.hdfs import HdfsOpError, classify_hdfs, translate_error

    def outcome(exc: BaseException) -> Outcome:
        translated = translate_error(exc, "hdfs://nn:1")
        assert isinstance(translated, OSError), translated
        return classify_hdfs(translated)

    assert outcome(FileNotFoundError("File does not exist: /x")) is Outcome.NOT_FOUND
    assert outcome(FileExistsError("/x already exists")) is Outcome.EXISTS
    assert outcome(PermissionError("denied")) is Outcome.PERMISSION
    rpc = 'RPCError("org.apache.hadoop.fs.{}", "{}\\n\\tat org.apache.hadoop...")'
    not_dir = RuntimeError(rpc.format("ParentNotDirectoryException", "/f (is not a directory)"))
    assert outcome(not_dir) is Outcome.NOT_FOUND
    not_empty = RuntimeError(rpc.format("PathIsNotEmptyDirectoryException", "`/d is non empty'"))
    assert outcome(not_empty) is Outcome.EXISTS
    acl = 'RPCError("org.apache.hadoop.security.AccessControlException", "Permission denied: user=x")'
    assert outcome(RuntimeError(acl)) is Outcome.PERMISSION
    io_error = RuntimeError('RPCError("java.io.IOException", "Rename destination /a/b is under source /a")')
    io = translate_error(io_error, "u")
    assert isinstance(io, HdfsOpError) and io.java_class == "java.io.IOException"
    assert classify_hdfs(io) is Outcome.OTHER and "Rename destination" in str(io)
    for broken in (
        OSError("Connection refused (os error 111)"),
        ConnectionResetError("reset"),
        RuntimeError("RPC listener disconnected"),
        RuntimeError('RPCError("org.apache.hadoop.ipc.StandbyException", "Operation category READ is not supported")'),
    ):
        assert isinstance(translate_error(broken, "hdfs://nn:1"), BackendError), broken
