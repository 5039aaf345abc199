"""asyncio: a Pe driven by an event loop, ``await task``, ``await ctx.started()``; blocking waits."""

from __future__ import annotations

import asyncio
import os

import pytest

import doca_py as d
from doca_py import aio
from doca_py import errors as e
from doca_py.types import CtxState as S

from ..core.helpers import local_mmap, rig


def _bufs(r, size: int = 64):  # type: ignore[no-untyped-def]
    mm = local_mmap(r.dev, 1 << 16)
    base, _ = mm.get_memrange()
    mm.buffer[:size] = os.urandom(size)
    return mm, r.inv.buf_get_by_data(mm, base, size), r.inv.buf_get_by_addr(mm, base + 4096, 4096)


def test_await_task_and_states_on_an_attached_pe(backend: str) -> None:
    async def main() -> None:
        with rig(start=False) as r:
            async with aio.attach(r.pe):
                r.dma.start()
                await r.dma.started(timeout=5)
                mm, src, dst = _bufs(r)
                tasks = [r.dma.task_memcpy_alloc_init(src, dst, user_data=i) for i in range(4)]
                for t in tasks:
                    t.submit()
                done = await asyncio.wait_for(asyncio.gather(*tasks), 10)
                assert done == tasks and len(r.done) == 4  # the set_conf callbacks ran first
                assert bytes(dst.data_view()) == bytes(mm.buffer[:64]) * 4
                for t in tasks:
                    t.free()
                r.dma.stop()
                await r.dma.stopped(timeout=5)
                assert r.dma.get_state() == S.IDLE
                for b in (src, dst):
                    b.dec_refcount()
                mm.close()

    asyncio.run(main())


def test_a_failed_task_raises_its_error_with_the_reason(backend: str) -> None:
    async def main() -> None:
        with rig() as r:
            async with aio.attach(r.pe):
                mm, src, _ = _bufs(r, 256)
                small = r.inv.buf_get_by_addr(mm, mm.get_memrange()[0] + 8192, 16)
                task = r.dma.task_memcpy_alloc_init(src, small)
                task.submit()
                with pytest.raises(e.DocaInvalidValue) as info:
                    await task
                if d.impl == "emulated":
                    assert "destination" in str(info.value)
                task.free()
                for b in (src, small):
                    b.dec_refcount()
                mm.close()

    asyncio.run(main())


def test_until_times_out_and_awaiting_needs_an_attached_pe(backend: str) -> None:
    async def main() -> None:
        with rig() as r:
            mm, src, dst = _bufs(r)
            task = r.dma.task_memcpy_alloc_init(src, dst)
            task.submit()
            with pytest.raises(d.DocaUsageError, match="aio.attach"):
                await task
            async with aio.attach(r.pe) as runner:
                assert await task is task
                with pytest.raises(TimeoutError):
                    await runner.until(lambda: False, timeout=0.05)
            task.free()
            for b in (src, dst):
                b.dec_refcount()
            mm.close()

    asyncio.run(main())


def test_blocking_start_and_stop_wait_for_the_state(backend: str) -> None:
    with rig(start=False) as r:
        assert r.dma.start(wait=5) == S.RUNNING
        mm, src, dst = _bufs(r)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        task.submit()
        with pytest.raises(e.DocaTimeout):
            r.dma.stop(wait=0.2)  # the flushed task is still allocated: stays STOPPING
        task.free()
        while r.dma.get_state() != S.IDLE:  # IDLE on a later progress, once freed
            r.pe.wait(0.1)
        for b in (src, dst):
            b.dec_refcount()
        mm.close()


def test_start_wait_progresses_an_asynchronous_ctx_to_running(backend: str) -> None:
    # RDMA (3.x) starts asynchronously: start() returns STARTING and only progress() makes it
    # RUNNING, so start(wait=...) is what drives it there.
    if d.version_info_runtime()[:2] < (3, 0):  # the backend's DOCA: the emulator's rules or the library's
        pytest.skip("DOCA 2.6 keeps an unconnected rdma ctx STARTING")
    with d.Dev.open_by_pci_addr("03:00.0") as dev, d.Pe() as pe:
        rdma = d.Rdma(dev)
        pe.connect_ctx(rdma)
        rdma.set_permissions(d.AccessFlag.LOCAL_READ_WRITE)
        rdma.task_send_set_conf(lambda *a: None, lambda *a: None, 1)
        assert rdma.start(wait=5.0) == S.RUNNING
        assert rdma.stop(wait=5.0) == S.IDLE
        rdma.close()


def test_awaiting_a_task_that_was_not_submitted_raises(backend: str) -> None:
    """``await task`` before ``submit()`` (or after a refused one) has no completion to report: DocaBadState,
    in strict mode too, never the SUCCESS of a copy that did not happen."""
    async def main() -> None:
        with rig() as r:
            async with aio.attach(r.pe):
                mm, src, dst = _bufs(r)
                task = r.dma.task_memcpy_alloc_init(src, dst)
                with pytest.raises(e.DocaBadState, match="not submitted since its allocation"):
                    await task
                assert dst.get_data_len() == 0
                task.submit()
                assert await task is task and dst.get_data_len() == 64
                assert await task is task  # a completed run can be awaited again
                r.dma.stop()  # the task is still allocated: STOPPING, and a submit is refused
                with pytest.raises(e.DocaBadState):
                    task.submit()
                with pytest.raises(e.DocaBadState, match="last submit was refused"):
                    await task  # not the previous run's SUCCESS
                task.free()
                await r.dma.stopped(timeout=5)
                for b in (src, dst):
                    b.dec_refcount()
                mm.close()

    asyncio.run(main())


def test_waits_time_out_naming_the_ctx_its_state_and_the_rule(backend: str) -> None:
    async def main() -> None:
        with rig() as r:
            async with aio.attach(r.pe) as runner:
                mm, src, dst = _bufs(r)
                task = r.dma.task_memcpy_alloc_init(src, dst)
                r.dma.stop()
                with pytest.raises(e.DocaTimeout, match=r"^DOCA_ERROR_TIME_OUT: .*: Dma did not reach IDLE within 0.1 s: "
                                   r"it is STOPPING; .* every task has completed and been freed \(0 in flight, "
                                   r"1 allocated"):
                    await r.dma.stopped(timeout=0.1)
                with pytest.raises(TimeoutError, match="aio.until: the peer's answer was not true within 0.05 s"):
                    await runner.until(lambda: False, timeout=0.05, what="the peer's answer")
                task.free()
                await r.dma.stopped(timeout=5)
                for b in (src, dst):
                    b.dec_refcount()
                mm.close()

    asyncio.run(main())


def test_a_2_6_rdma_start_times_out_naming_the_connect_rule(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """DOCA 2.6 moves an Rdma ctx to RUNNING only after connect: the time-out says so."""
    if backend != "emulated":
        pytest.skip("the emulator's 2.6 mode (the fake libraries present one version)")
    from doca_py.emulated import version

    monkeypatch.setattr(version, "VERSION", (2, 6))

    async def main() -> None:
        with d.Dev.open_by_pci_addr("03:00.0") as dev, d.Pe() as pe:
            rdma = d.Rdma(dev)
            pe.connect_ctx(rdma)
            rdma.set_permissions(d.AccessFlag.LOCAL_READ_WRITE)
            rdma.task_send_set_conf(lambda *a: None, lambda *a: None, 1)
            async with aio.attach(pe):
                rdma.start()
                with pytest.raises(e.DocaTimeout, match=r"Rdma did not reach RUNNING within 0.2 s: it is STARTING; "
                                                        r"DOCA 2.6 moves an Rdma ctx to RUNNING only once connect\(\)"):
                    await rdma.started(timeout=0.2)
                rdma.stop()
                await rdma.stopped(timeout=5)
            rdma.close()

    asyncio.run(main())
