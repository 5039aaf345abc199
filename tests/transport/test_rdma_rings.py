"""Same-host RDMA send/receive over the shared-memory rings (doca_py.emulated.rdma.shm): the DOCA rules
hold on the ring path, and peers on another host still use TCP."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import doca_py as d
from doca_py.errors import ErrorCode
from doca_py.types import CtxState

from ..rdma.helpers import DEADLINE, Side, close_side, connect_pair, make_side, rig, run, wait_for

pytestmark = pytest.mark.usefixtures("rings")


@pytest.fixture
def rings() -> Iterator[None]:
    """The rings are opt-in (``DOCA_PY_RDMA_SHM``): on for the contexts these tests start."""
    if d.impl != "emulated":
        pytest.skip("the shared-memory rings are the emulated backend's transport")
    from doca_py.emulated import rdma as emu

    emu.configure(shm=True)
    try:
        yield
    finally:
        emu.configure(shm=os.environ.get("DOCA_PY_RDMA_SHM", "") == "1")


@pytest.fixture
def pair() -> Iterator[tuple[d.Pe, d.BufInventory, Side, Side]]:
    with rig(256) as (dev, pe, inv):
        a, b = make_side(dev, pe, num=256), make_side(dev, pe, num=256)
        connect_pair(pe, a, b)
        yield pe, inv, a, b
        a.rdma.close()
        b.rdma.close()
        inv.close()
        close_side(a)
        close_side(b)


def _h(s: Side) -> Any:
    assert s.conn is not None
    return s.conn._h


def _recv(inv: d.BufInventory, s: Side, slot: int, size: int = 1 << 17) -> d.Task:
    return s.rdma.task_receive_allocate_init(inv.buf_get_by_addr(s.mm, s.base + (1 << 20) + slot * size, size))


def test_same_host_connections_use_the_rings(pair: tuple[d.Pe, d.BufInventory, Side, Side]) -> None:
    _pe, _inv, a, b = pair
    for s in (a, b):
        assert _h(s).tx is not None and _h(s).rx is not None


def test_without_the_opt_in_same_host_connections_use_the_streams() -> None:
    from doca_py.emulated import rdma as emu

    emu.configure(shm=False)
    with rig() as (dev, pe, inv):
        a, b = make_side(dev, pe), make_side(dev, pe)
        connect_pair(pe, a, b)
        assert _h(a).same_host and _h(a).tx is None and _h(a).rx is None
        a.rdma.close()
        b.rdma.close()
        inv.close()
        close_side(a)
        close_side(b)


def test_sends_arrive_in_order_across_many_ring_wraps_and_fragments(
        pair: tuple[d.Pe, d.BufInventory, Side, Side]) -> None:
    pe, inv, a, b = pair
    assert a.conn is not None
    # Sizes from empty to several ring records (fragments); far more bytes than the ring holds.
    sizes = [0, 1, 64, 4000, 70_000, 130_000, 65_536, 17] * 6
    recvs = [_recv(inv, b, i % 8) for i in range(8)]
    for r in recvs:
        r.submit()
    got: list[bytes] = []
    for i, n in enumerate(sizes):
        data = bytes([i & 0xFF]) * n
        a.mem[:n] = data
        before = len(b.done)
        assert run(pe, a, a.rdma.task_send_imm_allocate_init(a.conn, inv.buf_get_by_data(a.mm, a.base, n) if n
                                                              else None, i)) == ["ok"]
        wait_for(pe, lambda: len(b.done) > before, "the receive")
        kind, r = b.done[-1]
        assert kind == "ok" and r.get_result_immediate_data() == i and r.get_result_len() == n
        dst = r.get_dst_buf()
        got.append(bytes(dst.data_view()))
        dst.reset_data_len()
        r.submit()
    assert got == [bytes([i & 0xFF]) * n for i, n in enumerate(sizes)]


def test_a_burst_fills_the_receives_in_posting_order(pair: tuple[d.Pe, d.BufInventory, Side, Side]) -> None:
    """More sends than receives: the ring holds the rest (receiver not ready) until receives are
    reposted; the k-th receive posted gets the k-th message, whichever path delivered it."""
    pe, inv, a, b = pair
    assert a.conn is not None
    n = 200
    posts: dict[int, list[int]] = {}  # receive task -> the post numbers it was submitted under
    got: dict[int, int] = {}  # post number -> immediate data received
    counter = [0]

    def post(r: d.Task) -> None:
        posts.setdefault(id(r), []).append(counter[0])
        counter[0] += 1
        r.submit()
    for i in range(64):
        post(_recv(inv, b, i, 4096))
    sends = [a.rdma.task_send_imm_allocate_init(a.conn, None, i) for i in range(n)]
    for t in sends[:128]:
        t.submit()
    rest = sends[128:]
    while len(got) < n:
        wait_for(pe, lambda: bool(b.done) or bool(a.done), "completions")
        while b.done:
            kind, r = b.done.pop(0)
            assert kind == "ok"
            got[posts[id(r)].pop(0)] = r.get_result_immediate_data()
            if counter[0] < n:
                post(r)
        while a.done:
            kind, t = a.done.pop(0)
            assert kind == "ok"
            t.free()
            if rest:
                rest.pop(0).submit()
    assert [got[k] for k in range(n)] == list(range(n))


def test_no_receive_posted_fails_the_send_with_time_out(pair: tuple[d.Pe, d.BufInventory, Side, Side]) -> None:
    pe, inv, a, b = pair
    assert a.conn is not None
    a.rdma._h.rnr_retry = 0  # noqa: SLF001 - a 50 ms RNR window (set at start in real use)
    blob_rnr = _h(b).peer_rnr
    _h(b).peer_rnr = 0.05  # the window the receiver applies is the sender's
    try:
        assert run(pe, a, a.rdma.task_send_allocate_init(a.conn, None)) == ["err"]
        assert a.done[-1][1].get_status() == ErrorCode.TIME_OUT
    finally:
        _h(b).peer_rnr = blob_rnr


def test_a_sleeping_receiver_is_woken_by_the_doorbell(monkeypatch: pytest.MonkeyPatch) -> None:
    from doca_py.emulated.rdma import shm
    monkeypatch.setattr(shm, "NUDGE", DEADLINE * 4)  # no I/O-thread help: only the doorbell can wake it
    with rig() as (dev, pe_a, inv):
        pe_b = d.Pe()
        a, b = make_side(dev, pe_a), make_side(dev, pe_b)
        for s in (a, b):
            s.rdma.start()
        blob_a, a.conn = a.rdma.export()
        blob_b, b.conn = b.rdma.export()
        a.rdma.connect(blob_b, a.conn)
        b.rdma.connect(blob_a, b.conn)
        results: list[object] = []

        def receiver() -> None:  # pe_b belongs to this thread
            wait_for(pe_b, lambda: b.rdma.get_state() == CtxState.RUNNING and bool(b.events), "established")
            _recv(inv, b, 0, 4096).submit()
            while pe_b.progress():
                pass
            # One sleep, far longer than the test: only a doorbell ends it early.
            results.append(pe_b.wait(DEADLINE * 2))
            results.append(list(b.done))
            b.rdma.close()  # progresses pe_b: on this thread
            pe_b.close()
        th = threading.Thread(target=receiver)
        th.start()
        try:
            wait_for(pe_a, lambda: a.rdma.get_state() == CtxState.RUNNING and bool(a.events), "established")
            # The receiver is asleep once its ring asks for a doorbell.
            wait_for(pe_a, lambda: _h(b).rx is not None and _h(b).rx.ring.csleep.value == 1, "the receiver to sleep")
            a.mem[:5] = b"hello"
            assert run(pe_a, a, a.rdma.task_send_allocate_init(a.conn, inv.buf_get_by_data(a.mm, a.base, 5))) == ["ok"]
        finally:
            th.join(DEADLINE * 3)
        assert not th.is_alive(), "the doorbell did not wake the sleeping receiver"
        ran, done = results
        assert ran is True and [k for k, _ in done] == ["ok"]  # type: ignore[union-attr]
        assert bytes(done[0][1].get_dst_buf().data_view()) == b"hello"  # type: ignore[index]
        a.rdma.close()
        inv.close()
        close_side(a)
        close_side(b)


def test_another_host_still_uses_tcp(monkeypatch: pytest.MonkeyPatch) -> None:
    from doca_py.emulated import rdma as emu
    with rig() as (dev, pe, inv):
        a = make_side(dev, pe)
        a.rdma.start()
        emu.configure(host_id=f"elsewhere-{uuid.uuid4()}")  # contexts started from now on
        try:
            b = make_side(dev, pe)
            b.rdma.start()
        finally:
            emu.configure(host_id="")
        connect_pair(pe, a, b)
        assert _h(a).tx is None and _h(a).rx is None and not _h(a).same_host
        _recv(inv, b, 0, 4096).submit()
        a.mem[:3] = b"tcp"
        assert run(pe, a, a.rdma.task_send_allocate_init(a.conn, inv.buf_get_by_data(a.mm, a.base, 3))) == ["ok"]
        wait_for(pe, lambda: bool(b.done), "the receive")
        assert bytes(b.done[0][1].get_dst_buf().data_view()) == b"tcp"
        a.rdma.close()
        b.rdma.close()
        inv.close()
        close_side(a)
        close_side(b)


@pytest.mark.parametrize("damage", ["head", "record"])
def test_malformed_ring_content_breaks_that_connection_with_io_failed(
        pair: tuple[d.Pe, d.BufInventory, Side, Side], damage: str) -> None:
    pe, inv, a, b = pair
    assert a.conn is not None and b.conn is not None
    ring = _h(b).rx.ring  # what a hostile sender controls
    if damage == "head":
        ring.head.value = ring.head.value + ring.size * 3
    else:
        ring.data[ring.tail.value & ring.mask:][:16] = bytes([0xFF]) * 16  # kind 255, length 4 GiB
        ring.head.value = ring.tail.value + 32
    wait_for(pe, lambda: bool(b.events) and b.events[-1][0] == "disconnection", "the connection to go down")
    assert _h(b).err == ErrorCode.IO_FAILED and "malformed" in _h(b).err_reason
    # Work on the broken connection fails at once; the process is fine.
    assert run(pe, b, b.rdma.task_send_allocate_init(b.conn, None)) == ["err"]


@pytest.mark.multiprocess
def test_a_peer_that_dies_with_sends_queued_in_the_ring_resets_them() -> None:
    from ..rdma.test_rdma_multiprocess import Parent, Peer

    peer = Peer({"DOCA_PY_RDMA_SHM": "1"})
    try:
        with rig(128) as (dev, pe, inv):
            par = Parent(dev, pe, inv, peer)
            s = par.side
            assert s.conn is not None and s.conn._h.tx is not None  # same host: the ring
            peer.send("hang")  # no receive posted: the sends stay queued in the ring (RNR window 6.4 s)
            sends = [s.rdma.task_send_imm_allocate_init(s.conn, None, i) for i in range(12)]
            for t in sends:
                t.submit()
            wait_for(pe, lambda: s.conn is not None and s.conn._h.tx.prod.records and not s.conn._h.tx.backlog,
                     "the sends to be in the ring")
            peer.kill()
            wait_for(pe, lambda: len(s.done) == len(sends), "the sends to fail")
            # The first failure stops the ctx, which flushes the others (IO_FAILED); none succeeded.
            assert {k for k, _ in s.done} == {"err"}
            assert ErrorCode.CONNECTION_RESET in {t.get_status() for t in sends}
            wait_for(pe, lambda: ("disconnection", s.conn) in s.events, "disconnection callback")
            for t in sends:
                t.free()
            par.close()
    finally:
        peer.kill()
