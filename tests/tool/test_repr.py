"""``repr()`` of every public object, and enumerations that print by name."""

from __future__ import annotations

import json
import re

import pytest

import doca_py as d
from doca_py.errors import DocaUsageError, ErrorCode
from doca_py.types import AccessFlag, CtxState, DevinfoRepFilter, PciFuncType

DPU_PCI = "0000:03:00.0"


def test_reprs_name_the_class_the_state_and_the_facts(backend: str) -> None:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe, d.BufInventory(8) as inv:
        assert repr(dev) == f"<Dev open pci={DPU_PCI} ibdev={dev.as_devinfo().get_ibdev_name()}>"
        assert repr(pe) == "<Pe open ctxs=0 inflight=0>"
        assert repr(inv) == "<BufInventory open elements=8 free=8>"

        mm = d.Mmap()
        assert repr(mm) == "<Mmap open no range not started devs=0 bufs=0>"
        mm.allocate(1 << 16)
        mm.set_permissions(AccessFlag.LOCAL_READ_WRITE | AccessFlag.PCI_READ_WRITE)
        mm.add_dev(dev)
        base, length = mm.get_memrange()
        assert repr(mm) == f"<Mmap open range=[{base:#x}, +{length}) not started devs=1 bufs=0>"
        mm.start()
        src = inv.buf_get_by_data(mm, base, 64)
        dst = inv.buf_get_by_addr(mm, base + 4096, 128)
        assert repr(mm) == f"<Mmap open range=[{base:#x}, +{length}) started devs=1 bufs=2>"
        assert repr(src) == f"<Buf open head={base:#x} len=64 data={base:#x} data_len=64 refcount=1>"
        assert repr(dst) == f"<Buf open head={base + 4096:#x} len=128 data={base + 4096:#x} data_len=0 refcount=1>"
        assert repr(inv) == "<BufInventory open elements=8 free=6>"

        dma = d.Dma(dev)
        assert repr(dma) == "<Dma open state=IDLE inflight=0 no pe>"
        pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(lambda t, u, c: None, lambda t, u, c: None, 4)
        dma.start()
        assert repr(dma) == "<Dma open state=RUNNING inflight=0>"
        assert repr(pe) == "<Pe open ctxs=1 inflight=0>"
        task = dma.task_memcpy_alloc_init(src, dst, user_data="first")
        task.submit()
        assert repr(task) == "<DmaTaskMemcpy in flight user_data='first'>"
        assert repr(dma) == "<Dma open state=RUNNING inflight=1>"
        while not pe.progress():
            pe.wait(1.0)
        assert repr(task) == "<DmaTaskMemcpy status=SUCCESS user_data='first'>"
        task.free()
        assert repr(task) == "<DmaTaskMemcpy freed>"

        blob = mm.export_pci(dev)
        assert "started exported" in repr(mm)
        imported = d.Mmap.create_from_export(blob, dev)
        assert repr(imported) == f"<Mmap open range=[{base:#x}, +{length}) started imported devs=1 bufs=0>"
        imported.close()
        assert repr(imported) == "<Mmap closed>"

        src.dec_refcount()
        assert repr(src) == "<Buf closed>"  # back in its inventory
        dst.dec_refcount()
        mm.close()
        assert repr(mm) == "<Mmap closed>"
    # A closed object's handle is not touched: only the class and "closed".
    assert (repr(dev), repr(pe), repr(inv), repr(dma)) == ("<Dev closed>", "<Pe closed>", "<BufInventory closed>",
                                                           "<Dma closed>")
    assert repr(task) == "<DmaTaskMemcpy freed>"


def test_representor_and_base_class_reprs(backend: str) -> None:
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe:
        info = dev.rep_create_list()[0]
        assert repr(info) == f"<DevInfoRep {info.get_pci_addr_str()} {info.get_iface_name()}>"
        rep = info.open()
        assert repr(rep) == f"<DevRep open pci={info.get_pci_addr_str()} iface={info.get_iface_name()}>"
        # Classes without a hook of their own: the Ctx state, plus their public scalar attributes.
        server = d.ComchServer(dev, rep, "repr-test")
        assert repr(server) == "<ComchServer open state=IDLE inflight=0 no pe name='repr-test'>"
        rdma = d.Rdma(dev)
        pe.connect_ctx(rdma)
        assert repr(rdma) == "<Rdma open state=IDLE inflight=0>"
        ec = d.Ec(dev)
        pe.connect_ctx(ec)
        matrix = ec.matrix_create(d.EcMatrixType.CAUCHY, 4, 2)
        assert repr(matrix) == "<EcMatrix open k_in=4 r_out=2>"
        ec.close()
        assert repr(matrix) == "<EcMatrix closed>"
        server.close()
        rdma.close()
    assert repr(rep) == "<DevRep closed>"


def test_repr_never_raises() -> None:
    with d.Pe() as pe:
        def broken() -> list[str]:
            raise DocaUsageError("nope")

        pe._repr_facts = broken  # type: ignore[method-assign]
        assert repr(pe) == "<Pe open (DocaUsageError while describing)>"


def test_enums_print_their_name() -> None:
    assert str(CtxState.RUNNING) == "RUNNING"
    assert f"ctx is {CtxState.STOPPING}" == "ctx is STOPPING"
    assert f"failed {ErrorCode.INVALID_VALUE}" == "failed INVALID_VALUE"  # was "failed 6"
    assert "%s/%d" % (ErrorCode.BAD_STATE, ErrorCode.BAD_STATE) == "BAD_STATE/18"
    assert f"{PciFuncType.VF:>4}|{CtxState.IDLE:<6}|" == "  VF|IDLE  |"
    # Numeric format specs and int() still give the number; so do repr() and JSON.
    assert f"{ErrorCode.IO_FAILED:d} {ErrorCode.IO_FAILED:#x} {CtxState.RUNNING:03d}" == "17 0x11 002"
    assert int(ErrorCode.NOT_FOUND) == 16 and ErrorCode.NOT_FOUND == 16
    assert repr(CtxState.RUNNING) == "<CtxState.RUNNING: 2>"
    assert json.dumps({"status": ErrorCode.AGAIN}) == '{"status": 5}'
    # Flags: the names of the bits, joined like Python's own Flag.
    flags = AccessFlag.LOCAL_READ_WRITE | AccessFlag.PCI_READ_WRITE
    assert str(flags) == "LOCAL_READ_WRITE|PCI_READ_WRITE"
    assert f"{flags:#x}" == "0x21"
    assert str(AccessFlag.LOCAL_READ_ONLY) == "LOCAL_READ_ONLY"
    assert str(DevinfoRepFilter.NET) == "NET"


def test_a_failed_task_status_reads_by_name(backend: str) -> None:
    statuses: list[str] = []
    with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe, d.BufInventory(4) as inv:
        mm = d.Mmap()
        mm.allocate(1 << 14)
        mm.add_dev(dev)
        mm.start()
        base, _ = mm.get_memrange()
        src = inv.buf_get_by_data(mm, base, 4096)
        dst = inv.buf_get_by_addr(mm, base + 4096, 16)  # too small: the task fails
        dma = d.Dma(dev)
        pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(lambda t, u, c: statuses.append("ok"),
                                 lambda t, u, c: statuses.append(f"failed {t.get_status()}"), 2)
        dma.start()
        task = dma.task_memcpy_alloc_init(src, dst)
        try:
            task.submit()
        except d.DocaError as exc:  # a backend may refuse it at submit
            statuses.append(f"failed {ErrorCode(exc.code)}")
        else:
            while not statuses:
                pe.wait(1.0)
            assert re.fullmatch(r"<DmaTaskMemcpy status=[A-Z_]+ user_data=None>", repr(task))
        assert statuses and re.fullmatch(r"failed [A-Z_]+", statuses[0]), statuses
        task.free()
        src.dec_refcount()
        dst.dec_refcount()
        dma.close()
        mm.close()


@pytest.mark.parametrize("enum_type", [CtxState, ErrorCode, PciFuncType, AccessFlag, DevinfoRepFilter])
def test_every_member_formats_by_name(enum_type: type[CtxState]) -> None:
    for member in enum_type:
        assert str(member) == format(member) == f"{member}" == member.name
