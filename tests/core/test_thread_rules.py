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


def _module_attrs_loaded(fn: object) -> set[tuple[str, str]]:
    """The ``module.attribute`` pairs *fn*'s code reads (a global that is a module, then an attribute)."""
    import dis
    import types

    code = fn.__code__  # type: ignore[attr-defined]
    g = fn.__globals__  # type: ignore[attr-defined]
    out = set()
    ins = list(dis.get_instructions(code))
    for a, b in zip(ins, ins[1:]):
        if a.opname == "LOAD_GLOBAL" and b.opname == "LOAD_ATTR" and isinstance(g.get(a.argval), types.ModuleType):
            out.add((a.argval, b.argval))
    return out


def test_the_task_hot_path_reads_no_shared_mutable_knob() -> None:
    """Every worker thread runs these per task: a module attribute they read must be a bool or an int.
    Reading a dict (or any object that is not immortal) writes its reference count on a free-threaded
    build, one cache line that two workers then write on every task (strict.FAULTS cost ~5 % CPU per task
    with two threads, measured with benchmarks/bench_workers.py)."""
    from doca_py.emulated import ctx as ectx
    from doca_py.emulated import dma as edma
    from doca_py.emulated import pe as epe

    hot = [ectx.EmuTask.submit, ectx._launch, ectx._launch_local, ectx.complete_task, epe.EmuPe.progress,
           edma.EmuDmaTaskMemcpy._execute]
    seen = set()
    for fn in hot:
        for mod, attr in _module_attrs_loaded(fn):
            value = getattr(fn.__globals__[mod], attr)
            if callable(value):
                continue  # a function called: functions are immortal once a thread started
            seen.add(f"{mod}.{attr}")
            assert type(value) in (bool, int), f"{fn.__qualname__} reads {mod}.{attr}, a {type(value).__name__}"
    assert {"strict.FAULTS_ON", "trace.ON", "strict.STRICT"} <= seen


def test_faults_on_follows_the_configured_faults() -> None:
    from doca_py.emulated import strict

    from doca_py.errors import ErrorCode

    spec = ",".join(f"{k}={r}:{ErrorCode(c).name}" for k, (r, c) in strict.FAULTS.items())
    before = (strict.STRICT, strict.SHUFFLE, spec, strict.SEED)
    try:
        strict.configure(faults="dma_memcpy=0.5", seed=1)
        assert strict.FAULTS_ON and strict.FAULTS
        strict.configure(faults="", seed=1)
        assert not strict.FAULTS_ON and not strict.FAULTS
    finally:
        strict.configure(strict=before[0], shuffle=before[1], faults=before[2], seed=before[3])
