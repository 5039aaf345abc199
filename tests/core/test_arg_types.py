"""A wrong argument type at the public layer raises ``DocaTypeError`` (a ``TypeError``) naming the method
and the parameter, never an ``AttributeError`` from inside a backend: addresses, buffers, bufs, mmaps,
devices, matrices, connections and ctxs, for every public entry point that takes one."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest

import doca_py as d
from doca_py import aio, comch
from doca_py.errors import DocaTypeError

from ..comch.helpers import pair
from ..rdma.helpers import make_side
from .helpers import DPU_PCI, HOST_PCI, local_mmap


@dataclass
class World:
    """One of each object, started where a task must be allocated from it."""

    dev: d.Dev
    info: d.DevInfo
    rep_info: d.DevInfoRep
    rep: d.DevRep
    mm: d.Mmap
    inv: d.BufInventory
    buf: d.Buf
    buf2: d.Buf
    pe: d.Pe
    dma: d.Dma
    dma_task: d.DmaTaskMemcpy
    ec: d.Ec
    matrix: d.EcMatrix
    ec_task: d.EcTaskCreate
    compress: d.Compress
    compress_task: d.CompressTaskCompressDeflate
    rdma: d.Rdma
    conn: d.RdmaConnection
    server: d.ComchServer
    sconn: d.ComchConnection
    consumer: d.ComchConsumer
    producer: d.ComchProducer


def _ignore(*_: Any) -> None:
    pass


@pytest.fixture(scope="module")
def w() -> Iterator[World]:
    with ExitStack() as st:
        p = st.enter_context(pair())
        dev = p.dpu
        pe = st.enter_context(d.Pe())
        mm = local_mmap(dev)
        st.callback(mm.close)
        inv = st.enter_context(d.BufInventory(16))
        base = mm.get_memrange()[0]
        buf, buf2 = inv.buf_get_by_data(mm, base, 64), inv.buf_get_by_addr(mm, base + 64, 64)
        dma = d.Dma(dev)
        pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(_ignore, _ignore, 2)
        dma.start()
        ec = d.Ec(dev)
        pe.connect_ctx(ec)
        ec.task_create_set_conf(_ignore, _ignore, 2)
        ec.start()
        matrix = ec.matrix_create(d.EcMatrixType.CAUCHY, 1, 1)
        compress = d.Compress(dev)
        pe.connect_ctx(compress)
        compress.task_compress_deflate_set_conf(_ignore, _ignore, 2)
        compress.start()
        side = make_side(dev, pe)
        st.callback(side.mm.close)
        side.rdma.start()
        _, conn = side.rdma.export()
        consumer, producer = d.ComchConsumer(p.sconn, mm), d.ComchProducer(p.sconn)
        yield World(dev, dev.as_devinfo(), dev.rep_create_list()[0], p.rep, mm, inv, buf, buf2, pe, dma,
                    dma.task_memcpy_alloc_init(buf, buf2), ec, matrix, ec.task_create_allocate_init(matrix, buf, buf2),
                    compress, compress.task_compress_deflate_alloc_init(buf, buf2), side.rdma, conn, p.server.ctx,
                    p.sconn, consumer, producer)
        for ctx in (consumer, producer, dma, ec, compress, side.rdma):
            ctx.close()


Call = Callable[[World, Any], object]


def _on_new_mmap(f: Callable[[d.Mmap, Any], object]) -> Call:
    def call(w: World, x: Any) -> None:
        with d.Mmap() as m:
            f(m, x)
    return call


# (what the message names, parameter, the call with the wrong value in that parameter)
CASES: list[tuple[str, str, Call]] = [
    ("Dev.open_by_pci_addr", "pci_addr", lambda w, x: d.Dev.open_by_pci_addr(x)),
    ("Dev.open_by_ibdev_name", "name", lambda w, x: d.Dev.open_by_ibdev_name(x)),
    ("Dev.open_by_iface_name", "name", lambda w, x: d.Dev.open_by_iface_name(x)),
    ("Dev.open_rep_by_pci_addr", "pci_addr", lambda w, x: w.dev.open_rep_by_pci_addr(x)),
    ("DevInfo.is_equal_pci_addr", "pci_addr", lambda w, x: w.info.is_equal_pci_addr(x)),
    ("DevInfoRep.is_equal_pci_addr", "pci_addr", lambda w, x: w.rep_info.is_equal_pci_addr(x)),
    ("Mmap.set_memrange", "buffer", _on_new_mmap(lambda m, x: m.set_memrange(x))),
    ("Mmap.add_dev", "dev", _on_new_mmap(lambda m, x: m.add_dev(x))),
    ("Mmap.rm_dev", "dev", _on_new_mmap(lambda m, x: m.rm_dev(x))),
    ("Mmap.export_pci", "dev", lambda w, x: w.mm.export_pci(x)),
    ("Mmap.export_rdma", "dev", lambda w, x: w.mm.export_rdma(x)),
    ("Mmap.create_from_export", "dev", lambda w, x: d.Mmap.create_from_export(b"\0" * 64, x)),
    ("BufInventory.buf_get_by_args", "mmap", lambda w, x: w.inv.buf_get_by_args(x, 0, 64, 0, 0)),
    ("BufInventory.buf_get_by_addr", "mmap", lambda w, x: w.inv.buf_get_by_addr(x, 0, 64)),
    ("BufInventory.buf_get_by_data", "mmap", lambda w, x: w.inv.buf_get_by_data(x, 0, 64)),
    ("BufInventory.buf_dup", "buf", lambda w, x: w.inv.buf_dup(x)),
    ("Buf.chain_list", "other", lambda w, x: w.buf.chain_list(x)),
    ("Buf.unchain_list", "other", lambda w, x: w.buf.unchain_list(x)),
    ("Buf.from_handle", "inventory", lambda w, x: d.Buf.from_handle(x, w.mm, w.buf.handle)),  # type: ignore[arg-type]
    ("Buf.from_handle", "mmap", lambda w, x: d.Buf.from_handle(w.inv, x, w.buf.handle)),  # type: ignore[arg-type]
    ("Pe.connect_ctx", "ctx", lambda w, x: w.pe.connect_ctx(x)),
    ("aio.attach", "pe", lambda w, x: aio.attach(x)),
    ("Dma", "dev", lambda w, x: d.Dma(x)),
    ("Dma.task_memcpy_alloc_init", "src", lambda w, x: w.dma.task_memcpy_alloc_init(x, w.buf2)),
    ("Dma.task_memcpy_alloc_init", "dst", lambda w, x: w.dma.task_memcpy_alloc_init(w.buf, x)),
    ("DmaTaskMemcpy.set_src", "src", lambda w, x: w.dma_task.set_src(x)),
    ("DmaTaskMemcpy.set_dst", "dst", lambda w, x: w.dma_task.set_dst(x)),
    ("Ec", "dev", lambda w, x: d.Ec(x)),
    ("Ec.matrix_create_recover", "coding_matrix", lambda w, x: w.ec.matrix_create_recover(x, [0])),
    ("Ec.matrix_create_update", "coding_matrix", lambda w, x: w.ec.matrix_create_update(x, [0])),
    ("Ec.task_create_allocate_init", "matrix", lambda w, x: w.ec.task_create_allocate_init(x, w.buf, w.buf2)),
    ("Ec.task_create_allocate_init", "src", lambda w, x: w.ec.task_create_allocate_init(w.matrix, x, w.buf2)),
    ("Ec.task_recover_allocate_init", "dst", lambda w, x: w.ec.task_recover_allocate_init(w.matrix, w.buf, x)),
    ("Ec.task_update_allocate_init", "src", lambda w, x: w.ec.task_update_allocate_init(w.matrix, x, w.buf2)),
    ("Ec.task_galois_mul_allocate_init", "dst", lambda w, x: w.ec.task_galois_mul_allocate_init(w.matrix, w.buf, x)),
    ("EcTaskCreate.set_coding_matrix", "matrix", lambda w, x: w.ec_task.set_coding_matrix(x)),
    ("EcTaskCreate.set_original_data_blocks", "buf", lambda w, x: w.ec_task.set_original_data_blocks(x)),
    ("EcTaskCreate.set_rdnc_blocks", "buf", lambda w, x: w.ec_task.set_rdnc_blocks(x)),
    ("Compress", "dev", lambda w, x: d.Compress(x)),
    ("Compress.task_compress_deflate_alloc_init", "src",
     lambda w, x: w.compress.task_compress_deflate_alloc_init(x, w.buf2)),
    ("Compress.task_decompress_deflate_alloc_init", "dst",
     lambda w, x: w.compress.task_decompress_deflate_alloc_init(w.buf, x)),
    ("Compress.task_decompress_lz4_stream_alloc_init", "src",
     lambda w, x: w.compress.task_decompress_lz4_stream_alloc_init(False, True, x, w.buf2)),
    ("Compress.task_decompress_lz4_block_alloc_init", "dst",
     lambda w, x: w.compress.task_decompress_lz4_block_alloc_init(w.buf, x)),
    ("CompressTaskCompressDeflate.set_src", "buf", lambda w, x: w.compress_task.set_src(x)),
    ("CompressTaskCompressDeflate.set_dst", "buf", lambda w, x: w.compress_task.set_dst(x)),
    ("Rdma", "dev", lambda w, x: d.Rdma(x)),
    ("Rdma.connect", "connection", lambda w, x: w.rdma.connect(b"\0" * 16, x)),
    ("Rdma.connect_to_addr", "addr", lambda w, x: w.rdma.connect_to_addr(x)),
    ("Rdma.task_send_allocate_init", "connection", lambda w, x: w.rdma.task_send_allocate_init(x, w.buf)),
    ("Rdma.task_read_allocate_init", "connection", lambda w, x: w.rdma.task_read_allocate_init(x, w.buf, w.buf2)),
    ("Rdma.task_read_allocate_init", "dst", lambda w, x: w.rdma.task_read_allocate_init(w.conn, w.buf, x)),
    ("Rdma.task_write_allocate_init", "src", lambda w, x: w.rdma.task_write_allocate_init(w.conn, x, w.buf2)),
    ("Rdma.task_write_imm_allocate_init", "dst",
     lambda w, x: w.rdma.task_write_imm_allocate_init(w.conn, w.buf, x, 1)),
    ("Rdma.task_atomic_cmp_swp_allocate_init", "result",
     lambda w, x: w.rdma.task_atomic_cmp_swp_allocate_init(w.conn, w.buf, x, 0, 1)),
    ("Rdma.task_atomic_fetch_add_allocate_init", "dst",
     lambda w, x: w.rdma.task_atomic_fetch_add_allocate_init(w.conn, x, w.buf2, 1)),
    ("ComchServer", "dev", lambda w, x: d.ComchServer(x, w.rep, "n")),
    ("ComchServer", "rep", lambda w, x: d.ComchServer(w.dev, x, "n")),
    ("ComchServer", "name", lambda w, x: d.ComchServer(w.dev, w.rep, x)),
    ("ComchClient", "dev", lambda w, x: d.ComchClient(x, "n")),
    ("ComchClient", "name", lambda w, x: d.ComchClient(w.dev, x)),
    ("ComchServer.task_send_alloc_init", "connection", lambda w, x: w.server.task_send_alloc_init(x, b"hi")),
    ("ComchServer.disconnect", "connection", lambda w, x: w.server.disconnect(x)),
    ("ComchConsumer", "connection", lambda w, x: d.ComchConsumer(x, w.mm)),
    ("ComchConsumer", "mmap", lambda w, x: d.ComchConsumer(w.sconn, x)),
    ("ComchProducer", "connection", lambda w, x: d.ComchProducer(x)),
    ("ComchConsumer.task_post_recv_alloc_init", "buf", lambda w, x: w.consumer.task_post_recv_alloc_init(x)),
    ("ComchProducer.task_send_alloc_init", "buf", lambda w, x: w.producer.task_send_alloc_init(x, None, 1)),
]
# Optional buffers: None is a value, an int is not.
OPTIONAL: list[tuple[str, str, Call]] = [
    ("Rdma.task_receive_allocate_init", "dst", lambda w, x: w.rdma.task_receive_allocate_init(x)),
    ("Rdma.task_send_allocate_init", "src", lambda w, x: w.rdma.task_send_allocate_init(w.conn, x)),
    ("Rdma.task_send_imm_allocate_init", "src", lambda w, x: w.rdma.task_send_imm_allocate_init(w.conn, x, 1)),
]


def _check(w: World, where: str, param: str, call: Call, bad: object) -> None:
    with pytest.raises(DocaTypeError) as info:
        call(w, bad)
    assert isinstance(info.value, TypeError)
    assert str(info.value).startswith(f"{where}: {param} must be "), str(info.value)
    assert str(info.value).endswith(f", not {type(bad).__name__}"), str(info.value)


def _event_call(f: Callable[[d.SyncEvent, Any], object]) -> Call:
    def call(w: World, x: Any) -> None:
        with d.SyncEvent() as se:
            f(se, x)
    return call


def _eq_waits() -> bool:
    """DOCA 2.6 (the emulator's 2.6 mode) has no wait_eq tasks."""
    from doca_py.emulated import version

    return version.VERSION >= (3, 0)


def _pool_call(f: Callable[[d.BufPool, Any], object]) -> Call:
    def call(w: World, x: Any) -> None:
        with d.BufPool(1, 64, w.mm, start=False) as pool:
            f(pool, x)
    return call


def _task_call(f: Callable[[d.SyncEventCtx, Any], object]) -> Call:
    def call(w: World, x: Any) -> None:
        with d.SyncEvent() as se:
            se.add_publisher_location_cpu(w.dev)
            se.add_subscriber_location_cpu(w.dev)
            ctx = se.as_ctx()
            w.pe.connect_ctx(ctx)
            ctx.task_notify_set_set_conf(_ignore, _ignore, 1)
            if _eq_waits():
                ctx.task_wait_eq_set_conf(_ignore, _ignore, 1)
            ctx.start()
            try:
                f(ctx, x)
            finally:
                ctx.stop()
    return call


# BufPool and SyncEvent: objects (bad: None, int, str) and integers (bad: None, str, float).
OBJECTS: list[tuple[str, str, Call]] = [
    ("BufPool", "mmap", lambda w, x: d.BufPool(1, 64, x)),
    ("SyncEvent.create_from_export", "dev", lambda w, x: d.SyncEvent.create_from_export(x, b"\0" * 64)),
    ("SyncEvent.create_from_export", "blob", lambda w, x: d.SyncEvent.create_from_export(w.dev, x)),
    ("SyncEventRemoteNet.create_from_export", "dev",
     lambda w, x: d.SyncEventRemoteNet.create_from_export(x, b"\0" * 64)),
    ("SyncEventRemoteNet.create_from_export", "blob", lambda w, x: d.SyncEventRemoteNet.create_from_export(w.dev, x)),
    ("Mmap.create_from_export", "blob", lambda w, x: d.Mmap.create_from_export(x, w.dev)),
    ("Rdma.connect", "peer_blob", lambda w, x: w.rdma.connect(x, w.conn)),
    ("SyncEvent.add_publisher_location_cpu", "dev", _event_call(lambda se, x: se.add_publisher_location_cpu(x))),
    ("SyncEvent.add_subscriber_location_cpu", "dev", _event_call(lambda se, x: se.add_subscriber_location_cpu(x))),
    ("SyncEvent.export_to_remote_pci", "dev", _event_call(lambda se, x: se.export_to_remote_pci(x))),
]
INTS: list[tuple[str, str, Call]] = [
    ("BufInventory", "num_elements", lambda w, x: d.BufInventory(x)),
    ("BufInventory.expand", "num_elements", lambda w, x: w.inv.expand(x)),
    ("BufPool", "num_elements", lambda w, x: d.BufPool(x, 64, w.mm)),
    ("BufPool", "element_size", lambda w, x: d.BufPool(1, x, w.mm)),
    ("BufPool", "element_alignment", lambda w, x: d.BufPool(1, 64, w.mm, element_alignment=x)),
    ("BufPool.set_element_alignment", "alignment", _pool_call(lambda p, x: p.set_element_alignment(x))),
    ("SyncEvent.update_set", "value", _event_call(lambda se, x: se.update_set(x))),
    ("SyncEvent.update_add", "value", _event_call(lambda se, x: se.update_add(x))),
    ("SyncEvent.wait_eq", "value", _event_call(lambda se, x: se.wait_eq(x))),
    ("SyncEvent.wait_neq_yield", "mask", _event_call(lambda se, x: se.wait_neq_yield(0, x))),
    ("SyncEventCtx.task_notify_set_alloc_init", "value", _task_call(lambda c, x: c.task_notify_set_alloc_init(x))),
    ("SyncEventCtx.task_wait_eq_alloc_init", "mask", _task_call(lambda c, x: c.task_wait_eq_alloc_init(1, x))),
    ("SyncEventTaskNotifySet.set_set_val", "value",
     _task_call(lambda c, x: c.task_notify_set_alloc_init(1).set_set_val(x))),
    ("SyncEventTaskWaitEq.set_mask", "mask", _task_call(lambda c, x: c.task_wait_eq_alloc_init(1).set_mask(x))),
]


@pytest.mark.parametrize("bad", [None, 0x1000, "x"], ids=["None", "int", "str"])
@pytest.mark.parametrize(("where", "param", "call"), OBJECTS, ids=[f"{c[0]}-{c[1]}" for c in OBJECTS])
def test_buf_pool_and_sync_event_objects(w: World, where: str, param: str, call: Call, bad: object) -> None:
    _check(w, where, param, call, bad)


@pytest.mark.parametrize("bad", [None, "x", 1.5], ids=["None", "str", "float"])
@pytest.mark.parametrize(("where", "param", "call"), INTS, ids=[f"{c[0]}-{c[1]}" for c in INTS])
def test_buf_pool_and_sync_event_integers(w: World, where: str, param: str, call: Call, bad: object) -> None:
    if bad is None and param == "element_alignment":
        pytest.skip("None is the default: no alignment set")
    if where.startswith(("SyncEventCtx.task_wait_eq", "SyncEventTaskWaitEq")) and not _eq_waits():
        pytest.skip("DOCA 2.6 has no wait_eq tasks")
    _check(w, where, param, call, bad)


@pytest.mark.parametrize("bad", [None, 0x1000, "03:00.0"], ids=["None", "int", "str"])
@pytest.mark.parametrize(("where", "param", "call"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_a_wrong_type_names_the_parameter(w: World, where: str, param: str, call: Call, bad: object) -> None:
    if isinstance(bad, str) and param in ("pci_addr", "name"):
        bad = b"03:00.0"  # a str is right there; bytes is not
    _check(w, where, param, call, bad)


@pytest.mark.parametrize(("where", "param", "call"), OPTIONAL, ids=[f"{c[0]}-{c[1]}" for c in OPTIONAL])
def test_an_optional_buffer_refuses_other_types(w: World, where: str, param: str, call: Call) -> None:
    _check(w, where, param, call, 0x1000)
    _check(w, where, param, call, w.mm)


_CAP_ARGS: dict[str, object] = {"task": d.CompressTaskType.COMPRESS_DEFLATE, "transport": d.RdmaTransportType.RC,
                                 "start_index": 0, "num_entries": 1}


def _cap_functions() -> list[tuple[str, Callable[..., object]]]:
    """Every public capability query, named as the user calls it: ``Rdma.cap_…`` also for the ones ``Rdma``
    has from a mixin (``RdmaSyncEventTasks``), the function's name for a module's."""
    owners: list[Any] = [d.Mmap, d.Dma, d.Ec, d.Compress, d.Rdma, d.ComchServer, d.ComchClient, d.ComchConsumer,
                         d.ComchProducer, d.SyncEvent, comch]
    found = []
    for owner in owners:
        for name, fn in inspect.getmembers(owner):
            if name.startswith("cap_") and next(iter(inspect.signature(fn).parameters), None) == "devinfo":
                found.append((f"{owner.__name__}.{name}" if isinstance(owner, type) else fn.__qualname__, fn))
    return found


@pytest.mark.parametrize(("where", "fn"), _cap_functions(), ids=[q for q, _ in _cap_functions()])
def test_every_capability_query_names_devinfo(where: str, fn: Callable[..., object]) -> None:
    extra = [_CAP_ARGS[p] for p in list(inspect.signature(fn).parameters)[1:]]
    with pytest.raises(DocaTypeError, match=rf"^{where}: devinfo must be DevInfo, not NoneType$"):
        fn(None, *extra)


def test_the_right_types_still_work(w: World) -> None:
    assert d.Dev.open_by_pci_addr(HOST_PCI).close() is None
    assert w.info.is_equal_pci_addr(DPU_PCI)
    assert d.Dma.cap_task_memcpy_is_supported(w.info) is True
    dup = w.inv.buf_dup(w.buf)
    assert dup.get_data_len() == 64
    dup.close()


def test_inventory_counts_are_uint32(w: World) -> None:
    """A count DOCA cannot take is refused at once (the emulator would otherwise build 2**64 descriptors)."""
    for bad in (0, -1, 1 << 32, 1 << 64):
        with pytest.raises(d.errors.DocaInvalidValue, match=rf"^DOCA_ERROR_INVALID_VALUE: .*: BufInventory: "
                                                           rf"num_elements must be 1\.\.4294967295, got {bad}$"):
            d.BufInventory(bad)
        with pytest.raises(d.errors.DocaInvalidValue, match="BufInventory.expand: num_elements must be 1"):
            w.inv.expand(bad)
    before = w.inv.get_num_elements()
    w.inv.expand(2)
    assert w.inv.get_num_elements() == before + 2
