"""``run.probes.thread_groups``: a process's threads grouped by name, their CPU and their time
runnable without a core (what ``simnn calibrate`` records of the NameNode's threads), read from
this process's own threads."""

from __future__ import annotations

import os
import re

from mimesisbench.run.probes import thread_groups


def test_a_thread_s_work_shows_in_its_group_s_cpu() -> None:
    before = thread_groups(os.getpid())
    assert before, "this process's threads, grouped"
    total = sum(i * i for i in range(2_000_000))  # a fixed amount of work, on this thread
    after = thread_groups(os.getpid())
    assert total > 0 and after is not None
    name = open(f"/proc/{os.getpid()}/task/{os.getpid()}/comm").read().strip()
    group = re.sub(r"\d+", "#", name)  # digits as '#': python3.11 -> python#.#
    cpu0, runnable0 = before[group]
    cpu1, runnable1 = after[group]
    assert cpu1 > cpu0  # the work took CPU
    assert runnable1 >= runnable0 >= 0.0


def test_a_process_that_is_not_there_has_no_threads() -> None:
    assert thread_groups(2**22 + 12345) is None
