"""The fast lane (issue 34): a task built once and re-submitted with one call, its completion delivered by the
backend straight to the user's callback, ``await task`` still working, and a buffer re-aimed in one call."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import pytest

import doca_py as d
from doca_py import aio
from doca_py import errors as e
from doca_py.types import CtxState as S

from ..core.helpers import in_flight_misuse_error, local_mmap, rig


def _bufs(r, size: int = 64):  # type: ignore[no-untyped-def]
    mm = local_mmap(r.dev, 1 << 16)
    base, _ = mm.get_memrange()
    mm.buffer[:size] = os.urandom(size)
    return mm, r.inv.buf_get_by_data(mm, base, size), r.inv.buf_get_by_addr(mm, base + 4096, 4096)


def _caller_module() -> str:
    """The module of the function that called the callback running this."""
    return str(sys._getframe(2).f_globals.get("__name__"))


def _ctx(dev: d.Dev, pe: d.Pe, user_data: Any, ok: Any, err: Any, num: int = 4) -> d.Dma:
    dma = d.Dma(dev, user_data=user_data)
    pe.connect_ctx(dma)
    dma.task_memcpy_set_conf(ok, err, num)
    dma.start()
    return dma


def _until(pe: d.Pe, done: Any) -> None:
    """Progress until *done()*: ``progress()`` is False while submitted work has no completion yet, as in DOCA."""
    while not done():
        if not pe.progress():
            pe.wait(5.0)


def test_a_task_resubmitted_from_its_callback_with_one_call(backend: str) -> None:
    seen: list[tuple[Any, Any, Any, str]] = []
    with rig() as r:
        mm, src, dst = _bufs(r)
        submits: dict[int, Any] = {}
        rounds = 5

        def ok(task: d.DmaTaskMemcpy, ud: Any, cud: Any) -> None:
            seen.append((task, ud, cud, _caller_module()))
            if len([s for s in seen if s[1] == ud]) < rounds:
                submits[ud]()  # the next IO from the completion: one call, no public frame

        def err(task: d.DmaTaskMemcpy, ud: Any, cud: Any) -> None:
            raise AssertionError(f"task {ud} failed: {task.exception()}")

        dma = _ctx(r.dev, r.pe, {"ctx": "fast"}, ok, err)
        tasks = [dma.task_memcpy_alloc_init(src, dst, user_data=i) for i in range(2)]
        for i, t in enumerate(tasks):
            submits[i] = t.submitter()
            submits[i]()
        _until(r.pe, lambda: len(seen) == 2 * rounds)
        for t in tasks:
            assert [s[:3] for s in seen if s[0] is t] == [(t, t.user_data, {"ctx": "fast"})] * rounds
        # Delivered by the backend itself: no public wrapper between it and the user's function.
        assert {s[3] for s in seen} <= {m for m in sys.modules if m.startswith("doca_py.")} - {"doca_py.ctx"}
        assert dst.get_data_len() == 2 * rounds * 64
        assert bytes(dst.data_view()) == bytes(mm.buffer[:64]) * (2 * rounds)
        # The ctx's user data is read at each completion, as before.
        dma.user_data = "changed"
        submits[0]()
        _until(r.pe, lambda: len(seen) == 2 * rounds + 1)
        assert seen[-1][:3] == (tasks[0], 0, "changed")
        for t in tasks:
            t.free()
        dma.stop()
        dma.close()
        for b in (src, dst):
            b.dec_refcount()
        mm.close()


def test_the_submitter_refuses_what_submit_refuses(backend: str) -> None:
    with rig() as r:
        mm, src, dst = _bufs(r)
        task = r.dma.task_memcpy_alloc_init(src, dst, user_data="t")
        submit = task.submitter()
        submit()
        with pytest.raises(in_flight_misuse_error()):
            submit()  # in flight: DOCA owns it until its callback
        r.drain(1)
        assert r.done[0][:3] == ("ok", task, "t")
        assert r.dma.stop() == S.STOPPING  # an allocated task keeps it stopping
        with pytest.raises(e.DocaBadState):
            submit()  # the ctx is not running
        task.free()
        while r.dma.get_state() != S.IDLE:
            r.pe.progress()
        for b in (src, dst):
            b.dec_refcount()
        mm.close()


def test_flushed_tasks_reach_the_error_callback_with_their_arguments(backend: str) -> None:
    with rig(num_tasks=4, user_data="cud") as r:
        mm, src, dst = _bufs(r, 16)
        tasks = [r.dma.task_memcpy_alloc_init(src, dst, user_data=i) for i in range(3)]
        for t in tasks:
            t.submitter()()
        assert r.dma.stop() == S.STOPPING
        r.drain(3)
        assert sorted((k, ud, cud) for k, _, ud, cud in r.done) == [("err", i, "cud") for i in range(3)]
        assert {id(t) for _, t, _, _ in r.done} == {id(t) for t in tasks}
        for t in tasks:
            t.free()
        while r.dma.get_state() != S.IDLE:
            r.pe.progress()
        for b in (src, dst):
            b.dec_refcount()
        mm.close()


def test_await_works_on_a_fast_lane_task_and_only_that_run_is_routed(backend: str) -> None:
    async def main() -> None:
        with rig() as r:
            async with aio.attach(r.pe):
                mm, src, dst = _bufs(r)
                r.dma.user_data = "c"
                task = r.dma.task_memcpy_alloc_init(src, dst, user_data="a")
                submit = task.submitter()
                submit()
                assert await task is task  # in flight when awaited: this run is routed
                assert r.done[-1][:4] == ("ok", task, "a", "c")  # the callback ran before the await returned
                # The next run is not awaited: delivered straight again, and still counted.
                n = len(r.done)
                submit()
                await aio.attached(r.pe).until(lambda: len(r.done) > n, 10)
                assert r.done[-1][:3] == ("ok", task, "a")
                # A failed awaited task: its error callback runs, then the await raises.
                small = r.inv.buf_get_by_addr(mm, mm.get_memrange()[0] + 8192, 16)
                big = r.inv.buf_get_by_data(mm, mm.get_memrange()[0], 256)
                bad = r.dma.task_memcpy_alloc_init(big, small, user_data="bad")
                bad.submitter()()
                with pytest.raises(e.DocaError):
                    await bad
                assert r.done[-1][:3] == ("err", bad, "bad")
                assert r.dma.get_state() == S.STOPPING  # a failed task stops its ctx, as before
                for t in (task, bad):
                    t.free()
                await r.dma.stopped(timeout=5)
                for b in (src, dst, small, big):
                    b.dec_refcount()
                mm.close()

    asyncio.run(main())


def test_awaiting_routes_the_next_completion_only(backend: str) -> None:
    """After an awaited run the task's completions go straight to the user's callback again."""
    callers: list[str] = []

    async def main() -> None:
        with rig() as r:
            def ok(task: d.DmaTaskMemcpy, ud: Any, cud: Any) -> None:
                callers.append(_caller_module())

            def err(task: d.DmaTaskMemcpy, ud: Any, cud: Any) -> None:
                raise AssertionError("no failure expected")

            dma = _ctx(r.dev, r.pe, None, ok, err)
            async with aio.attach(r.pe):
                mm, src, dst = _bufs(r)
                task = dma.task_memcpy_alloc_init(src, dst)
                submit = task.submitter()
                submit()
                await task
                submit()
                await aio.attached(r.pe).until(lambda: len(callers) == 2, 10)
                task.free()
                dma.stop()
                await dma.stopped(timeout=5)
                dma.close()
                for b in (src, dst):
                    b.dec_refcount()
                mm.close()

    asyncio.run(main())
    assert callers[0] == "doca_py.ctx"  # the awaited run: the route that wakes the coroutine
    assert callers[1] != "doca_py.ctx"  # then the backend's own delivery again


def test_a_buffer_re_aimed_through_its_fast_lane(backend: str) -> None:
    with rig() as r:
        mm, src, dst = _bufs(r, 256)
        base, _ = mm.get_memrange()
        lane = src.fast_lane()
        assert isinstance(lane, d.BufLane)
        lane.set_data(base + 64, 32)
        assert (src.get_data(), src.get_data_len()) == (base + 64, 32)
        # A data region outside the window is refused and changes nothing.
        with pytest.raises(e.DocaInvalidValue):
            lane.set_data(base + 200, 100)
        with pytest.raises(e.DocaInvalidValue):
            lane.set_data(base - 1, 8)
        assert (src.get_data(), src.get_data_len()) == (base + 64, 32)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        submit, out = task.submitter(), dst.fast_lane()
        for k in range(3):  # re-aim the source per IO, write the destination from its start
            lane.set_data(base + 32 * k, 32)
            out.reset_data_len()
            submit()
            r.drain(k + 1)
            assert out.get_data_len() == 32
            assert bytes(dst.data_view()) == bytes(mm.buffer[32 * k:32 * (k + 1)])
        if d.version_info_runtime() >= (3, 0, 0):
            out.set_data_len(8)
            assert dst.get_data_len() == 8
        task.free()
        src.dec_refcount()
        with pytest.raises(e.DocaBadState):
            src.fast_lane()  # the wrapper of a freed buffer refuses, as its methods do
        dst.dec_refcount()
        mm.close()
