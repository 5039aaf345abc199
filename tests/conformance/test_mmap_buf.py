"""Conformance: doca_mmap, doca_buf and doca_buf_inventory."""

from __future__ import annotations

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.types import AccessFlag as A

from ..core.helpers import DPU_PCI, local_mmap


@pytest.fixture
def dev(backend: str) -> d.Dev:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev:
        yield dev  # type: ignore[misc]


def test_memrange_over_any_writable_buffer(dev: d.Dev) -> None:
    data = bytearray(b"x" * 100)
    with local_mmap(dev, allocate=False) as mm:
        mm.close()
    mm = d.Mmap()
    mm.set_memrange(data)
    with pytest.raises(BufferError):
        data.extend(b"y")  # pinned while registered
    mm.add_dev(dev)
    mm.start()
    base, n = mm.get_memrange()
    assert n == 100 and bytes(mm.view(base + 10, 3)) == b"xxx"
    mm.close()
    data.extend(b"y")  # released by close


def test_read_only_and_empty_buffers_are_refused(dev: d.Dev) -> None:
    with d.Mmap() as mm:
        with pytest.raises(e.DocaInvalidValue, match="read-only"):
            mm.set_memrange(b"immutable")
        with pytest.raises(e.DocaInvalidValue):
            mm.set_memrange(bytearray())


@pytest.mark.doca_versions("3.0", "3.2")  # the DOCA functions it uses: see test_doca_versions for older ones
def test_configuration_only_before_start(dev: d.Dev) -> None:
    # DOCA 3.0 doca_mmap.h: memrange/permissions on a started map are BAD_STATE, the
    # device and thread-safety settings NOT_PERMITTED.
    with local_mmap(dev) as mm:
        for call in (lambda: mm.set_permissions(A.LOCAL_READ_WRITE), mm.start):
            with pytest.raises(e.DocaBadState):
                call()
        for call in (lambda: mm.add_dev(dev), lambda: mm.rm_dev(dev), mm.enable_thread_safety,
                     lambda: mm.set_max_num_devices(4)):
            with pytest.raises(e.DocaNotPermitted):
                call()
    with d.Mmap() as mm:
        with pytest.raises(e.DocaBadState):
            mm.start()  # no range yet
        with pytest.raises(e.DocaBadState):
            mm.get_memrange()  # no range yet


def test_mmap_setup_error_codes_follow_doca(dev: d.Dev, backend: str) -> None:
    with d.Mmap() as mm:
        mm.allocate(4096)
        # The emulator explains; the native backend names the DOCA call that refused.
        with pytest.raises(e.DocaNotPermitted, match="only once" if backend == "emulated" else "doca_mmap_set_memrange"):
            mm.allocate(4096)  # a second set_memrange
        mm.set_permissions(A.LOCAL_READ_WRITE | A.PCI_READ_WRITE)
        mm.set_max_num_devices(1)
        mm.add_dev(dev)
        with pytest.raises(e.DocaAlreadyExist):
            mm.add_dev(dev)
        with d.Dev.open_by_pci_addr("3b:00.0") as other:
            with pytest.raises(e.DocaNoMemory):
                mm.add_dev(other)  # beyond max_num_devices
        with pytest.raises(e.DocaNotPermitted):
            mm.export_pci(dev)  # not started
        mm.start()
        assert mm.export_pci(dev)


def test_export_needs_permission_device_and_start(dev: d.Dev) -> None:
    with local_mmap(dev) as mm:
        with pytest.raises(e.DocaNotPermitted):
            mm.export_pci(dev)
        with pytest.raises(e.DocaNotPermitted):
            mm.export_rdma(dev)
    with d.Dev.open_by_pci_addr("3b:00.0") as other, local_mmap(dev, perms=A.PCI_READ_WRITE) as mm:
        with pytest.raises(e.DocaNotFound):
            mm.export_pci(other)
        assert not mm.get_exported()
        blob = mm.export_pci(dev)
        assert mm.get_exported() and blob == mm.export_pci(dev)


@pytest.mark.doca_versions("3.2")  # the DOCA functions it uses: see test_doca_versions for older ones
def test_buffer_geometry_and_data_rules(dev: d.Dev) -> None:
    with local_mmap(dev, 8192) as mm, d.BufInventory(4) as inv:
        base, _ = mm.get_memrange()
        mm.buffer[:4] = b"abcd"
        src = inv.buf_get_by_data(mm, base, 4)
        assert (src.get_head(), src.get_len(), src.get_data(), src.get_data_len()) == (base, 4, base, 4)
        assert bytes(src.data_view()) == b"abcd"
        dst = inv.buf_get_by_addr(mm, base + 4096, 100)
        assert dst.get_data_len() == 0 and dst.get_data() == base + 4096
        dst.set_data(base + 4100, 10)
        assert dst.get_data_len() == 10
        with pytest.raises(e.DocaInvalidValue):
            dst.set_data(base + 4190, 20)  # leaves the window
        with pytest.raises(e.DocaInvalidValue):
            inv.buf_get_by_addr(mm, base + 8000, 500)  # leaves the mmap
        with pytest.raises(e.DocaInvalidValue):
            inv.buf_get_by_args(mm, base, 10, base + 5, 10)  # data leaves the window
        dst.reset_data_len()
        assert dst.get_data_len() == 0
        dst.reuse_by_data(base + 1, 2)
        assert bytes(dst.data_view()) == b"bc"
        assert mm.get_num_bufs() == 2
        assert inv.get_num_free_elements() == 2
        with pytest.raises(e.DocaNotPermitted):
            mm.stop()  # bufs still point into it
        src.dec_refcount()
        dst.dec_refcount()
        assert inv.get_num_free_elements() == 4 and mm.get_num_bufs() == 0


@pytest.mark.doca_versions("3.0", "3.2")  # the DOCA functions it uses: see test_doca_versions for older ones
def test_inventory_exhaustion_refcounts_and_chains(dev: d.Dev) -> None:
    with local_mmap(dev) as mm, d.BufInventory(3) as inv:
        base, _ = mm.get_memrange()
        a, b, c = (inv.buf_get_by_data(mm, base + 64 * i, 64) for i in range(3))
        with pytest.raises(e.DocaNoMemory):
            inv.buf_get_by_data(mm, base, 1)
        assert a.inc_refcount() == 1 and a.get_refcount() == 2
        assert a.dec_refcount() == 2
        a.chain_list(b)
        a.chain_list(c)
        assert a.get_list_len() == 3 and a.is_in_list() and a.is_first_in_list()
        assert a.get_next_in_list() is b and a.get_last_in_list() is c and c.is_last_in_list()
        with pytest.raises(e.DocaNotPermitted):
            b.dec_refcount()  # only the head counts
        a.unchain_list(c)
        assert a.get_list_len() == 2 and c.get_refcount() == 1 and c.is_first_in_list()
        a.dec_refcount()  # returns a and b together
        assert inv.get_num_free_elements() == 2
        dup = inv.buf_dup(c)
        assert (dup.get_data(), dup.get_data_len()) == (c.get_data(), c.get_data_len())
        dup.dec_refcount()
        inv.expand(2)
        assert inv.get_num_elements() == 5
        d0 = inv.buf_get_by_data(mm, base, 16)
        c.chain_list(d0)
        copy = inv.buf_dup(c)  # duplicates the whole list
        second = copy.get_next_in_list()
        assert second is not None and second.get_data() == base and copy.get_list_len() == 2
        copy.dec_refcount()
        c.dec_refcount()
        assert inv.get_num_free_elements() == 5


def test_closing_the_inventory_returns_outstanding_buffers(dev: d.Dev) -> None:
    mm = local_mmap(dev)
    inv = d.BufInventory(2)
    base, _ = mm.get_memrange()
    buf = inv.buf_get_by_data(mm, base, 8)
    buf.inc_refcount()
    inv.close()
    assert buf.closed and mm.get_num_bufs() == 0
    mm.close()


def test_imported_in_process_and_revoked_by_stop(dev: d.Dev, backend: str) -> None:
    with local_mmap(dev, allocate=False, perms=A.LOCAL_READ_WRITE | A.PCI_READ_WRITE) as mm:
        blob = mm.export_pci(dev)
        imp = d.Mmap.create_from_export(blob, dev)
        assert imp.get_from_export() and imp.get_memrange() == mm.get_memrange()
        with pytest.raises(e.DocaNotPermitted):
            imp.set_permissions(A.LOCAL_READ_WRITE)
        with pytest.raises(e.DocaNotSupported):
            imp.view(mm.get_memrange()[0], 1)
        imp.close()
        mm.stop()
        with pytest.raises(e.DocaNotPermitted,
                           match="revoked|forged" if backend == "emulated" else "doca_mmap_create_from_export"):
            d.Mmap.create_from_export(blob, dev)


@pytest.mark.parametrize("mutate", ["truncate", "flip", "garbage", "empty", "version"])
def test_bad_blobs_are_invalid_values(dev: d.Dev, mutate: str) -> None:
    with local_mmap(dev, perms=A.PCI_READ_WRITE) as mm:
        blob = bytearray(mm.export_pci(dev))
        if mutate == "truncate":
            bad = bytes(blob[:40])
        elif mutate == "flip":
            blob[30] ^= 0x40
            bad = bytes(blob)
        elif mutate == "garbage":
            bad = bytes(range(len(blob)))
        elif mutate == "empty":
            bad = b""
        else:
            blob[8] = 99
            bad = bytes(blob)
        expected = e.DocaUnsupportedVersion if mutate == "version" else e.DocaInvalidValue
        with pytest.raises(expected):
            d.Mmap.create_from_export(bad, dev)


@pytest.mark.parametrize("forge", ["perms", "kind"])
def test_same_process_import_trusts_the_exporter_not_the_blob(dev: d.Dev, forge: str, backend: str) -> None:
    # Regression: a same-process import took permissions and kind from the blob, so a
    # re-encoded blob granted writes on memory exported read-only.
    over_libdoca = bool(getattr(backend, "over_libdoca", False))  # libdoca's blobs are the emulator's
    if backend != "emulated" and not over_libdoca:
        pytest.skip("forges an emulated export blob (a real DOCA's blobs are its own)")
    import dataclasses

    from doca_py.emulated import export as ex

    with local_mmap(dev, perms=A.LOCAL_READ_WRITE | A.PCI_READ_ONLY) as mm:
        blob = ex.decode(mm.export_pci(dev))
        if forge == "perms":
            forged = dataclasses.replace(blob, perms=int(A.LOCAL_READ_WRITE | A.PCI_READ_WRITE | A.RDMA_WRITE))
        else:
            forged = dataclasses.replace(blob, kind=ex.ExportKind.RDMA)
        with pytest.raises(e.DocaNotPermitted, match="doca_mmap_create_from_export" if over_libdoca else "modified blob"):
            d.Mmap.create_from_export(ex.encode(forged), dev)
        imp = d.Mmap.create_from_export(ex.encode(blob), dev)  # the genuine blob still works
        imp.close()


def test_inventory_refuses_a_reference_to_a_freed_buffer(dev: d.Dev) -> None:
    """inc_refcount on a freed buffer (BAD_STATE), through its wrapper and through its handle: a
    2-element inventory then never reports 3 free."""
    with local_mmap(dev) as mm, d.BufInventory(2) as inv:
        base, _ = mm.get_memrange()
        buf = inv.buf_get_by_data(mm, base, 8)
        h = buf.handle
        buf.dec_refcount()
        with pytest.raises(d.errors.DocaBadState):
            buf.inc_refcount()
        if d.impl == "emulated":
            assert isinstance(h, d.emulated.buf.EmuBuf)
            with pytest.raises(d.errors.DocaBadState):
                h.inc_refcount()
        assert inv.get_num_free_elements() == 2
        a, b = inv.buf_get_by_data(mm, base, 8), inv.buf_get_by_data(mm, base, 8)
        with pytest.raises(d.errors.DocaNoMemory):
            inv.buf_get_by_data(mm, base, 8)
        a.close()
        b.close()
