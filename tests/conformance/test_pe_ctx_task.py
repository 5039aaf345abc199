"""Conformance: doca_pe, doca_ctx state machine and doca_task pools (Dma as the vehicle)."""

from __future__ import annotations

import os
import select
import threading

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.types import CtxState as S

from ..core.helpers import in_flight_misuse_error, local_mmap, rig


def _pair(r, size: int = 64) -> tuple[d.Mmap, d.Buf, d.Buf]:  # type: ignore[no-untyped-def]
    mm = local_mmap(r.dev, 1 << 16)
    base, _ = mm.get_memrange()
    mm.buffer[:size] = os.urandom(size)
    return mm, r.inv.buf_get_by_data(mm, base, size), r.inv.buf_get_by_addr(mm, base + 4096, 4096)


def test_round_trip_runs_callback_inside_progress(backend: str) -> None:
    with rig(user_data={"ctx": 1}) as r:
        mm, src, dst = _pair(r)
        task = r.dma.task_memcpy_alloc_init(src, dst, user_data=("u", 7))
        assert not r.pe.progress()
        task.submit()
        assert r.dma.get_num_inflight_tasks() == 1 and r.pe.get_num_inflight_tasks() == 1
        assert r.done == []  # nothing runs outside progress
        r.drain(1)
        kind, t, ud, cud = r.done[0]
        assert (kind, t, ud, cud) == ("ok", task, ("u", 7), {"ctx": 1})
        assert task.get_status() == d.ErrorCode.SUCCESS and task.exception() is None
        assert bytes(dst.data_view()) == bytes(mm.buffer[:64])
        assert r.dma.get_num_inflight_tasks() == 0
        # Destinations grow: a second copy lands after the first.
        task.submit()
        r.drain(2)
        assert dst.get_data_len() == 128 and bytes(dst.data_view()) == bytes(mm.buffer[:64]) * 2
        task.free()
        for b in (src, dst):
            b.dec_refcount()
        mm.close()


def test_state_machine_and_callbacks(backend: str) -> None:
    seen: list[tuple[object, S, S]] = []
    with rig(start=False, user_data="cud") as r:
        r.dma.set_state_changed_cb(lambda ud, ctx, prev, nxt: seen.append((ud, prev, nxt)))
        assert r.dma.get_state() == S.IDLE
        mm, src, dst = _pair(r)
        with pytest.raises(e.DocaBadState):
            r.dma.task_memcpy_alloc_init(src, dst)
        assert r.dma.start() == S.RUNNING
        with pytest.raises(e.DocaBadState):
            r.dma.start()
        with pytest.raises(e.DocaBadState):
            r.dma.task_memcpy_set_conf(lambda *a: None, lambda *a: None, 4)  # configure only when idle
        while r.pe.progress():
            pass
        assert seen == [("cud", S.IDLE, S.RUNNING)]
        assert r.dma.stop() == S.IDLE
        r.pe.progress()
        assert seen[-1] == ("cud", S.RUNNING, S.IDLE)
        for b in (src, dst):
            b.dec_refcount()
        mm.close()


def test_stop_flushes_in_flight_tasks_then_idles_after_free(backend: str) -> None:
    with rig(num_tasks=4) as r:
        mm, src, dst = _pair(r, 16)
        tasks = [r.dma.task_memcpy_alloc_init(src, dst, user_data=i) for i in range(3)]
        for t in tasks:
            t.submit()
        assert r.dma.stop() == S.STOPPING
        with pytest.raises(e.DocaBadState):
            tasks[0].submit()
        r.drain(3)
        assert [k for k, *_ in r.done] == ["err"] * 3
        assert all(t.get_status() != d.ErrorCode.SUCCESS for t in tasks)
        assert r.dma.get_num_inflight_tasks() == 0
        assert r.dma.get_state() == S.STOPPING  # tasks not freed yet
        for t in tasks:
            t.free()
        while r.dma.get_state() != S.IDLE:
            assert r.pe.progress()
        for b in (src, dst):
            b.dec_refcount()
        mm.close()


def test_pool_exhaustion_and_task_misuse(backend: str) -> None:
    with rig(num_tasks=2) as r:
        mm, src, dst = _pair(r)
        a = r.dma.task_memcpy_alloc_init(src, dst)
        b = r.dma.task_memcpy_alloc_init(src, dst)
        with pytest.raises(e.DocaNoMemory):
            r.dma.task_memcpy_alloc_init(src, dst)
        a.submit()
        with pytest.raises(in_flight_misuse_error()):
            a.free()  # in flight
        with pytest.raises(in_flight_misuse_error()):
            a.submit()  # again, in flight
        r.drain(1)
        a.free()
        c = r.dma.task_memcpy_alloc_init(src, dst)
        assert c is a  # descriptors (and their Python objects) are recycled
        b.free()
        c.free()
        for buf in (src, dst):
            buf.dec_refcount()
        mm.close()


def test_failed_task_reports_error_and_stops_ctx(backend: str) -> None:
    with rig() as r:
        mm, src, dst = _pair(r, 64)
        small = r.inv.buf_get_by_addr(mm, mm.get_memrange()[0] + 8192, 10)
        before = bytes(mm.buffer[8192:8192 + 4096])
        task = r.dma.task_memcpy_alloc_init(src, small)
        task.submit()
        r.drain(1)
        assert r.done[0][0] == "err" and task.get_status() == d.ErrorCode.INVALID_VALUE
        assert isinstance(task.exception(), e.DocaInvalidValue)
        assert bytes(mm.buffer[8192:8192 + 4096]) == before and small.get_data_len() == 0
        assert r.dma.get_state() == S.STOPPING
        task.free()
        for b in (src, dst, small):
            b.dec_refcount()
        mm.close()


@pytest.mark.doca_versions("3.2")  # the DOCA functions it uses: see test_doca_versions for older ones
def test_tasks_flushed_by_a_failure_say_which_task_stopped_the_ctx(backend: str) -> None:
    """The failed task's error is its own; the tasks behind it, flushed because the failure stopped their
    ctx, say so and name it (ordered completions: the failure is delivered first on every backend)."""
    if backend == "emulated":
        from doca_py.emulated import version

        if not version.at_least(3, 2):
            pytest.skip("ordered DMA completions exist from DOCA 3.2")
    with rig(num_tasks=4, start=False) as r:
        r.dma.set_ordered_completions(True)
        r.dma.start()
        mm, src, dst = _pair(r, 64)
        small = r.inv.buf_get_by_addr(mm, mm.get_memrange()[0] + 8192, 10)
        bad = r.dma.task_memcpy_alloc_init(src, small)
        good = [r.dma.task_memcpy_alloc_init(src, dst) for _ in range(2)]
        for t in (bad, *good):
            t.submit()
        r.drain(3)
        assert [k for k, *_ in r.done] == ["err"] * 3 and r.done[0][1] is bad
        assert bad.flushed_by == "" and str(bad.exception()).startswith(
            "DOCA_ERROR_INVALID_VALUE: Invalid input: DmaTaskMemcpy failed")
        for t in good:
            assert t.flushed_by == "the ctx stopped after DmaTaskMemcpy failed with INVALID_VALUE"
            exc = t.exception()
            assert exc is not None and exc.code == t.get_status()
            assert exc.detail == "DmaTaskMemcpy flushed: the ctx stopped after DmaTaskMemcpy failed with INVALID_VALUE"
        assert dst.get_data_len() == 0
        for t in (bad, *good):
            t.free()
        while r.dma.get_state() != S.IDLE:
            assert r.pe.progress()
        # A stop with tasks in flight: they say they were flushed by it; a new run starts clean.
        r.dma.start()
        t = r.dma.task_memcpy_alloc_init(src, dst)
        t.submit()
        assert r.dma.stop() == S.STOPPING
        r.drain(4)
        assert t.flushed_by == "its ctx was stopped (stop()) while it was in flight"
        assert "DmaTaskMemcpy flushed: its ctx was stopped (stop())" in str(t.exception())
        t.free()
        while r.dma.get_state() != S.IDLE:
            assert r.pe.progress()
        for b in (src, dst, small):
            b.dec_refcount()
        mm.close()


def test_a_set_conf_error_names_the_method_called(backend: str) -> None:
    with rig() as r:
        with pytest.raises(e.DocaBadState, match=r"Dma\.task_memcpy_set_conf"):
            r.dma.task_memcpy_set_conf(lambda *a: None, lambda *a: None, 4)  # RUNNING: configure while idle
        r.dma.stop()
        with pytest.raises(e.DocaTypeError, match=r"^Dma\.task_memcpy_set_conf: error must be Callable, not int$"):
            r.dma.task_memcpy_set_conf(lambda *a: None, 1, 4)  # type: ignore[arg-type]


def test_try_submit_validates_and_the_caller_keeps_the_task(backend: str) -> None:
    with rig() as r:
        mm, src, dst = _pair(r, 64)
        empty = r.inv.buf_get_by_addr(mm, mm.get_memrange()[0], 64)
        task = r.dma.task_memcpy_alloc_init(empty, dst)
        # The emulator explains; the native backend names the DOCA call that refused.
        with pytest.raises(e.DocaInvalidValue, match="no data" if backend == "emulated" else "doca_task_try_submit"):
            task.try_submit()
        assert r.dma.get_num_inflight_tasks() == 0 and not r.pe.progress()
        task.set_src(src)
        task.try_submit()
        r.drain(1)
        assert r.done[0][0] == "ok" and task.get_src() is src
        task.free()
        for b in (src, dst, empty):
            b.dec_refcount()
        mm.close()


def test_read_only_destination_is_refused(backend: str) -> None:
    with rig() as r:
        ro = local_mmap(r.dev, perms=d.AccessFlag.LOCAL_READ_ONLY)
        mm, src, _dst = _pair(r)
        dst = r.inv.buf_get_by_addr(ro, ro.get_memrange()[0], 4096)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        task.submit()
        r.drain(1)
        assert task.get_status() == d.ErrorCode.NOT_PERMITTED
        assert bytes(ro.buffer) == bytes(len(ro.buffer))
        task.free()
        for b in (src, _dst, dst):
            b.dec_refcount()
        mm.close()
        ro.close()


def test_callback_exception_propagates_and_keeps_the_rest(backend: str) -> None:
    with d.Dev.open_by_pci_addr("03:00.0") as dev, d.Pe() as pe, d.BufInventory(8) as inv:
        dma = d.Dma(dev)
        pe.connect_ctx(dma)
        calls: list[int] = []

        def boom(t: d.DmaTaskMemcpy, ud: int, _c: object) -> None:
            calls.append(ud)
            if ud == 0:
                raise RuntimeError("callback failed")

        dma.task_memcpy_set_conf(boom, boom, 4)
        dma.start()
        mm = local_mmap(dev)
        base, _ = mm.get_memrange()
        src = inv.buf_get_by_data(mm, base, 8)
        dst = inv.buf_get_by_addr(mm, base + 4096, 4096)
        for i in range(2):
            dma.task_memcpy_alloc_init(src, dst, user_data=i).submit()
        with pytest.raises(RuntimeError):
            pe.progress()
        assert calls[-1] == 0  # the progress call stopped at the failing callback
        while sorted(calls) != [0, 1]:
            assert pe.progress()  # the rest of the batch runs on the next progress
        assert sorted(calls) == [0, 1]

        def reenter(t: d.DmaTaskMemcpy, ud: object, _c: object) -> None:
            pe.progress()

        dma.close()
        dma2 = d.Dma(dev)
        pe.connect_ctx(dma2)
        dma2.task_memcpy_set_conf(reenter, reenter, 1)
        dma2.start()
        dma2.task_memcpy_alloc_init(src, dst).submit()
        with pytest.raises(d.DocaUsageError, match="inside a callback"):
            pe.progress()
        dma2.close()
        for b in (src, dst):
            b.dec_refcount()
        mm.close()


def test_progress_is_single_threaded(backend: str) -> None:
    with d.Pe() as pe:
        pe.progress()
        errors: list[BaseException] = []

        def other() -> None:
            try:
                pe.progress()
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        th = threading.Thread(target=other)
        th.start()
        th.join()
        assert errors and isinstance(errors[0], d.DocaUsageError)


def test_notification_handle_becomes_readable_when_armed(backend: str) -> None:
    with rig() as r:
        mm, src, dst = _pair(r)
        fd = r.pe.get_notification_handle()
        r.pe.request_notification()
        assert select.select([fd], [], [], 0)[0] == []
        task = r.dma.task_memcpy_alloc_init(src, dst)
        task.submit()
        assert select.select([fd], [], [], 5)[0] == [fd]
        r.pe.clear_notification(fd)
        assert select.select([fd], [], [], 0)[0] == []
        assert r.pe.progress()
        # Arming with work already pending signals at once.
        task.submit()
        r.pe.request_notification()
        assert select.select([r.pe], [], [], 5)[0] == [r.pe]
        r.pe.clear_notification()
        r.drain(2)
        task.free()
        for b in (src, dst):
            b.dec_refcount()
        mm.close()


def test_clear_notification_ignores_the_handle(backend: str) -> None:
    """DOCA on Linux does not use ``doca_pe_clear_notification``'s handle: NVIDIA's pe_event sample passes 0."""
    with rig() as r:
        mm, src, dst = _pair(r)
        fd = r.pe.get_notification_handle()
        r.pe.request_notification()
        task = r.dma.task_memcpy_alloc_init(src, dst)
        task.submit()
        assert select.select([fd], [], [], 5)[0] == [fd]
        r.pe.clear_notification(0)
        assert select.select([fd], [], [], 0)[0] == []  # acknowledged all the same
        r.drain(1)
        task.free()
        for b in (src, dst):
            b.dec_refcount()
        mm.close()


def test_lifetimes_parents_close_children(backend: str) -> None:
    dev = d.Dev.open_by_pci_addr("03:00.0")
    pe = d.Pe()
    dma = d.Dma(dev)
    pe.connect_ctx(dma)
    dma.task_memcpy_set_conf(lambda *a: None, lambda *a: None, 2)
    dma.start()
    mm = local_mmap(dev)
    inv = d.BufInventory(4)
    base, _ = mm.get_memrange()
    src = inv.buf_get_by_data(mm, base, 8)
    dst = inv.buf_get_by_addr(mm, base + 4096, 64)
    dma.task_memcpy_alloc_init(src, dst).submit()  # in flight at close
    with pytest.raises(e.DocaInUse):
        pe._h.destroy()  # the raw handle refuses while a ctx is connected
    pe.close()  # stops (flushing), frees and destroys the Dma first
    assert dma.closed
    inv.close()
    dev.close()  # closes the mmap
    assert mm.closed and src.closed
    with pytest.raises(d.DocaUsageError):
        pe.progress()


def test_leaked_top_level_object_warns() -> None:
    import gc

    pe = d.Pe()
    with pytest.warns(ResourceWarning, match="unclosed Pe"):
        del pe
        gc.collect()
