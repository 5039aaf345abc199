"""Conformance: ``obj.handle`` and ``Cls.from_handle`` (borrowed wrappers never destroy what they wrap)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py._lifetime import DocaObject
from doca_py.types import CtxState

from ..core.helpers import DPU_PCI, HOST_PCI, local_mmap


@pytest.fixture
def dev(backend: str) -> Iterator[d.Dev]:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev:
        yield dev


def _check_handle(obj: DocaObject, backend: str) -> object:
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


def test_buf_from_handle_takes_no_reference(dev: d.Dev, backend: str) -> None:
    with d.BufInventory(4) as inv, local_mmap(dev) as mm:
        base, _ = mm.get_memrange()
        owner = inv.buf_get_by_data(mm, base + 8, 16)
        h = _check_handle(owner, backend)
        view = d.Buf.from_handle(inv, mm, h)
        assert view.borrowed and view is not owner and view.handle == h and view.mmap is mm
        assert (view.get_head(), view.get_data(), view.get_data_len()) == (base + 8, base + 8, 16)
        view.set_data(view.get_data(), 4)  # one DOCA buffer, two wrappers (set_data_len: DOCA 3.0+)
        assert owner.get_data_len() == 4
        view.close()
        # Closing the view dropped no reference: the owner's buffer is still out of the inventory.
        assert owner.get_refcount() == 1 and inv.get_num_free_elements() == 3
        owner.close()
        assert inv.get_num_free_elements() == 4
        with local_mmap(dev) as other:  # a buffer must lie in the map it is said to point into
            again = inv.buf_get_by_addr(mm, base, 8)
            with pytest.raises(e.DocaInvalidValue, match="outside"):
                d.Buf.from_handle(inv, other, again.handle)
            kept = d.Buf.from_handle(inv, mm, again.handle)
        again.close()
    assert kept.closed  # closed with its inventory and mmap


def test_devinfo_from_handle(dev: d.Dev, backend: str) -> None:
    info = dev.as_devinfo()
    view = d.DevInfo.from_handle(info.handle)
    assert view.handle == info.handle
    assert (view.get_pci_addr_str(), view.get_ibdev_name()) == (info.get_pci_addr_str(), info.get_ibdev_name())


def test_ec_matrix_from_handle_never_destroys_it(dev: d.Dev, backend: str) -> None:
    with d.Ec(dev) as ec:
        coding = ec.matrix_create(d.EcMatrixType.CAUCHY, 4, 2)
        view = d.EcMatrix.from_handle(ec, _check_handle(coding, backend), 4, 2)
        assert view.borrowed and view.handle == coding.handle and (view.k_in, view.r_out) == (4, 2)
        recover = ec.matrix_create_recover(view, [1])  # the view works where the matrix does
        assert (recover.k_in, recover.r_out) == (4, 1)
        view.close()
        again = ec.matrix_create_recover(coding, [0])  # the owner's matrix is still alive
        with pytest.raises(e.DocaInvalidValue):
            d.EcMatrix.from_handle(ec, coding.handle, 0, 2)
        kept = d.EcMatrix.from_handle(ec, coding.handle, 4, 2)
        again.close()
    assert kept.closed and coding.closed  # closed with their Ec


def test_emulated_refuses_int_handles_of_the_new_wrappers(dev: d.Dev, backend: str) -> None:
    if backend == "native":
        with d.BufInventory(1) as inv, local_mmap(dev) as mm, pytest.raises(e.DocaInvalidValue):
            d.Buf.from_handle(inv, mm, 0)  # NULL
        return
    with d.BufInventory(1) as inv, local_mmap(dev) as mm, d.Ec(dev) as ec:
        for call in (lambda: d.Buf.from_handle(inv, mm, 1234), lambda: d.DevInfo.from_handle(1234),
                     lambda: d.EcMatrix.from_handle(ec, 1234, 4, 2)):
            with pytest.raises(e.DocaUsageError, match="native"):
                call()


def test_devinfo_rep_from_handle_opens_under_its_device(dev: d.Dev, backend: str) -> None:
    (info,) = [r for r in dev.rep_create_list() if r.is_equal_pci_addr(HOST_PCI)]
    view = d.DevInfoRep.from_handle(dev, info.handle)
    assert view.handle == info.handle and view.get_pci_addr_str() == info.get_pci_addr_str()
    rep = view.open()
    assert not rep.borrowed
    dev.close()
    assert rep.closed  # opened through the view, it still closes with its device
