"""What makes the emulator safe without the GIL (free-threaded CPython, ``PYTHON_GIL=0``), checked on
any build: the Pe's sleep handshake is decided under its lock, a started map gives each thread its own
root view, and an imported map reads the export records through ctypes views (no mmap export)."""

from __future__ import annotations

import ctypes
import mmap
import os
import select
import threading

import pytest

from doca_py.emulated import mmap as emm
from doca_py.emulated.pe import EmuPe


def _readable(fd: int) -> bool:
    return bool(select.select([fd], [], [], 0)[0])


def _noop(_: object) -> None:
    pass


def test_a_post_from_another_thread_decides_the_wake_up_under_the_pe_lock() -> None:
    pe = EmuPe()
    try:
        pe.request_notification()
        assert pe.armed and not _readable(pe.efd)
        with pe.lock:  # while the Pe decides to sleep, a post waits: it cannot miss the flag
            t = threading.Thread(target=pe.post, args=(_noop, None))
            t.start()
            t.join(0.05)
            assert t.is_alive() and not pe.ready
        t.join()
        assert len(pe.ready) == 1 and not pe.armed and _readable(pe.efd)
    finally:
        pe.destroy()


def test_arming_with_work_queued_wakes_at_once_and_a_batch_wakes_once() -> None:
    pe = EmuPe()
    try:
        pe.post(_noop, None)
        pe.request_notification()
        assert _readable(pe.efd) and not pe.armed
        pe.clear_notification(pe.efd)
        pe.progress()
        pe.request_notification()
        pe.post_items([(_noop, 1), (_noop, 2)])
        assert [a for _f, a in pe.ready] == [1, 2] and not pe.armed
        assert os.eventfd_read(pe.efd) == 1
    finally:
        pe.destroy()


def _started_map(size: int = 4096) -> tuple[emm.EmuMmap, ctypes.Array[ctypes.c_char]]:
    mem = ctypes.create_string_buffer(size)
    m = emm._ThreadViews()
    m.set_memrange(ctypes.addressof(mem), size)
    m.start()
    return m, mem


def test_each_thread_slices_its_own_root_view_of_a_started_map() -> None:
    m, mem = _started_map()
    mine = m.mv
    assert mine is not None and m.mv is mine  # one root per thread, kept
    theirs: list[memoryview | None] = []
    t = threading.Thread(target=lambda: theirs.append(m.mv))
    t.start()
    t.join()
    other = theirs[0]
    assert other is not None and other is not mine
    other[10:13] = b"abc"  # the same bytes
    assert bytes(mine[10:13]) == b"abc" == mem.raw[10:13]
    m.stop()
    assert m.mv is None  # a stopped map has no view in any thread
    m.start()
    fresh = m.mv
    assert fresh is not None and fresh is not mine  # a new start: new roots
    m.stop()
    m.destroy()


@pytest.mark.skipif(not emm.FREE_THREADED, reason="only free-threaded builds give per-thread views")
def test_a_free_threaded_build_makes_maps_with_per_thread_views() -> None:
    assert isinstance(emm.mmap_create(), emm._ThreadViews)


def test_export_records_are_read_through_a_view_that_holds_no_export_of_the_mapping() -> None:
    # An imported map's probes (EmuMmap.ptr, from every worker) read the exporter's records through
    # this view: an mmap object counts its exports without atomics on a free-threaded build.
    fd = os.memfd_create("doca_py-test")
    try:
        os.write(fd, b"record" + bytes(4090))
        m = mmap.mmap(fd, 4096, access=mmap.ACCESS_READ)
        view = emm._readonly_view(m, 4096)
        assert not isinstance(view, mmap.mmap) and view.raw[:6] == b"record"
        assert emm.ex.SLOT_UNPACK(view, 0)  # struct reads it as the mapping
        m.close()  # no export left behind (BufferError otherwise)
    finally:
        os.close(fd)


def test_a_public_mmap_gives_each_thread_its_own_root_view_when_free_threaded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import doca_py as d
    from doca_py import mmap as public_mmap

    monkeypatch.setattr(public_mmap, "_FREE_THREADED", True)
    m = d.Mmap()
    mine = m.allocate(8192)
    assert m.buffer is mine  # one root per thread, kept
    theirs: list[memoryview] = []
    t = threading.Thread(target=lambda: theirs.append(m.buffer))
    t.start()
    t.join()
    assert theirs[0] is not mine and theirs[0].nbytes == 8192
    theirs[0][100:103] = b"xyz"
    assert bytes(m.view(m.get_memrange()[0] + 100, 3)) == b"xyz"
    kept = theirs[0][100:103]
    m.close()  # another thread's view is alive: the memory goes with the last view, not under it
    assert bytes(kept) == b"xyz"
