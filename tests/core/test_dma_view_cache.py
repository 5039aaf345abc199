"""The emulated DMA memcpy's hot path: views cached on the bufs and the task between copies.

A task resubmitted with the same bufs copies through views built by an earlier copy. Whatever
DOCA lets change between runs (the buffers' data and windows, lists, the maps' state, devices
and permissions) must still be seen: these resubmit a task after each such change.
"""

from __future__ import annotations

import os

import pytest

import doca_py as d

from .helpers import Rig, local_mmap, rig

pytestmark = pytest.mark.skipif(d.impl != "emulated", reason="the emulated DMA engine's caches")


@pytest.fixture(autouse=True)
def _doca_32(monkeypatch: pytest.MonkeyPatch) -> None:
    """The caches are the same under every DOCA version; these tests move buffers with 3.x functions
    (``set_data_len``, ``reuse_by_*``, mmap thread safety), so the emulator presents 3.2 whatever the session's."""
    from doca_py.emulated import version

    monkeypatch.setattr(version, "VERSION", (3, 2))


def _run(r: Rig, task: d.DmaTaskMemcpy) -> tuple[str, int]:
    """Submit *task* and wait for its completion: ("ok" | "err", status)."""
    n = len(r.done)
    task.submit()
    r.drain(n + 1)
    kind, t, _u, _c = r.done[-1]
    assert t is task
    return kind, t.get_status()


def _map(r: Rig, thread_safe: bool = False) -> tuple[d.Mmap, int]:
    mm = d.Mmap()
    mm.allocate(1 << 16)
    mm.add_dev(r.dev)
    if thread_safe:
        mm.enable_thread_safety()
    mm.start()
    mm.buffer[:] = os.urandom(1 << 16)
    return mm, mm.get_memrange()[0]


def test_resubmits_append_until_the_destination_is_full() -> None:
    with rig() as r:
        mm, base = _map(r)
        src = r.inv.buf_get_by_data(mm, base, 64)
        dst = r.inv.buf_get_by_addr(mm, base + 4096, 200)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        for i in range(3):
            assert _run(r, task) == ("ok", 0)
            assert dst.get_data_len() == 64 * (i + 1)
        assert bytes(mm.buffer[4096:4096 + 192]) == bytes(mm.buffer[0:64]) * 3
        before = bytes(mm.buffer[4096 + 192:4096 + 256])
        assert _run(r, task) == ("err", int(d.ErrorCode.INVALID_VALUE))  # 8 bytes of room left
        assert dst.get_data_len() == 192
        assert bytes(mm.buffer[4096 + 192:4096 + 256]) == before  # nothing written past the window
        task.free()


@pytest.mark.parametrize("change", ["set_data", "set_data_len", "reuse_by_data", "write_by_another_engine"])
def test_a_changed_source_is_copied_as_it_is_now(change: str) -> None:
    with rig() as r:
        mm, base = _map(r)
        src = r.inv.buf_get_by_addr(mm, base, 4096)  # a window with room to move the data in
        src.set_data(base, 64)
        dst = r.inv.buf_get_by_addr(mm, base + 8192, 4096)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        assert _run(r, task) == ("ok", 0)
        dst.reset_data_len()
        if change == "set_data":
            src.set_data(base + 1000, 64)
            want = bytes(mm.buffer[1000:1064])
        elif change == "set_data_len":
            src.set_data_len(32)
            want = bytes(mm.buffer[0:32])
        elif change == "reuse_by_data":
            src.reuse_by_data(base + 2000, 100)
            want = bytes(mm.buffer[2000:2100])
        else:  # the source grows as a destination of another copy
            other = r.inv.buf_get_by_data(mm, base + 3000, 16)
            grow = r.dma.task_memcpy_alloc_init(other, src)
            assert _run(r, grow) == ("ok", 0)
            want = bytes(mm.buffer[0:80])
            grow.free()
        assert _run(r, task) == ("ok", 0)
        assert bytes(mm.buffer[8192:8192 + len(want)]) == want
        assert dst.get_data_len() == len(want)
        task.free()


def test_a_re_aimed_destination_is_written_and_room_checked_where_it_is_now() -> None:
    with rig() as r:
        mm, base = _map(r)
        src = r.inv.buf_get_by_data(mm, base, 64)
        dst = r.inv.buf_get_by_addr(mm, base + 4096, 4096)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        assert _run(r, task) == ("ok", 0)
        dst.reuse_by_addr(base + 12288, 100)
        assert _run(r, task) == ("ok", 0)
        assert bytes(mm.buffer[12288:12352]) == bytes(mm.buffer[0:64])
        dst.set_data(base + 12288 + 50, 0)  # 50 bytes of room left in the window
        assert _run(r, task) == ("err", int(d.ErrorCode.INVALID_VALUE))
        task.free()


def test_a_destination_chained_between_runs_is_refused() -> None:
    with rig() as r:
        mm, base = _map(r)
        src = r.inv.buf_get_by_data(mm, base, 64)
        dst = r.inv.buf_get_by_addr(mm, base + 4096, 4096)
        extra = r.inv.buf_get_by_addr(mm, base + 8192, 4096)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        assert _run(r, task) == ("ok", 0)
        dst.chain_list(extra)
        assert _run(r, task) == ("err", int(d.ErrorCode.INVALID_VALUE))
        assert dst.get_data_len() == 64
        task.free()


def test_a_stopped_map_is_refused_and_a_restarted_one_is_checked_again() -> None:
    # A thread-safe map may stop with bufs alive; a copy must then fail, not go through the old views.
    with rig() as r:
        mm, base = _map(r, thread_safe=True)
        src = r.inv.buf_get_by_data(mm, base, 64)
        dst = r.inv.buf_get_by_addr(mm, base + 4096, 4096)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        assert _run(r, task) == ("ok", 0)
        mm.stop()
        assert _run(r, task) == ("err", int(d.ErrorCode.BAD_STATE))
        assert dst.get_data_len() == 64
        task.free()
    with rig() as r:  # restarted read-only: not writable any more
        mm, base = _map(r, thread_safe=True)
        src = r.inv.buf_get_by_data(mm, base, 64)
        dst = r.inv.buf_get_by_addr(mm, base + 4096, 4096)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        assert _run(r, task) == ("ok", 0)
        mm.stop()
        mm.set_permissions(d.AccessFlag.LOCAL_READ_ONLY)
        mm.start()
        assert _run(r, task) == ("err", int(d.ErrorCode.NOT_PERMITTED))
        assert dst.get_data_len() == 64
        task.free()
    with rig() as r:  # restarted without the DMA's device: unreachable
        mm, base = _map(r, thread_safe=True)
        src = r.inv.buf_get_by_data(mm, base, 64)
        dst = r.inv.buf_get_by_addr(mm, base + 4096, 4096)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        assert _run(r, task) == ("ok", 0)
        mm.stop()
        mm.rm_dev(r.dev)
        mm.start()
        assert _run(r, task) == ("err", int(d.ErrorCode.NOT_PERMITTED))
        task.free()


def test_a_restarted_map_is_copied_through_again() -> None:
    with rig() as r:
        mm, base = _map(r, thread_safe=True)
        src = r.inv.buf_get_by_data(mm, base, 64)
        dst = r.inv.buf_get_by_addr(mm, base + 4096, 4096)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        assert _run(r, task) == ("ok", 0)
        mm.stop()
        mm.start()
        mm.buffer[0:64] = os.urandom(64)
        assert _run(r, task) == ("ok", 0)
        assert bytes(mm.buffer[4096 + 64:4096 + 128]) == bytes(mm.buffer[0:64])
        task.free()


def test_bufs_returned_to_their_inventory_leave_no_views_behind() -> None:
    from doca_py.emulated.mmap import EmuMmap

    with rig() as r:
        mm, base = _map(r)
        h = mm._h
        assert isinstance(h, EmuMmap)
        src = r.inv.buf_get_by_data(mm, base, 64)
        dst = r.inv.buf_get_by_addr(mm, base + 4096, 4096)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        assert _run(r, task) == ("ok", 0)
        assert len(h.viewers) == 2
        task.free()
        src.dec_refcount()
        dst.dec_refcount()
        assert not h.viewers  # the map holds no buf (nor its inventory) once they are returned
