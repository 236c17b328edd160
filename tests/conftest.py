"""Shared test configuration."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

# Property tests must give the same verdict on any machine, loaded or not: no per-example deadline,
# no health check that times the machine, the same examples on every run (derandomize), and no
# example database carried from one run to the next.
settings.register_profile(
    "mimesisbench",
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile("mimesisbench")


@pytest.fixture(autouse=True)
def ctrl_c_raises_keyboard_interrupt() -> Iterator[None]:
    """Python's own SIGINT handler for every test, as a user's terminal gives it.

    A shell that starts the suite as a background job without job control (``cmd &`` in a script)
    makes it ignore SIGINT, and Python then installs no handler: a simulated Ctrl-C
    (``_thread.interrupt_main``) would do nothing and the tests of interrupted runs would see
    complete ones. Worker processes inherit the default disposition instead of the ignored one."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
YAHOO_ZIP = SHARED / "data" / "mimesisbench-yahoo-2011" / "nnmetadata.properties.zip"
SANDBOX_AUDIT_LOG = SHARED / "data" / "traces" / "spark-hive-sandbox-audit.log"


@pytest.fixture(scope="session")
def yahoo_zip() -> Path:
    """The real 2014 Yahoo profile (read from ../shared, never copied into the repository)."""
    if not YAHOO_ZIP.is_file():
        pytest.fail(f"the Yahoo profile is expected at {YAHOO_ZIP} (../shared beside the checkout)")
    return YAHOO_ZIP


@pytest.fixture(scope="session")
def sandbox_audit_log() -> Path:
    """A real NameNode audit log (Spark/Hive sandbox; read from ../shared, never copied)."""
    if not SANDBOX_AUDIT_LOG.is_file():
        pytest.fail(f"the real audit log is expected at {SANDBOX_AUDIT_LOG} (../shared beside the checkout)")
    return SANDBOX_AUDIT_LOG
