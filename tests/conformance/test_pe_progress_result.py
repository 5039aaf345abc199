"""Conformance: what ``doca_pe_progress`` returns.

DOCA (``doca_pe.h``): 1 "if progress was made" — a task completed, an unsolicited event was handled, a
ctx changed state — and 0 otherwise. The start of a submitted task's work is not progress: the DOCA
samples wait for a completion with ``while (doca_pe_progress(pe) == 0) nanosleep(...)``
(``sync_event_async_task_submit`` in ``samples/doca_common/common_common.c``), which must not return
while the task is still waiting.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

import doca_py as d

from ..core.helpers import DPU_PCI, local_mmap, rig
from .test_sync_event import _needs_eq_waits

TIMEOUT = 10.0


@pytest.fixture
def dev(backend: str) -> Iterator[d.Dev]:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev:
        yield dev


def test_a_waiting_task_is_no_progress_until_it_completes(dev: d.Dev, backend: str) -> None:
    _needs_eq_waits(backend)
    done: list[str] = []
    with d.Pe() as pe:
        se = d.SyncEvent()
        se.add_publisher_location_cpu(dev)
        se.add_subscriber_location_cpu(dev)
        ctx = se.as_ctx()
        pe.connect_ctx(ctx)

        def record(kind: str) -> Any:
            return lambda task, task_user_data, ctx_user_data: done.append(kind)

        ctx.task_wait_eq_set_conf(record("waited"), record("error"), 1)
        ctx.start()
        task = ctx.task_wait_eq_alloc_init(5)
        task.submit()
        # The task starts waiting (its launch) and nothing completes: no progress, however often asked.
        assert [pe.progress() for _ in range(3)] == [False, False, False]
        assert done == [] and ctx.get_num_inflight_tasks() == 1
        se.update_set(5)
        deadline = time.monotonic() + TIMEOUT
        while not pe.progress():  # the samples' loop: it ends with the completion
            assert time.monotonic() < deadline, "the wait task never completed"
            time.sleep(0.001)
        assert done == ["waited"]
        task.free()
        assert ctx.stop() is d.CtxState.IDLE
        se.close()


def test_a_task_that_completes_at_once_is_progress(backend: str) -> None:
    """An engine task done inside the progress call that started it: that call reports progress."""
    with rig() as r:
        mm = local_mmap(r.dev, 1 << 12)
        base, _ = mm.get_memrange()
        src = r.inv.buf_get_by_data(mm, base, 64)
        dst = r.inv.buf_get_by_addr(mm, base + 2048, 64)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        assert not r.pe.progress()  # nothing submitted
        task.submit()
        deadline = time.monotonic() + TIMEOUT
        while not r.pe.progress():
            assert time.monotonic() < deadline, "the copy never completed"
        assert len(r.done) == 1  # the call that returned True ran the completion
        assert not r.pe.progress()
        task.free()
        src.dec_refcount()
        dst.dec_refcount()
        mm.close()
