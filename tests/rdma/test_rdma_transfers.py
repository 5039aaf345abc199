"""Every rdma task type between two contexts of one process, over both emulated paths.

``same``: peers on one host (one-sided access through shared memory); ``cross``: the
host identity is faked per context, so one-sided access travels to the owner over TCP
and the owner validates it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.rdma import RdmaOpcode
from doca_py.types import AccessFlag as A
from doca_py.types import CtxState

from .helpers import PERMS, Side, backing, close_side, connect_pair, make_side, rig, run, wait_for

SENTINEL = b"\xa5" * 64


@dataclasses.dataclass
class Pair:
    dev: d.Dev
    pe: d.Pe
    inv: d.BufInventory
    a: Side
    b: Side
    remote: d.Mmap  # b's memory imported by a

    @property
    def rbase(self) -> int:
        return self.remote.get_memrange()[0]


def _pair(backend: str, mode: str, a_perms: A = PERMS, b_perms: A = PERMS, b_mm: A = PERMS) -> Iterator[Pair]:
    from doca_py.emulated import rdma as emu

    with rig(128) as (dev, pe, inv):
        try:
            emu.configure(host_id="host-a" if mode == "cross" else "")
            a = make_side(dev, pe, perms=a_perms)
            a.rdma.start()
            emu.configure(host_id="host-b" if mode == "cross" else "")
            b = make_side(dev, pe, perms=b_perms, mm_perms=b_mm)
            connect_pair(pe, a, b)
        finally:
            emu.configure(host_id="")
        assert a.conn is not None
        assert backing(a.conn).same_host is (mode == "same")
        remote = d.Mmap.create_from_export(b.mm.export_rdma(dev), dev)
        p = Pair(dev, pe, inv, a, b, remote)
        yield p
        a.rdma.close()
        b.rdma.close()
        inv.close()
        remote.close()
        a.mm.close()
        b.mm.close()


@pytest.fixture(params=["same", "cross"])
def pair(backend: str, request: pytest.FixtureRequest) -> Iterator[Pair]:
    yield from _pair(backend, request.param)


def _recv(p: Pair, side: Side, offset: int, size: int) -> d.Task:
    t = side.rdma.task_receive_allocate_init(p.inv.buf_get_by_addr(side.mm, side.base + offset, size))
    t.submit()
    return t


def test_send_receive_with_and_without_immediate(pair: Pair) -> None:
    p, a, b = pair, pair.a, pair.b
    assert a.conn is not None and b.conn is not None
    r1, r2, r3 = _recv(p, b, 0, 4096), _recv(p, b, 4096, 4096), _recv(p, b, 8192, 16)
    payload = os.urandom(3000)
    a.mem[:3000] = payload
    s1 = a.rdma.task_send_allocate_init(a.conn, p.inv.buf_get_by_data(a.mm, a.base, 3000))
    s2 = a.rdma.task_send_imm_allocate_init(a.conn, p.inv.buf_get_by_data(a.mm, a.base, 10), 0xDEADBEEF)
    s3 = a.rdma.task_send_imm_allocate_init(a.conn, None, 7)  # immediate only
    assert run(p.pe, a, s1, s2, s3) == ["ok"] * 3
    wait_for(p.pe, lambda: len(b.done) == 3, "receives")
    assert [k for k, _ in b.done] == ["ok"] * 3
    assert bytes(b.mem[:3000]) == payload and r1.get_result_len() == 3000  # type: ignore[attr-defined]
    assert r1.get_result_opcode() is RdmaOpcode.RECV_SEND  # type: ignore[attr-defined]
    assert r1.get_dst_buf().get_data_len() == 3000  # type: ignore[attr-defined]
    assert (r2.get_result_opcode(), r2.get_result_immediate_data(), r2.get_result_len()) == \
        (RdmaOpcode.RECV_SEND_WITH_IMM, 0xDEADBEEF, 10)  # type: ignore[attr-defined]
    assert bytes(b.mem[4096:4106]) == payload[:10]
    assert (r3.get_result_opcode(), r3.get_result_immediate_data(), r3.get_result_len()) == \
        (RdmaOpcode.RECV_SEND_WITH_IMM, 7, 0)  # type: ignore[attr-defined]
    assert r1.get_result_rdma_connection() is b.conn  # type: ignore[attr-defined]
    # The other direction, on the same connection pair.
    _recv(p, a, 1 << 20, 64)
    b.mem[100:105] = b"back!"
    assert run(p.pe, b, b.rdma.task_send_allocate_init(b.conn, p.inv.buf_get_by_data(b.mm, b.base + 100, 5))) \
        == ["ok"]
    wait_for(p.pe, lambda: a.done[-1][1].get_status() == 0 and len(a.done) == 4, "receive")
    assert bytes(a.mem[1 << 20:(1 << 20) + 5]) == b"back!"


def test_result_len_reader_reads_each_completed_receive(pair: Pair) -> None:
    p, a, b = pair, pair.a, pair.b
    assert a.conn is not None
    r = _recv(p, b, 0, 4096)
    reader = r.result_len_reader()  # type: ignore[attr-defined]  # bound once, read per message
    for size in (3000, 10, 64):
        s = a.rdma.task_send_allocate_init(a.conn, p.inv.buf_get_by_data(a.mm, a.base, size))
        n = len(b.done)
        assert run(p.pe, a, s) == ["ok"]
        wait_for(p.pe, lambda: len(b.done) == n + 1, "receive")
        assert b.done[-1][0] == "ok"
        assert reader() == r.get_result_len() == size  # type: ignore[attr-defined]
        s.free()
        r.get_dst_buf().reset_data_len()  # type: ignore[attr-defined]
        r.submit()


def test_large_messages_and_transfers_stream_into_place(pair: Pair) -> None:
    """Payloads bigger than the stream buffer go straight into their destination."""
    p, a, b = pair, pair.a, pair.b
    assert a.conn is not None
    n = 1 << 20
    data = os.urandom(n)
    a.mem[:n] = data
    _recv(p, b, 0, n)
    src = p.inv.buf_get_by_data(a.mm, a.base, n)
    assert run(p.pe, a, a.rdma.task_send_allocate_init(a.conn, src)) == ["ok"]
    wait_for(p.pe, lambda: b.done, "receive")
    assert bytes(b.mem[:n]) == data
    b.mem[:n] = bytes(n)
    dst = p.inv.buf_get_by_addr(p.remote, p.rbase + 4096, n)
    assert run(p.pe, a, a.rdma.task_write_allocate_init(a.conn, src, dst)) == ["ok"]
    assert bytes(b.mem[4096:4096 + n]) == data and dst.get_data_len() == n
    back = p.inv.buf_get_by_addr(a.mm, a.base + n, n)
    rsrc = p.inv.buf_get_by_data(p.remote, p.rbase + 4096, n)
    t = a.rdma.task_read_allocate_init(a.conn, rsrc, back)
    assert run(p.pe, a, t) == ["ok"]
    assert bytes(a.mem[n:2 * n]) == data and back.get_data_len() == n


def test_write_read_and_write_imm_are_byte_exact(pair: Pair) -> None:
    p, a, b = pair, pair.a, pair.b
    assert a.conn is not None
    b.mem[:200] = bytes(range(200))
    a.mem[:5] = b"12345"
    src = p.inv.buf_get_by_data(a.mm, a.base, 5)
    dst = p.inv.buf_get_by_addr(p.remote, p.rbase + 50, 100)
    assert run(p.pe, a, a.rdma.task_write_allocate_init(a.conn, src, dst)) == ["ok"]
    assert bytes(b.mem[45:60]) == bytes(range(45, 50)) + b"12345" + bytes(range(55, 60))
    assert dst.get_data_len() == 5
    # A second write lands after the destination's data (DOCA's destination rule).
    assert run(p.pe, a, a.rdma.task_write_allocate_init(a.conn, src, dst)) == ["ok"]
    assert bytes(b.mem[50:60]) == b"1234512345"
    rsrc = p.inv.buf_get_by_data(p.remote, p.rbase + 10, 20)
    ldst = p.inv.buf_get_by_addr(a.mm, a.base + 1000, 64)
    assert run(p.pe, a, a.rdma.task_read_allocate_init(a.conn, rsrc, ldst)) == ["ok"]
    assert bytes(ldst.data_view()) == bytes(range(10, 30))
    r = _recv(p, b, 1 << 20, 64)
    wdst = p.inv.buf_get_by_addr(p.remote, p.rbase + 300, 5)
    assert run(p.pe, a, a.rdma.task_write_imm_allocate_init(a.conn, src, wdst, 0x01020304)) == ["ok"]
    wait_for(p.pe, lambda: b.done, "receive")
    assert bytes(b.mem[300:305]) == b"12345"
    assert (r.get_result_opcode(), r.get_result_immediate_data(), r.get_result_len()) == \
        (RdmaOpcode.RECV_WRITE_WITH_IMM, 0x01020304, 5)  # type: ignore[attr-defined]
    assert r.get_dst_buf().get_data_len() == 0  # type: ignore[attr-defined]  # the bytes went to the write target


def test_atomics(pair: Pair) -> None:
    p, a, b = pair, pair.a, pair.b
    assert a.conn is not None
    b.mem[64:72] = (41).to_bytes(8, "little")
    cell = p.inv.buf_get_by_data(p.remote, p.rbase + 64, 8)
    res = p.inv.buf_get_by_addr(a.mm, a.base, 64)
    assert run(p.pe, a, a.rdma.task_atomic_fetch_add_allocate_init(a.conn, cell, res, 1)) == ["ok"]
    assert int.from_bytes(b.mem[64:72], "little") == 42 and int.from_bytes(a.mem[:8], "little") == 41
    assert run(p.pe, a, a.rdma.task_atomic_cmp_swp_allocate_init(a.conn, cell, res, 42, 7)) == ["ok"]
    assert run(p.pe, a, a.rdma.task_atomic_cmp_swp_allocate_init(a.conn, cell, res, 42, 9)) == ["ok"]
    assert int.from_bytes(b.mem[64:72], "little") == 7
    assert int.from_bytes(a.mem[8:16], "little") == 42 and int.from_bytes(a.mem[16:24], "little") == 7


def test_chained_source_and_destination_lists(pair: Pair) -> None:
    p, a, b = pair, pair.a, pair.b
    for s in (a, b):
        s.rdma.stop()
    wait_for(p.pe, lambda: a.rdma.get_state() == b.rdma.get_state() == CtxState.IDLE, "IDLE")
    a.rdma.set_max_send_buf_list_len(4)
    b.rdma.task_receive_set_dst_buf_list_len(4)
    mode_same = a.conn is not None and backing(a.conn).same_host
    from doca_py.emulated import rdma as emu

    try:
        emu.configure(host_id="" if mode_same else "host-a")
        a.rdma.start()
        emu.configure(host_id="" if mode_same else "host-b")
        connect_pair(p.pe, a, b)
    finally:
        emu.configure(host_id="")
    assert a.conn is not None
    a.mem[:6] = b"abcdef"
    head = p.inv.buf_get_by_data(a.mm, a.base, 2)
    head.chain_list(p.inv.buf_get_by_data(a.mm, a.base + 4, 2))
    d1 = p.inv.buf_get_by_addr(b.mm, b.base, 1)
    d1.chain_list(p.inv.buf_get_by_addr(b.mm, b.base + 10, 8))
    r = b.rdma.task_receive_allocate_init(d1)
    r.submit()
    assert run(p.pe, a, a.rdma.task_send_allocate_init(a.conn, head)) == ["ok"]
    wait_for(p.pe, lambda: b.done, "receive")
    assert bytes(b.mem[0:1]) + bytes(b.mem[10:13]) == b"abef" and r.get_result_len() == 4  # type: ignore[attr-defined]
    wdst = p.inv.buf_get_by_addr(p.remote, p.rbase + 100, 16)
    assert run(p.pe, a, a.rdma.task_write_allocate_init(a.conn, head, wdst)) == ["ok"]
    assert bytes(b.mem[100:104]) == b"abef"


# -- refusals: nothing is touched ----------------------------------------------------------------------
def _sentinel(p: Pair) -> None:
    p.b.mem[:4096] = SENTINEL * 64


def _untouched(p: Pair) -> None:
    assert bytes(p.b.mem[:4096]) == SENTINEL * 64


def test_out_of_range_access_is_refused(pair: Pair) -> None:
    p, a = pair, pair.a
    assert a.conn is not None
    _sentinel(p)
    a.mem[:64] = b"\x11" * 64
    src = p.inv.buf_get_by_data(a.mm, a.base, 64)
    dst = p.inv.buf_get_by_addr(p.remote, p.rbase, 64)
    backing(dst).head = backing(dst).data = p.rbase + (2 << 20) - 16  # a forged descriptor
    t = a.rdma.task_write_allocate_init(a.conn, src, dst)
    assert run(p.pe, a, t) == ["err"] and t.get_status() == e.ErrorCode.INVALID_VALUE
    _untouched(p)


def test_write_without_permission_is_refused(backend: str) -> None:
    for mode in ("same", "cross"):
        for b_perms, b_mm in ((PERMS, A.LOCAL_READ_WRITE | A.RDMA_READ),  # mmap exported read-only
                              (A.LOCAL_READ_WRITE | A.RDMA_READ, PERMS)):  # peer ctx grants no RDMA_WRITE
            for p in _pair(backend, mode, b_perms=b_perms, b_mm=b_mm):
                assert p.a.conn is not None
                _sentinel(p)
                src = p.inv.buf_get_by_data(p.a.mm, p.a.base, 64)
                dst = p.inv.buf_get_by_addr(p.remote, p.rbase, 64)
                t = p.a.rdma.task_write_allocate_init(p.a.conn, src, dst)
                assert run(p.pe, p.a, t) == ["err"], (mode, b_perms, b_mm)
                assert t.get_status() == e.ErrorCode.NOT_PERMITTED
                _untouched(p)


def test_forged_mmap_key_is_refused_by_the_owner(backend: str) -> None:
    """Cross-host: the requester's blob names a key the owner never issued."""
    for op in ("write", "read"):
        for p in _pair(backend, "cross"):
            assert p.a.conn is not None
            _sentinel(p)
            h = backing(p.remote)
            h.blob = dataclasses.replace(h.blob, key=bytes(16))
            local = p.inv.buf_get_by_addr(p.a.mm, p.a.base + 4096, 64)
            if op == "write":
                t: d.Task = p.a.rdma.task_write_allocate_init(p.a.conn, p.inv.buf_get_by_data(p.a.mm, p.a.base, 64),
                                                              p.inv.buf_get_by_addr(p.remote, p.rbase, 64))
            else:
                t = p.a.rdma.task_read_allocate_init(p.a.conn, p.inv.buf_get_by_data(p.remote, p.rbase, 64), local)
            assert run(p.pe, p.a, t) == ["err"] and t.get_status() == e.ErrorCode.NOT_PERMITTED
            assert bytes(p.a.mem[4096:4160]) == bytes(64) and local.get_data_len() == 0
            _untouched(p)


def test_revoked_export_is_refused(pair: Pair) -> None:
    p, a = pair, pair.a
    assert a.conn is not None
    src = p.inv.buf_get_by_data(a.mm, a.base, 8)
    dst = p.inv.buf_get_by_addr(p.remote, p.rbase, 8)
    p.b.mm.stop()  # revokes every export of b's memory
    t = a.rdma.task_write_allocate_init(a.conn, src, dst)
    assert run(p.pe, a, t) == ["err"] and t.get_status() == e.ErrorCode.NOT_PERMITTED


def test_send_without_posted_receive_fails_after_the_rnr_window(backend: str) -> None:
    from doca_py.emulated import rdma as emu

    for mode in ("same", "cross"):
        emu.configure(rnr_timeout=0.05)
        try:
            for p in _pair(backend, mode):
                assert p.a.conn is not None
                src = p.inv.buf_get_by_data(p.a.mm, p.a.base, 8)
                t = p.a.rdma.task_send_allocate_init(p.a.conn, src)
                assert run(p.pe, p.a, t) == ["err"] and t.get_status() == e.ErrorCode.TIME_OUT
                assert p.a.rdma.get_state() == CtxState.STOPPING  # a failed task stops its ctx, as on hardware
                assert p.b.done == []
        finally:
            emu.configure(rnr_timeout=0)


def test_receive_posted_late_gets_the_stalled_message(pair: Pair) -> None:
    p, a, b = pair, pair.a, pair.b
    assert a.conn is not None
    a.mem[:4] = b"late"
    s = a.rdma.task_send_allocate_init(a.conn, p.inv.buf_get_by_data(a.mm, a.base, 4))
    s.submit()
    p.pe.progress()  # the send leaves; the peer has no receive posted yet
    _recv(p, b, 0, 64)
    wait_for(p.pe, lambda: a.done and b.done, "completions")
    assert a.done[0][0] == b.done[0][0] == "ok" and bytes(b.mem[:4]) == b"late"


def test_receive_too_small_fails_both_sides(pair: Pair) -> None:
    p, a, b = pair, pair.a, pair.b
    assert a.conn is not None
    r = _recv(p, b, 0, 4)
    s = a.rdma.task_send_allocate_init(a.conn, p.inv.buf_get_by_data(a.mm, a.base, 8))
    assert run(p.pe, a, s) == ["err"]
    wait_for(p.pe, lambda: b.done, "receive")
    assert b.done[0][0] == "err" and r.get_status() != e.ErrorCode.SUCCESS


def test_many_messages_in_flight_arrive_in_order(pair: Pair) -> None:
    p, a, b = pair, pair.a, pair.b
    assert a.conn is not None
    n = 16
    recvs = [_recv(p, b, i * 64, 64) for i in range(n)]
    for i in range(n):
        a.mem[i * 64:i * 64 + 8] = i.to_bytes(8, "little")
    sends = [a.rdma.task_send_allocate_init(a.conn, p.inv.buf_get_by_data(a.mm, a.base + i * 64, 8))
             for i in range(n)]
    assert run(p.pe, a, *sends) == ["ok"] * n
    wait_for(p.pe, lambda: len(b.done) == n, "receives")
    assert [int.from_bytes(b.mem[i * 64:i * 64 + 8], "little") for i in range(n)] == list(range(n))
    assert all(r.get_result_len() == 8 for r in recvs)  # type: ignore[attr-defined]


@pytest.mark.parametrize("round_", range(8))
def test_a_send_the_receiver_got_succeeds_though_it_disconnects_in_its_receive_callback(round_: int) -> None:
    """The receiver's side acknowledges a message before its software sees it: a receive callback that
    disconnects at once must not turn the sender's delivered send into CONNECTION_RESET."""
    with rig() as (dev, pe, inv):
        a, b = make_side(dev, pe), make_side(dev, pe)
        got: list[bytes] = []

        def received(t: d.Task, u: object, c: object) -> None:
            got.append(bytes(t.get_dst_buf().data_view()))  # type: ignore[attr-defined]
            assert b.conn is not None
            b.conn.disconnect()

        b.rdma.task_receive_set_conf(received, b.err, 16)
        connect_pair(pe, a, b)
        assert a.conn is not None
        b.rdma.task_receive_allocate_init(inv.buf_get_by_addr(b.mm, b.base, 64)).submit()
        a.mem[:5] = b"bye!\n"
        assert run(pe, a, a.rdma.task_send_allocate_init(a.conn, inv.buf_get_by_data(a.mm, a.base, 5))) == ["ok"]
        assert got == [b"bye!\n"]
        a.rdma.close()
        b.rdma.close()
        inv.close()
        close_side(a)
        close_side(b)
