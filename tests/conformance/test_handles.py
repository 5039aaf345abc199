"""Conformance: ``obj.handle`` and ``Cls.from_handle`` (borrowed wrappers never destroy what they wrap)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.types import CtxState

from ..core.helpers import DPU_PCI, local_mmap


@pytest.fixture
def dev(backend: str) -> Iterator[d.Dev]:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev:
        yield dev


def _check_handle(obj: d.Dev | d.Mmap | d.Pe | d.BufInventory | d.Dma, backend: str) -> object:
    h = obj.handle
    if backend == "native":
        assert isinstance(h, int) and h != 0  # the C object's address
    else:
        assert h is obj._h  # the emulated backend object itself
    return h


def test_mmap_from_handle_is_a_borrowed_view(dev: d.Dev, backend: str) -> None:
    with local_mmap(dev) as owner:
        h = _check_handle(owner, backend)
        view = d.Mmap.from_handle(h, user_data="view")
        assert view.borrowed and not owner.borrowed and view.user_data == "view"
        assert view.get_memrange() == owner.get_memrange()
        assert view.handle == h
        view.close()
        assert view.closed
        # The owner's map is still alive: closing (or collecting) the view did not destroy it.
        assert owner.get_memrange()[1] > 0
        again = d.Mmap.from_handle(h)
        del again
        gc.collect()
        assert owner.get_memrange()[1] > 0
    assert owner.closed


def test_pe_and_inventory_from_handle(dev: d.Dev, backend: str) -> None:
    with d.Pe() as pe, d.BufInventory(8) as inv:
        pv = d.Pe.from_handle(_check_handle(pe, backend))
        iv = d.BufInventory.from_handle(_check_handle(inv, backend))
        assert pv.borrowed and iv.borrowed
        assert pv.progress() is False
        assert iv.get_num_elements() == inv.get_num_elements() == 8
        pv.close()
        iv.close()
        assert pe.progress() is False  # the owner's engine still runs
        with local_mmap(dev) as mm:
            base, _ = mm.get_memrange()
            buf = inv.buf_get_by_addr(mm, base, 16)  # the owner's inventory still hands out buffers
            assert buf.get_len() == 16
            buf.close()


def test_dev_from_handle_does_not_close_the_device(dev: d.Dev, backend: str) -> None:
    view = d.Dev.from_handle(_check_handle(dev, backend))
    assert view.borrowed
    assert view.as_devinfo().get_pci_addr_str() == dev.as_devinfo().get_pci_addr_str()
    info = dev.as_devinfo()
    assert info.handle == (info._h.ptr if backend == "native" else info._h)  # type: ignore[attr-defined]
    view.close()
    with local_mmap(dev) as mm:  # the owner's device still serves new maps
        assert mm.get_memrange()[1] > 0


def test_ctx_from_handle_shares_the_context(dev: d.Dev, backend: str) -> None:
    with d.Pe() as pe:
        dma = d.Dma(dev)
        pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(lambda *a: None, lambda *a: None, 4)
        view = d.Dma.from_handle(dev, _check_handle(dma, backend), user_data="view")
        assert view.borrowed and view.user_data == "view"
        assert view.get_state() is CtxState.IDLE
        dma.start()
        assert view.get_state() is CtxState.RUNNING  # one DOCA ctx, two wrappers
        with d.BufInventory(2) as inv, local_mmap(dev) as mm:
            base, _ = mm.get_memrange()
            task = dma.task_memcpy_alloc_init(inv.buf_get_by_addr(mm, base, 8), inv.buf_get_by_addr(mm, base + 8, 8))
            th = task.handle
            assert (isinstance(th, int) and th != 0) if backend == "native" else th is task._h
            task.free()
        view.close()
        assert dma.get_state() is CtxState.RUNNING  # closing the view neither stopped nor destroyed it
        dma.stop(wait=5.0)
        dma.close()


def test_int_handles_are_native_addresses(dev: d.Dev, backend: str) -> None:
    if backend == "native":
        with pytest.raises(e.DocaInvalidValue):
            d.Mmap.from_handle(0)  # NULL
    else:
        with pytest.raises(e.DocaUsageError, match="native"):
            d.Mmap.from_handle(1234)
