"""Same-host RDMA send/receive over the shared-memory rings (doca_py.emulated.rdma.shm, .ring_poll): the DOCA rules
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


@pytest.fixture
def paths(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of the ring's general paths: records the receiver matched one by one (``rx``), sends the
    sender queued (``tx``). The one-record fast paths count nothing."""
    from doca_py.emulated.rdma import ring_poll, shm

    n = {"rx": 0, "tx": 0}
    record, queue = ring_poll.RdmaPoller._record, shm.ShmTx._queue

    def _record(self: Any, *args: Any) -> bool:
        n["rx"] += 1
        return record(self, *args)

    def _queue(self: Any, *args: Any) -> None:
        n["tx"] += 1
        queue(self, *args)
    monkeypatch.setattr(ring_poll.RdmaPoller, "_record", _record)
    monkeypatch.setattr(shm.ShmTx, "_queue", _queue)
    return n


def _side_pair(dev: d.Dev, pe: d.Pe, list_len: int = 1) -> tuple[Side, Side]:
    a, b = make_side(dev, pe, num=256), make_side(dev, pe, num=256)
    a.rdma.set_max_send_buf_list_len(list_len)
    b.rdma.task_receive_set_dst_buf_list_len(list_len)
    connect_pair(pe, a, b)
    return a, b


def test_one_record_sends_into_one_buffer_receives_take_the_fast_path(
        pair: tuple[d.Pe, d.BufInventory, Side, Side], paths: dict[str, int]) -> None:
    from doca_py.rdma import RdmaOpcode

    pe, inv, a, b = pair
    assert a.conn is not None
    a.mem[:64] = bytes(range(64))
    recvs = [_recv(inv, b, i, 4096) for i in range(3)] + [b.rdma.task_receive_allocate_init(None)]
    for r in recvs:
        r.submit()
    # Posted before any send is written: else, with launches shuffled, a send written first and a
    # progress() slower than the 5 ms nudge (a loaded machine) let the receiver's I/O thread find the
    # record with no receive posted, and the general path (RNR) takes it.
    pe.progress()
    src = inv.buf_get_by_data(a.mm, a.base, 64)
    sends = [a.rdma.task_send_allocate_init(a.conn, src), a.rdma.task_send_imm_allocate_init(a.conn, src, 77),
             a.rdma.task_send_allocate_init(a.conn, None), a.rdma.task_send_imm_allocate_init(a.conn, None, 5)]
    assert run(pe, a, *sends) == ["ok"] * 4
    wait_for(pe, lambda: len(b.done) == 4, "the receives")
    assert [k for k, _ in b.done] == ["ok"] * 4
    got = [(r.get_result_opcode(), r.get_result_len(), r.get_result_immediate_data() if i in (1, 3) else None,
            bytes(r.get_dst_buf().data_view()) if i < 3 else None) for i, r in enumerate(recvs)]
    assert got == [(RdmaOpcode.RECV_SEND, 64, None, bytes(range(64))),
                   (RdmaOpcode.RECV_SEND_WITH_IMM, 64, 77, bytes(range(64))),
                   (RdmaOpcode.RECV_SEND, 0, None, b""),
                   (RdmaOpcode.RECV_SEND_WITH_IMM, 0, 5, None)]
    assert recvs[0].get_result_rdma_connection() is b.conn
    assert paths == {"rx": 0, "tx": 0}


def test_chained_buffers_take_the_general_path_on_both_sides(paths: dict[str, int]) -> None:
    with rig(64) as (dev, pe, inv):
        a, b = _side_pair(dev, pe, list_len=4)
        assert a.conn is not None
        a.mem[:6] = b"abcdef"
        head = inv.buf_get_by_data(a.mm, a.base, 2)
        head.chain_list(inv.buf_get_by_data(a.mm, a.base + 4, 2))  # "ab" + "ef": two segments
        d1, d2 = inv.buf_get_by_addr(b.mm, b.base, 1), inv.buf_get_by_addr(b.mm, b.base + 10, 8)
        d1.chain_list(d2)  # a chained receive
        r = b.rdma.task_receive_allocate_init(d1)
        r.submit()
        assert run(pe, a, a.rdma.task_send_allocate_init(a.conn, head)) == ["ok"]
        wait_for(pe, lambda: bool(b.done), "the receive")
        assert bytes(b.mem[0:1]) + bytes(b.mem[10:13]) == b"abef" and r.get_result_len() == 4
        assert paths == {"rx": 1, "tx": 1}
        # A one-segment send into the chained receive: the sender's fast path, the receiver's general one.
        d1.reset_data_len()
        d2.reset_data_len()
        r.submit()
        assert run(pe, a, a.rdma.task_send_allocate_init(a.conn, inv.buf_get_by_data(a.mm, a.base + 2, 3))) == ["ok"]
        wait_for(pe, lambda: len(b.done) == 2, "the receive")
        assert bytes(b.mem[0:1]) + bytes(b.mem[10:12]) == b"cde" and r.get_result_len() == 3
        assert paths == {"rx": 2, "tx": 1}
        a.rdma.close()
        b.rdma.close()
        inv.close()
        close_side(a)
        close_side(b)


def test_write_with_immediate_notices_and_sends_share_the_receives_in_order(paths: dict[str, int]) -> None:
    """The notice of a write-with-immediate takes the general path between fast sends; order holds."""
    from doca_py.rdma import RdmaOpcode

    with rig(64) as (dev, pe, inv):
        a, b = _side_pair(dev, pe)
        assert a.conn is not None
        remote = d.Mmap.create_from_export(b.mm.export_rdma(dev), dev)
        rbase = remote.get_memrange()[0]
        a.mem[:5] = b"12345"
        src = inv.buf_get_by_data(a.mm, a.base, 5)
        recvs = [_recv(inv, b, i, 64) for i in range(3)]
        for r in recvs:
            r.submit()
        wdst = inv.buf_get_by_addr(remote, rbase + 300, 5)
        tasks = [a.rdma.task_send_imm_allocate_init(a.conn, src, 1),
                 a.rdma.task_write_imm_allocate_init(a.conn, src, wdst, 2),
                 a.rdma.task_send_imm_allocate_init(a.conn, src, 3)]
        assert run(pe, a, *tasks) == ["ok"] * 3
        wait_for(pe, lambda: len(b.done) == 3, "the receives")
        assert [(r.get_result_opcode(), r.get_result_immediate_data(), r.get_result_len(),
                 bytes(r.get_dst_buf().data_view())) for r in recvs] == [
            (RdmaOpcode.RECV_SEND_WITH_IMM, 1, 5, b"12345"), (RdmaOpcode.RECV_WRITE_WITH_IMM, 2, 5, b""),
            (RdmaOpcode.RECV_SEND_WITH_IMM, 3, 5, b"12345")]
        assert bytes(b.mem[300:305]) == b"12345"
        assert paths == {"rx": 1, "tx": 1}
        a.rdma.close()
        b.rdma.close()
        inv.close()
        remote.close()
        close_side(a)
        close_side(b)


def test_a_receive_too_small_fails_it_and_the_send(pair: tuple[d.Pe, d.BufInventory, Side, Side],
                                                      paths: dict[str, int]) -> None:
    pe, inv, a, b = pair
    assert a.conn is not None
    _recv(inv, b, 0, 16).submit()
    send = a.rdma.task_send_allocate_init(a.conn, inv.buf_get_by_data(a.mm, a.base, 64))
    assert run(pe, a, send) == ["err"]
    assert send.get_status() == ErrorCode.IO_FAILED  # the receiver could not take it (not a reset: the
    # status is published before the failed receive stops the receiver's ctx, as on the streams)
    wait_for(pe, lambda: bool(b.done), "the receive")
    assert b.done[0][0] == "err" and b.done[0][1].get_status() == ErrorCode.TOO_BIG  # DOCA's status for it
    assert paths == {"rx": 1, "tx": 0}


def test_a_receive_posted_late_ends_the_stall_and_the_fast_path_resumes(
        pair: tuple[d.Pe, d.BufInventory, Side, Side], paths: dict[str, int]) -> None:
    pe, inv, a, b = pair
    assert a.conn is not None
    for i in range(3):
        a.rdma.task_send_imm_allocate_init(a.conn, None, i).submit()
    wait_for(pe, lambda: _h(b).rx.stall_since > 0, "the first send to wait for a receive")
    for i in range(3):
        _recv(inv, b, i, 64).submit()
    pe.progress()  # posts them
    before = paths["rx"]  # the stalled record, looked at by every poll
    wait_for(pe, lambda: len(b.done) == 3 and len(a.done) == 3, "the completions")
    assert [r.get_result_immediate_data() for _, r in b.done] == [0, 1, 2]
    assert {k for k, _ in a.done} == {k for k, _ in b.done} == {"ok"}
    assert paths["rx"] - before == 1  # the stalled record ends the stall; the two behind it go fast


def test_a_full_ring_queues_sends_behind_it_in_order(monkeypatch: pytest.MonkeyPatch, paths: dict[str, int]) -> None:
    """One-record sends that find the ring full wait in the backlog; later ones queue behind them (not
    past them) until it drains; many times round a small ring, across its wrap padding."""
    from doca_py.emulated.rdma import shm

    monkeypatch.setattr(shm, "RING_SIZE", 4096)
    with rig(512) as (dev, pe, inv):
        a, b = _side_pair(dev, pe)
        assert a.conn is not None
        n, size, window = 600, 600, 32  # 7 records of 624 bytes fill the ring
        for i in range(n):
            a.mem[i * size:(i + 1) * size] = bytes([i & 0xFF]) * size
        recvs = [_recv(inv, b, i, size) for i in range(window)]
        for r in recvs:
            r.submit()
        sends = [a.rdma.task_send_imm_allocate_init(a.conn, inv.buf_get_by_data(a.mm, a.base + i * size, size), i)
                 for i in range(window)]
        nxt = window
        got: list[int] = []
        for t in sends:
            t.submit()
        while len(got) < n:
            wait_for(pe, lambda: bool(a.done) or bool(b.done), "completions")
            while b.done:
                kind, r = b.done.pop(0)
                assert kind == "ok"
                i = r.get_result_immediate_data()
                dst = r.get_dst_buf()
                assert bytes(dst.data_view()) == bytes([i & 0xFF]) * size
                got.append(i)
                dst.reset_data_len()
                r.submit()
            while a.done:
                kind, t = a.done.pop(0)
                assert kind == "ok"
                if nxt < n:
                    src = t.get_src_buf()
                    t.free()
                    src.dec_refcount()
                    a.rdma.task_send_imm_allocate_init(
                        a.conn, inv.buf_get_by_data(a.mm, a.base + nxt * size, size), nxt).submit()
                    nxt += 1
        assert got == list(range(n))
        assert paths["tx"] > 0 and paths["tx"] < n  # some found the ring full; most went straight in
        assert paths["rx"] == 0
        a.rdma.close()
        b.rdma.close()
        inv.close()
        close_side(a)
        close_side(b)


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


def _posted_receive_and_ring(pe: d.Pe, inv: d.BufInventory, b: Side) -> tuple[d.Task, Any, int, int]:
    """A receive posted on *b*, and *b*'s incoming ring with the position and offset where the next record
    goes (for tests that write records by hand)."""
    r = _recv(inv, b, 0, 4096)
    r.submit()
    wait_for(pe, lambda: len(b.rdma._h.posted) == 1, "the receive to be posted")  # noqa: SLF001
    ring = _h(b).rx.ring
    tail = ring.tail.value
    return r, ring, tail, tail & ring.mask


@pytest.mark.parametrize("damage", ["past_head", "too_long"])
def test_a_malformed_send_record_breaks_the_connection_before_taking_a_receive(
        pair: tuple[d.Pe, d.BufInventory, Side, Side], damage: str) -> None:
    """A one-record send whose length the fast path cannot trust: IO_FAILED, and no receive is filled."""
    import struct

    from doca_py.emulated.rdma import shm
    from doca_py.emulated.transport import shmring

    pe, inv, a, b = pair
    r, ring, tail, off = _posted_receive_and_ring(pe, inv, b)
    length = {"past_head": 1000, "too_long": shmring.MAX_RECORD + 16}[damage]
    struct.pack_into("<IBBHII", ring.data, off, length, shm.K_SEND, shm.F_ONE, 0xFFFF, 0, length)
    ring.head.value = tail + 32
    wait_for(pe, lambda: bool(b.events) and b.events[-1][0] == "disconnection", "the connection to go down")
    assert _h(b).err == ErrorCode.IO_FAILED and "malformed" in _h(b).err_reason
    assert not [t for k, t in b.done if k == "ok"]  # no receive was filled from it


def test_sends_before_a_malformed_record_in_the_same_batch_are_delivered(
        pair: tuple[d.Pe, d.BufInventory, Side, Side]) -> None:
    import struct

    from doca_py.emulated.rdma import shm

    pe, inv, a, b = pair
    r, ring, tail, off = _posted_receive_and_ring(pe, inv, b)
    struct.pack_into("<IBBHII4s", ring.data, off, 4, shm.K_SEND, shm.F_ONE, 0xFFFF, 0, 4, b"good")
    struct.pack_into("<IBBHII", ring.data, off + 32, 4, 255, 0, 0, 0, 0)  # an unknown kind
    ring.head.value = tail + 64  # both in one batch
    wait_for(pe, lambda: bool(b.events) and b.events[-1][0] == "disconnection", "the connection to go down")
    assert _h(b).err == ErrorCode.IO_FAILED and "malformed" in _h(b).err_reason
    assert [k for k, _ in b.done] == ["ok"] and bytes(r.get_dst_buf().data_view()) == b"good"


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


def test_a_ring_the_peer_could_resize_is_refused_at_the_handshake() -> None:
    """The rings' sizes are sealed by their creator: a requester refuses a reply whose ring is not
    (the peer could shrink it under our mapping and crash us with SIGBUS), or that is not a ring and
    a doorbell, with CONNECTION_ABORTED before touching the connection."""
    from doca_py.errors import DocaConnectionAborted
    from doca_py.emulated.rdma import shm
    from doca_py.emulated.transport.shmring import Ring

    unsealed = Ring.create(4096, sealed=False)
    try:
        for fds in ([os.dup(unsealed.fd), os.eventfd(0)], [os.eventfd(0)]):
            with pytest.raises(DocaConnectionAborted, match="unusable"):
                shm.attach_tx(None, fds)  # type: ignore[arg-type]  # refused before the connection is used
    finally:
        unsealed.close()
