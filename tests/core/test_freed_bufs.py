"""A freed ``Buf`` never reaches a task: every task builder and setter refuses it when the task is built
(``DocaBadState`` naming the method and the parameter), on every backend and in and out of the emulator's
strict mode; and a submit strict mode refuses leaves the task the caller's, not in flight for ever."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest

import doca_py as d
from doca_py.errors import DocaBadState
from doca_py.types import CtxState as S

from ..comch.helpers import pair
from ..rdma.helpers import make_side
from .helpers import local_mmap, rig, strict_emulator


def _ignore(*_: Any) -> None:
    pass


@dataclass
class World:
    """A started ctx of every library that takes buffers, a live buffer and an inventory to free one from."""

    inv: d.BufInventory
    mm: d.Mmap
    live: d.Buf
    dma: d.Dma
    dma_task: d.DmaTaskMemcpy
    ec: d.Ec
    matrix: d.EcMatrix
    ec_task: d.EcTaskCreate
    compress: d.Compress
    compress_task: d.CompressTaskCompressDeflate
    rdma: d.Rdma
    conn: d.RdmaConnection
    consumer: d.ComchConsumer
    producer: d.ComchProducer

    def freed(self) -> d.Buf:
        buf = self.inv.buf_get_by_addr(self.mm, self.mm.get_memrange()[0] + 4096, 64)
        buf.dec_refcount()
        assert buf.closed
        return buf


@pytest.fixture(scope="module")
def w() -> Iterator[World]:
    with ExitStack() as st:
        p = st.enter_context(pair())
        dev = p.dpu
        pe = st.enter_context(d.Pe())
        mm = local_mmap(dev)
        st.callback(mm.close)
        inv = st.enter_context(d.BufInventory(16))
        live = inv.buf_get_by_data(mm, mm.get_memrange()[0], 64)
        dma = d.Dma(dev)
        pe.connect_ctx(dma)
        dma.task_memcpy_set_conf(_ignore, _ignore, 2)
        dma.start()
        ec = d.Ec(dev)
        pe.connect_ctx(ec)
        for kind in ("create", "recover", "update", "galois_mul"):
            getattr(ec, f"task_{kind}_set_conf")(_ignore, _ignore, 2)
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
        yield World(inv, mm, live, dma, dma.task_memcpy_alloc_init(live, live), ec, matrix,
                    ec.task_create_allocate_init(matrix, live, live), compress,
                    compress.task_compress_deflate_alloc_init(live, live), side.rdma, conn, consumer, producer)
        live.dec_refcount()
        for ctx in (consumer, producer, dma, ec, compress, side.rdma):
            ctx.close()


Call = Callable[[World, d.Buf], object]
# (what the message names, the parameter, the call given the freed buffer there)
CASES: list[tuple[str, str, Call]] = [
    ("Dma.task_memcpy_alloc_init", "dst", lambda w, x: w.dma.task_memcpy_alloc_init(w.live, x)),
    ("DmaTaskMemcpy.set_src", "src", lambda w, x: w.dma_task.set_src(x)),
    ("Ec.task_create_allocate_init", "src", lambda w, x: w.ec.task_create_allocate_init(w.matrix, x, w.live)),
    ("Ec.task_recover_allocate_init", "dst", lambda w, x: w.ec.task_recover_allocate_init(w.matrix, w.live, x)),
    ("EcTaskCreate.set_rdnc_blocks", "buf", lambda w, x: w.ec_task.set_rdnc_blocks(x)),
    ("Compress.task_compress_deflate_alloc_init", "src",
     lambda w, x: w.compress.task_compress_deflate_alloc_init(x, w.live)),
    ("CompressTaskCompressDeflate.set_dst", "buf", lambda w, x: w.compress_task.set_dst(x)),
    ("Rdma.task_receive_allocate_init", "dst", lambda w, x: w.rdma.task_receive_allocate_init(x)),
    ("Rdma.task_send_allocate_init", "src", lambda w, x: w.rdma.task_send_allocate_init(w.conn, x)),
    ("Rdma.task_write_allocate_init", "dst", lambda w, x: w.rdma.task_write_allocate_init(w.conn, w.live, x)),
    ("Rdma.task_atomic_fetch_add_allocate_init", "result",
     lambda w, x: w.rdma.task_atomic_fetch_add_allocate_init(w.conn, w.live, x, 1)),
    ("ComchConsumer.task_post_recv_alloc_init", "buf", lambda w, x: w.consumer.task_post_recv_alloc_init(x)),
    ("ComchProducer.task_send_alloc_init", "buf", lambda w, x: w.producer.task_send_alloc_init(x, None, 1)),
]


@pytest.fixture(params=[False, True], ids=["lax", "strict"])
def strictness(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Both modes of the emulator (the native backend has one)."""
    if d.impl != "emulated":
        if request.param:
            pytest.skip("the emulator's strict mode")
        return False
    from doca_py.emulated import strict

    monkeypatch.setattr(strict, "STRICT", request.param)
    return bool(request.param)


@pytest.mark.parametrize(("where", "param", "call"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_a_freed_buf_is_refused_when_the_task_is_built(w: World, strictness: bool, where: str, param: str,
                                                       call: Call) -> None:
    inflight = [ctx.get_num_inflight_tasks() for ctx in (w.dma, w.ec, w.compress, w.rdma)]
    with pytest.raises(DocaBadState, match=rf"^DOCA_ERROR_BAD_STATE: Bad state: {where}: {param}: this Buf was freed"):
        call(w, w.freed())
    assert [ctx.get_num_inflight_tasks() for ctx in (w.dma, w.ec, w.compress, w.rdma)] == inflight


@pytest.mark.skipif(d.impl != "emulated", reason="the emulator's strict mode")
def test_strict_refuses_a_submit_whose_buf_was_freed_and_the_task_stays_the_callers() -> None:
    """A buffer freed after the task was given it: strict mode refuses the submit (DOCA would use whatever
    holder has the descriptor now); the task is not in flight, goes back to its pool, and the ctx stops."""
    assert strict_emulator()
    with rig() as r:
        mm = local_mmap(r.dev)
        base = mm.get_memrange()[0]
        src = r.inv.buf_get_by_data(mm, base, 64)
        dst = r.inv.buf_get_by_addr(mm, base + 4096, 4096)
        task = r.dma.task_memcpy_alloc_init(src, dst)
        src.dec_refcount()
        with pytest.raises(d.DocaUsageError, match="submitted with a buffer that was freed"):
            task.submit()
        assert r.dma.get_num_inflight_tasks() == 0 and r.pe.get_num_inflight_tasks() == 0
        assert not r.pe.progress() and r.done == []  # no completion will ever come: none is owed
        task.free()
        assert r.dma.stop() == S.IDLE  # nothing in flight, nothing allocated
        dst.dec_refcount()
        mm.close()
