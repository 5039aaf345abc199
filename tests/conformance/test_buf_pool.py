"""Conformance: doca_buf_pool (DOCA 3.0 doca_buf_pool.h)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import doca_py as d
from doca_py import errors as e

from ..core.helpers import DPU_PCI, local_mmap


@pytest.fixture
def mm(backend: str) -> Iterator[d.Mmap]:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, local_mmap(dev, size=1 << 14) as mm:
        yield mm


def test_elements_are_fixed_slices_of_the_mmap(mm: d.Mmap) -> None:
    base, _ = mm.get_memrange()
    with d.BufPool(4, 1000, mm) as pool:
        assert (pool.get_num_elements(), pool.get_num_free_elements(), pool.get_element_alignment()) == (4, 4, 1)
        bufs = [pool.buf_alloc() for _ in range(4)]
        assert sorted(b.get_head() for b in bufs) == [base + i * 1000 for i in range(4)]
        assert all(b.get_len() == 1000 and b.get_data() == b.get_head() and b.get_data_len() == 0 for b in bufs)
        assert pool.get_num_free_elements() == 0 and mm.get_num_bufs() == 4
        # A returned element comes back with empty data at its start, whatever its holder did.
        head = bufs[2].get_head()
        bufs[2].set_data(head + 10, 20)
        bufs[2].window_view()[:3] = b"abc"
        assert bufs[2].dec_refcount() == 1
        again = pool.buf_alloc()
        assert (again.get_head(), again.get_data(), again.get_data_len()) == (head, head, 0)
        assert bytes(again.window_view()[:3]) == b"abc"  # the memory is the mmap's, untouched
        for b in (again, *bufs[:2], bufs[3]):
            b.close()
        assert pool.get_num_free_elements() == 4 and mm.get_num_bufs() == 0


def test_empty_pool_is_doca_error_empty(mm: d.Mmap) -> None:
    with d.BufPool(2, 64, mm) as pool:
        a, b = pool.buf_alloc(), pool.buf_alloc()
        with pytest.raises(e.DocaEmpty):
            pool.buf_alloc()
        freed = b.get_head()
        b.close()
        c = pool.buf_alloc()
        assert c.get_head() == freed  # the one element free again
        a.close()
        c.close()


def test_alignment_places_every_element(mm: d.Mmap) -> None:
    base, n = mm.get_memrange()
    with d.BufPool(3, 100, mm, element_alignment=256) as pool:
        assert pool.get_element_alignment() == 256
        bufs = [pool.buf_alloc() for _ in range(3)]
        heads = sorted(b.get_head() for b in bufs)
        first = (base + 255) & ~255
        assert heads == [first, first + 256, first + 512]
        for b in bufs:
            b.close()
    with d.BufPool(3, 100, mm, start=False) as pool:
        for bad in (0, 3, 100):
            with pytest.raises(e.DocaInvalidValue):
                pool.set_element_alignment(bad)
        pool.start()
        with pytest.raises(e.DocaBadState):
            pool.set_element_alignment(64)  # configuration only before start


def test_stopped_pool_allocates_nothing_and_stop_waits_for_buffers(mm: d.Mmap) -> None:
    with d.BufPool(2, 64, mm, start=False) as pool:
        with pytest.raises(e.DocaBadState):
            pool.buf_alloc()  # un-started
        with pytest.raises(e.DocaBadState):
            pool.stop()
        pool.start()
        with pytest.raises(e.DocaBadState):
            pool.start()
        buf = pool.buf_alloc()
        with pytest.raises(e.DocaInUse):
            pool.stop()
        buf.close()
        pool.stop()
        with pytest.raises(e.DocaBadState):
            pool.buf_alloc()  # stopped
        pool.start()
        pool.buf_alloc().close()


def test_elements_must_fit_the_mmap(mm: d.Mmap) -> None:
    _, n = mm.get_memrange()
    with pytest.raises(e.DocaInitialization):
        d.BufPool(n // 64 + 1, 64, mm)
    with d.BufPool(n // 64, 64, mm) as pool:  # exactly the range
        assert pool.get_num_free_elements() == n // 64
    with pytest.raises(e.DocaInitialization):
        d.BufPool(2, n // 2, mm, element_alignment=1 << 20)  # alignment pushes the second element out


def test_bad_creation_arguments(mm: d.Mmap) -> None:
    for num, size in ((0, 64), (4, 0), (-1, 64), (4, -8)):
        with pytest.raises(e.DocaInvalidValue):
            d.BufPool(num, size, mm)
    with d.Mmap() as no_range:
        with pytest.raises(e.DocaInvalidValue):
            d.BufPool(1, 64, no_range)


def test_pool_needs_a_started_mmap(backend: str) -> None:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Mmap() as mm:
        mm.allocate(4096)
        mm.add_dev(dev)
        pool = d.BufPool(2, 64, mm, start=False)
        with pytest.raises(e.DocaBadState):
            pool.start()
        mm.start()
        pool.start()
        pool.close()


def test_destroy_with_buffers_out_is_in_use_and_use_after_close_is_refused(mm: d.Mmap) -> None:
    pool = d.BufPool(2, 64, mm)
    buf = pool.buf_alloc()
    with pytest.raises(e.DocaInUse):
        pool._h.destroy()  # DOCA's own answer; the public close returns the buffers first
    pool.close()  # closes its buffers, then destroys
    assert buf.closed
    for call in (pool.buf_alloc, pool.get_num_elements, pool.get_num_free_elements, pool.start, pool.stop,
                 pool.get_element_alignment, lambda: pool.set_element_alignment(8)):
        with pytest.raises(d.DocaUsageError):
            call()
    assert mm.get_num_bufs() == 0


def test_mmap_closes_after_its_pools(backend: str) -> None:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev:
        mm = local_mmap(dev)
        pool = d.BufPool(2, 64, mm)
        buf = pool.buf_alloc()
        mm.close()  # parents close children first: the buffer, then the pool
        assert buf.closed and pool.closed and mm.closed


def test_pool_buffers_work_in_tasks(mm: d.Mmap, backend: str) -> None:
    dev = mm._devs[0]
    with d.Pe() as pe, d.Dma(dev) as dma, d.BufPool(2, 128, mm) as pool:
        done: list[int] = []
        pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(lambda t, u, c: done.append(1), lambda t, u, c: done.append(0), 4)
        dma.start()
        src, dst = pool.buf_alloc(), pool.buf_alloc()
        src.window_view()[:5] = b"hello"
        src.set_data(src.get_data(), 5)
        task = dma.task_memcpy_alloc_init(src, dst)
        task.submit()
        while not done:
            pe.progress()
        assert done == [1] and bytes(dst.data_view()) == b"hello"
        task.free()
        src.close()
        dst.close()
        dma.stop()


def test_a_freed_buffer_takes_no_reference_and_returns_home_once(mm: d.Mmap) -> None:
    """inc_refcount on a freed buffer is refused (BAD_STATE): a later dec_refcount would return its
    element to the pool a second time and hand it to two holders."""
    with d.BufPool(4, 64, mm) as pool:
        buf = pool.buf_alloc()
        buf.dec_refcount()
        with pytest.raises(e.DocaBadState):
            buf.inc_refcount()
        with pytest.raises(e.DocaBadState):
            buf.dec_refcount()
        assert pool.get_num_free_elements() == 4
        held = [pool.buf_alloc() for _ in range(4)]
        assert len({b.get_head() for b in held}) == 4
        with pytest.raises(e.DocaEmpty):
            pool.buf_alloc()
        for b in held:
            b.close()


def test_a_freed_buffer_is_unusable(mm: d.Mmap) -> None:
    """After the free (dec_refcount to 0, close, or the pool's close) the wrapper maps nothing."""
    with d.BufPool(2, 64, mm) as pool:
        for free in ("dec_refcount", "close"):
            buf = pool.buf_alloc()
            getattr(buf, free)()
            for use in (buf.data_view, buf.window_view, lambda: buf.set_data(buf.get_head(), 1), buf.get_head,
                        buf.reset_data_len, buf.get_refcount):
                with pytest.raises(e.DocaBadState, match="freed"):
                    use()
        held = pool.buf_alloc()
    with pytest.raises(e.DocaBadState, match="freed"):
        held.window_view()


def test_a_stale_wrapper_never_acts_on_the_next_holder(mm: d.Mmap, backend: str) -> None:
    """Strict mode (the suite's default on the emulator) and the native backend: a Buf kept past its free
    stays retired though its element was handed out again."""
    from ..core.helpers import strict_emulator

    if backend == "emulated" and not strict_emulator():
        pytest.skip("outside strict mode a wrapper nothing else holds is reused (the hot path)")
    with d.BufPool(1, 64, mm) as pool:
        stale = pool.buf_alloc()
        stale.dec_refcount()
        fresh = pool.buf_alloc()
        assert fresh is not stale and not fresh.closed and stale.closed
        with pytest.raises(e.DocaBadState, match="freed"):
            stale.set_data(stale.get_head(), 8)
        with pytest.raises(e.DocaBadState):
            stale.dec_refcount()
        assert fresh.get_refcount() == 1 and pool.get_num_free_elements() == 0
        fresh.close()
