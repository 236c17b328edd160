"""``run.probes.thread_groups``: a process's threads grouped by name, their CPU and their time
runnable without a core (what ``simnn calibrate`` records of the NameNode's threads), read from
this process's own threads."""

from __future__ import annotations

import os
import re
from pathlib import Path

from mimesisbench.run.probes import thread_groups


def _own_cpu_s() -> float:
    """This thread's time on a core so far, as the kernel counts it."""
    return int(Path(f"/proc/self/task/{os.getpid()}/schedstat").read_text().split()[0]) / 1e9


def test_a_thread_s_work_shows_in_its_group_s_cpu() -> None:
    before = _own_cpu_s()
    total = sum(i * i for i in range(2_000_000))  # a fixed amount of work, on this (the main) thread
    after = _own_cpu_s()
    groups = thread_groups(os.getpid())
    assert total > 0 and after > before and groups
    name = Path(f"/proc/self/task/{os.getpid()}/comm").read_text().strip()
    cpu, runnable = groups[re.sub(r"\d+", "#", name)]  # its group: its name, digits as '#'
    # the group holds this thread (and any other of the same name) as read after the work
    assert cpu >= after
    assert runnable >= 0.0


def test_a_process_that_is_not_there_has_no_threads() -> None:
    assert thread_groups(2**22 + 12345) is None
