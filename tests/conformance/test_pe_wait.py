"""``Pe.wait``: progress or sleep on the notification handle, optionally with extra file descriptors."""

from __future__ import annotations

import os
import threading
import time

import doca_py as d

from ..core.helpers import local_mmap, rig


def test_wait_runs_completions_and_times_out_when_idle(backend: str) -> None:
    with rig() as r:
        mm = local_mmap(r.dev)
        base, _ = mm.get_memrange()
        src, dst = r.inv.buf_get_by_data(mm, base, 64), r.inv.buf_get_by_addr(mm, base + 4096, 4096)
        start = time.monotonic()
        assert r.pe.wait(0.05) is False  # nothing in flight: sleeps the whole timeout
        assert time.monotonic() - start >= 0.04
        task = r.dma.task_memcpy_alloc_init(src, dst)
        task.submit()
        end = time.monotonic() + 5
        while not r.done and time.monotonic() < end:
            r.pe.wait(5.0)
        assert [k for k, *_ in r.done] == ["ok"]
        task.free()
        for b in (src, dst):
            b.dec_refcount()
        mm.close()


def test_wait_with_extra_fds_reports_the_ready_ones(backend: str) -> None:
    wake = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
    other = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
    try:
        with rig() as r:
            # Idle and nothing readable: the timeout ends the sleep, nothing reported.
            start = time.monotonic()
            assert r.pe.wait(0.05, extra_fds=(wake, other)) == []
            assert time.monotonic() - start >= 0.04
            # Another thread writes the eventfd: the sleep ends early and names it.
            threading.Timer(0.05, os.eventfd_write, (wake, 1)).start()
            start = time.monotonic()
            assert r.pe.wait(10.0, extra_fds=(wake, other)) == [wake]
            assert time.monotonic() - start < 5.0
            assert os.eventfd_read(wake) == 1  # left for the caller to drain
            # A completion ends it too: it has run when wait returns, no extra fd is named.
            mm = local_mmap(r.dev)
            base, _ = mm.get_memrange()
            src, dst = r.inv.buf_get_by_data(mm, base, 64), r.inv.buf_get_by_addr(mm, base + 4096, 4096)
            task = r.dma.task_memcpy_alloc_init(src, dst)
            task.submit()
            end = time.monotonic() + 5
            while not r.done and time.monotonic() < end:
                assert r.pe.wait(5.0, extra_fds=[wake]) == []
            assert [k for k, *_ in r.done] == ["ok"]
            task.free()
            for b in (src, dst):
                b.dec_refcount()
            mm.close()
    finally:
        os.close(wake)
        os.close(other)


def test_wait_on_a_pe_without_contexts(backend: str) -> None:
    with d.Pe() as pe:
        fd = os.eventfd(1, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        try:
            assert pe.wait(0, extra_fds=(fd,)) == [fd]
            assert pe.wait(0) is False
        finally:
            os.close(fd)
