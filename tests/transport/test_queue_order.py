"""Queue order, as a property: on every transport path, with shuffling on and off, for many seeds, the
work of one DOCA queue starts and completes in submission order.

Each case draws a random schedule from its seed: bursts of sends of random sizes (empty to several ring
records) interleaved with receive posts, receivers that post late (the sends wait), small rings that
fill and wrap. Whatever the schedule, the k-th receive posted gets the k-th message, receives complete in
the order they were posted, and sends complete in the order they were submitted. Shuffling may reorder
work across queues (the two directions, the two ctxs), never within one.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.comch import ComchConsumer, ComchProducer
from doca_py.types import CtxState

from ..comch.helpers import local_mmap, pair
from ..rdma.helpers import DEADLINE, close_side, connect_pair, make_side, rig

pytestmark = pytest.mark.skipif(d.impl != "emulated", reason="shuffling and the transports are the emulator's")

SEEDS = range(6)
#: Message sizes: empty to several ring records (fragments); a burst fills the rings of the rings path.
SIZES = (0, 1, 64, 600, 5000, 40_000, 70_000, 130_000)
SLOT = 128 << 10  # a receive's buffer, and where a send's bytes are (message i in slot i % window)


@pytest.fixture(params=[False, True], ids=["fifo", "shuffled"])
def shuffle(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    from doca_py.emulated import strict

    monkeypatch.setattr(strict, "SHUFFLE", request.param)
    return bool(request.param)


@pytest.fixture(params=["streams", "rings", "tcp"])
def rdma_path(request: pytest.FixtureRequest) -> Iterator[str]:
    """The rings keep their size (256 KiB): a burst of the largest messages fills them, the run wraps them."""
    from doca_py.emulated import rdma as emu
    emu.configure(shm=request.param == "rings")
    try:
        yield str(request.param)
    finally:
        emu.configure(shm=False, host_id="")


class _Stall:
    """Hang guard: fails when the observed state has not changed for the helpers' deadline."""

    def __init__(self) -> None:
        self.state: object = None
        self.since = time.monotonic()

    def check(self, state: object) -> None:
        now = time.monotonic()
        if state != self.state:
            self.state, self.since = state, now
        elif now - self.since > DEADLINE:
            raise AssertionError(f"the schedule made no progress for {DEADLINE} s: {state}")


@pytest.mark.parametrize("seed", SEEDS)
def test_rdma_queues_keep_submission_order(rdma_path: str, shuffle: bool, seed: int) -> None:
    from doca_py.emulated import strict

    strict.reseed(f"queue-order/rdma/{rdma_path}/{shuffle}/{seed}")
    rng = random.Random(f"{rdma_path}/{shuffle}/{seed}")
    n, window = 150, 12
    sizes = [rng.choice(SIZES) for _ in range(n)]
    with rig(512) as (dev, pe, inv):
        a = make_side(dev, pe, num=window)
        a.rdma.start()
        if rdma_path == "tcp":
            from doca_py.emulated import rdma as emu

            emu.configure(host_id=f"elsewhere-{uuid.uuid4()}")  # b is on another host: TCP
        b = make_side(dev, pe, num=window)
        b.rdma.start()
        connect_pair(pe, a, b)
        assert a.conn is not None
        sent = recv_posted = 0  # messages submitted, receives posted
        send_done: list[int] = []
        got: list[tuple[int, int]] = []  # (post number, immediate data), in completion order
        free_recvs = [b.rdma.task_receive_allocate_init(inv.buf_get_by_addr(b.mm, b.base + k * SLOT, SLOT))
                      for k in range(window)]
        post_no: dict[int, int] = {}
        sends_in_flight = 0
        stall = _Stall()
        while len(got) < n or len(send_done) < n:
            stall.check((sent, recv_posted, len(got), len(send_done)))
            action = rng.random()
            if action < 0.35 and sent < n and sends_in_flight < window:
                for _ in range(rng.randint(1, window - sends_in_flight)):  # a burst, maybe past the receives
                    if sent == n:
                        break
                    at, size = (sent % window) * SLOT, sizes[sent]  # that slot's send completed (window)
                    a.mem[at:at + size] = bytes([sent & 0xFF]) * size
                    src = inv.buf_get_by_data(a.mm, a.base + at, size) if size else None
                    a.rdma.task_send_imm_allocate_init(a.conn, src, sent).submit()
                    sent += 1
                    sends_in_flight += 1
            elif action < 0.65 and free_recvs and recv_posted < n:
                for _ in range(rng.randint(1, len(free_recvs))):  # posted late, in bursts
                    if not free_recvs or recv_posted == n:
                        break
                    r = free_recvs.pop(0)
                    post_no[id(r)] = recv_posted
                    recv_posted += 1
                    r.submit()
            elif not pe.progress():
                pe.wait(0.01)  # nothing to do here: the I/O thread is moving bytes
            for kind, t in b.done:
                assert kind == "ok", t.get_status()
                k, imm = post_no.pop(id(t)), t.get_result_immediate_data()
                got.append((k, imm))
                dst = t.get_dst_buf()
                assert bytes(dst.data_view()) == bytes([imm & 0xFF]) * sizes[imm], f"message {imm}"
                dst.reset_data_len()
                free_recvs.append(t)
            b.done.clear()
            for kind, t in a.done:
                assert kind == "ok", t.get_status()
                send_done.append(t.get_immediate_data())
                src = t.get_src_buf()
                t.free()
                if src is not None:
                    src.dec_refcount()
                sends_in_flight -= 1
            a.done.clear()
        assert got == [(k, k) for k in range(n)]  # the k-th receive posted got, and completed with, message k
        assert send_done == list(range(n))
        for r in free_recvs:
            dst = r.get_dst_buf()
            assert dst is not None
            dst.dec_refcount()
            r.free()
        a.rdma.close()
        b.rdma.close()
        inv.close()
        close_side(a)
        close_side(b)


@pytest.fixture(params=["socket", "rings"])
def comch_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    from doca_py.emulated.comch import config, shm

    monkeypatch.setattr(shm, "RING_SIZE", 8192)
    config.configure(shm=request.param == "rings")
    try:
        yield str(request.param)
    finally:
        config.configure(shm=False)


@pytest.mark.parametrize("seed", SEEDS)
def test_comch_queues_keep_submission_order(comch_path: str, shuffle: bool, seed: int) -> None:
    """A connection's messages both ways, and a producer's sends into a consumer's posted receives."""
    from doca_py.emulated import strict

    strict.reseed(f"queue-order/comch/{comch_path}/{shuffle}/{seed}")
    rng = random.Random(f"{comch_path}/{shuffle}/{seed}")
    n, window = 120, 16
    with pair(num_tasks=window) as p, d.BufInventory(4 * window) as inv:
        if comch_path == "rings":
            assert getattr(p.sconn, "_h").shm is not None
        smm, _ = local_mmap(p.dpu, window * 4096)
        cmm, cmem = local_mmap(p.host, n * 256)
        cons = ComchConsumer(p.sconn, smm)
        p.server.pe.connect_ctx(cons)
        rdone: list[Any] = []
        cons.task_post_recv_set_conf(lambda t, u, c: rdone.append(t), lambda t, u, c: rdone.append(t), window)
        cons.start()
        p.pump(lambda: cons.get_state() == CtxState.RUNNING and cons.get_id() in p.client.ids("new_consumer"))
        prod = ComchProducer(p.cconn)
        p.client.pe.connect_ctx(prod)
        pdone: list[Any] = []
        prod.task_send_set_conf(lambda t, u, c: pdone.append(t), lambda t, u, c: pdone.append(t), window)
        prod.start()
        p.pump(lambda: prod.get_state() == CtxState.RUNNING)
        for i in range(n):
            cmem[i * 256:i * 256 + 1 + i % 200] = bytes([i & 0xFF]) * (1 + i % 200)

        msgs = {"client": [rng.randbytes(rng.choice((0, 1, 100, 3000))) + i.to_bytes(2, "little")
                           for i in range(n)],
                "server": [rng.randbytes(rng.choice((0, 50, 4000))) + i.to_bytes(2, "little") for i in range(n)]}
        nxt = {"client": 0, "server": 0}
        order: dict[str, list[int]] = {"client": [], "server": []}  # id() of message tasks, in submission order
        produced = posted = 0
        prod_order: list[int] = []
        post_order: list[int] = []
        got: list[int] = []
        free_recvs = [cons.task_post_recv_alloc_init(inv.buf_get_by_addr(smm, smm.get_memrange()[0] + k * 4096, 4096))
                      for k in range(window)]
        stall = _Stall()

        def finished() -> bool:
            return (len(p.server.msgs) == n and len(p.client.msgs) == n and len(got) == n
                    and not order["client"] and not order["server"] and not prod_order
                    and nxt["client"] == n and nxt["server"] == n)

        while not finished():
            stall.check((nxt["client"], nxt["server"], len(p.server.msgs), len(p.client.msgs), produced, posted,
                         len(got), len(order["client"]), len(order["server"]), len(prod_order)))
            action = rng.random()
            side = rng.choice(("client", "server"))
            ep = p.client if side == "client" else p.server
            conn = p.cconn if side == "client" else p.sconn
            if action < 0.3 and nxt[side] < n:
                for _ in range(rng.randint(1, window)):
                    if nxt[side] == n:
                        break
                    try:
                        t = ep.ctx.task_send_alloc_init(conn, msgs[side][nxt[side]])
                    except e.DocaNoMemory:
                        break  # every task in flight
                    t.submit()
                    order[side].append(id(t))
                    nxt[side] += 1
            elif action < 0.45 and free_recvs and posted < n:
                for _ in range(rng.randint(1, len(free_recvs))):  # the consumer posts late, in bursts
                    if not free_recvs or posted == n:
                        break
                    r = free_recvs.pop(0)
                    r.submit()
                    post_order.append(id(r))
                    posted += 1
            elif action < 0.6 and produced < n:
                size = 1 + produced % 200
                src = inv.buf_get_by_data(cmm, cmm.get_memrange()[0] + produced * 256, size)
                try:
                    t = prod.task_send_alloc_init(src, produced.to_bytes(4, "little"), cons.get_id())
                    t.submit()
                except (e.DocaNoMemory, e.DocaAgain) as exc:  # all in flight / no receive posted yet: later
                    if isinstance(exc, e.DocaAgain):
                        t.free()
                    src.dec_refcount()
                else:
                    prod_order.append(id(t))
                    produced += 1
            elif not any([pe.progress() for pe in p.pes]):
                p.pes[0].wait(0.001)  # idle here: the I/O threads are moving bytes
            for name, endp in (("client", p.client), ("server", p.server)):
                for kind, t, st in endp.sent:
                    assert kind == "ok", st
                    assert order[name].pop(0) == id(t), "message tasks completed out of submission order"
                    t.free()
                endp.sent.clear()
            for t in pdone:
                assert t.get_status() == d.ErrorCode.SUCCESS, t.get_status()
                assert prod_order.pop(0) == id(t), "producer sends completed out of submission order"
                src = t.get_buf()
                t.free()
                src.dec_refcount()
            pdone.clear()
            for r in rdone:
                assert r.get_status() == d.ErrorCode.SUCCESS, r.get_status()
                assert post_order.pop(0) == id(r), "receives completed out of posting order"
                k = len(got)
                assert bytes(r.get_imm_data()) == k.to_bytes(4, "little")
                dst = r.get_buf()
                assert bytes(dst.data_view()) == bytes([k & 0xFF]) * (1 + k % 200)
                got.append(k)
                dst.reset_data_len()
                free_recvs.append(r)
            rdone.clear()
        assert [m for m, _ in p.server.msgs] == msgs["client"]
        assert [m for m, _ in p.client.msgs] == msgs["server"]
        for r in free_recvs:
            r.get_buf().dec_refcount()
            r.free()
        prod.stop()
        cons.stop()
        p.pump(lambda: prod.get_state() == CtxState.IDLE and cons.get_state() == CtxState.IDLE)
        prod.close()
        cons.close()
        smm.close()
        cmm.close()


