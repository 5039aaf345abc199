"""The DOCA 3.x rules of the emulated rdma ctx, and the 2.6 rules where they differ.

* 3.x: ``start`` and one ``progress`` make the ctx RUNNING without any connection;
  export/connect happen while RUNNING (the 3.x samples: from the RUNNING state
  callback) or right after start (the storage apps), and a task submitted before the
  peer connected waits for it, as on an RC queue pair, within the connect window.
* 2.6: the ctx stays STARTING until ``connect`` was called and ``progress`` ran.
* Both: a second connect is BAD_STATE, ``set_permissions`` takes no PCI flags, the
  remote side of read/write is the head of a chain, the work of a task runs in
  ``progress`` (not at submit), every local buffer must be reachable by the ctx's
  device, and the task buffers are pinned in strict mode.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.rdma import Rdma
from doca_py.types import AccessFlag as A
from doca_py.types import CtxState

from .helpers import (DEADLINE, DPU_PCI, PERMS, Side, backing, close_side, has_connection_objects, make_side, reason,
                      rig, run, wait_for)
from .test_rdma_transfers import Pair, _pair

HOST_PCI = "3b:00.0"
V26, V30, V32 = (2, 6), (3, 0), (3, 2)


@pytest.fixture
def env(backend: str) -> Iterator[tuple[d.Dev, d.Pe, d.BufInventory]]:
    with rig() as r:
        yield r


def _present(monkeypatch: pytest.MonkeyPatch, ver: tuple[int, int], backend: str) -> None:
    """Make the emulated backend follow the rules of DOCA *ver* (read by each ctx at start). Natively the rules
    are the loaded DOCA's: another version is skipped (the native half of tests/conformance runs over a libdoca
    built for 2.6 in `tasks.py test`'s pass at 2.6)."""
    if backend == "native":
        from doca_py.native import loader

        have = loader.runtime_version()[:2]
        if have != ver:
            pytest.skip(f"natively DOCA {have[0]}.{have[1]}'s rules apply, not {ver[0]}.{ver[1]}'s")
        return
    from doca_py.emulated import version

    monkeypatch.setattr(version, "VERSION", ver)


@pytest.fixture(params=[V26, V32], ids=["doca2.6", "doca3.2"])
def ver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, backend: str) -> tuple[int, int]:
    _present(monkeypatch, request.param, backend)
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=[V30, V32], ids=["doca3.0", "doca3.2"])
def ver3(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, backend: str) -> tuple[int, int]:
    _present(monkeypatch, request.param, backend)
    return request.param  # type: ignore[no-any-return]


def _idle_rounds(pe: d.Pe, seconds: float = 0.2) -> None:
    """Progress for a while (the ctx gets every chance to change state)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pe.wait(0.02)


def _teardown(inv: d.BufInventory, *sides: Side, mmaps: tuple[d.Mmap, ...] = ()) -> None:
    """Close the contexts (flushing), then the inventory (its bufs), then the maps."""
    for s in sides:
        s.rdma.close()
    inv.close()
    for m in mmaps:
        m.close()
    for s in sides:
        s.mm.close()


@pytest.fixture
def short_window() -> Iterator[float]:
    from doca_py.emulated import rdma as emu

    emu.configure(connect_window=0.3)
    try:
        yield 0.3
    finally:
        emu.configure(connect_window=0)


# -- rule 1: the state machine -------------------------------------------------------------------------
def test_running_needs_no_connection_in_3x_and_connect_plus_progress_in_26(
        ver: tuple[int, int], env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    dev, pe, inv = env
    a, b = make_side(dev, pe), make_side(dev, pe)
    states: list[tuple[CtxState, CtxState]] = []
    a.rdma.set_state_changed_cb(lambda u, c, p, n: states.append((p, n)))
    assert a.rdma.start() is CtxState.STARTING
    # Right after start (before progress) export works; task allocation does not yet.
    blob_a, a.conn = a.rdma.export()
    with pytest.raises(e.DocaBadState):
        a.rdma.task_receive_allocate_init(None)
    _idle_rounds(pe)
    if ver >= (3, 0):
        assert a.rdma.get_state() is CtxState.RUNNING  # no connect was called
        assert states == [(CtxState.IDLE, CtxState.STARTING), (CtxState.STARTING, CtxState.RUNNING)]
        t = a.rdma.task_receive_allocate_init(inv.buf_get_by_addr(a.mm, a.base, 64))
        t.submit()  # a receive needs no connection
        _idle_rounds(pe, 0.05)
        assert a.done == [] and a.rdma.stop() is CtxState.STOPPING
        wait_for(pe, lambda: a.done, "flushed receive")
        assert t.get_status() == e.ErrorCode.IO_FAILED
        t.get_dst_buf().dec_refcount()  # type: ignore[union-attr]
        t.free()
        wait_for(pe, lambda: a.rdma.get_state() is CtxState.IDLE, "IDLE")
    else:
        assert a.rdma.get_state() is CtxState.STARTING and states == [(CtxState.IDLE, CtxState.STARTING)]
        b.rdma.start()
        blob_b, b.conn = b.rdma.export()
        _idle_rounds(pe)
        assert a.rdma.get_state() is b.rdma.get_state() is CtxState.STARTING  # exported, not connected
        a.rdma.connect(blob_b, a.conn)
        assert a.rdma.get_state() is CtxState.STARTING  # until progress runs
        wait_for(pe, lambda: a.rdma.get_state() is CtxState.RUNNING, "RUNNING after connect")
        assert b.rdma.get_state() is CtxState.STARTING  # b has not called connect (its peer connected to it)
        assert states[-1] == (CtxState.STARTING, CtxState.RUNNING)
    _teardown(inv, a, b)


def test_export_and_connect_from_the_running_callback_then_submit(ver3: tuple[int, int], backend: str) -> None:
    """The DOCA 3.x samples' order, two threads with a Pe each: in the RUNNING state callback,
    export, swap blobs out of band, connect, and submit right after connect."""
    swap: dict[str, queue.Queue[bytes]] = {"req": queue.Queue(), "resp": queue.Queue(), "mmap": queue.Queue()}
    out: dict[str, Any] = {}
    payload = b"written before the send" + bytes(9)

    def requester(dev: d.Dev) -> None:
        with d.Pe() as pe, d.BufInventory(16) as inv:
            s = make_side(dev, pe)
            remote: list[d.Mmap] = []

            def on_state(u: Any, ctx: Any, prev: CtxState, nxt: CtxState) -> None:
                if nxt is not CtxState.RUNNING:
                    return
                blob, s.conn = s.rdma.export()
                swap["req"].put(blob)
                s.rdma.connect(swap["resp"].get(timeout=DEADLINE), s.conn)
                # Submitted right after connect: the peer may not have connected nor posted its receive.
                rm = d.Mmap.create_from_export(swap["mmap"].get(timeout=DEADLINE), dev)
                remote.append(rm)
                s.mem[:len(payload)] = payload
                s.mem[4096:4100] = b"done"
                s.rdma.task_write_allocate_init(s.conn, inv.buf_get_by_data(s.mm, s.base, len(payload)),
                                                inv.buf_get_by_addr(rm, rm.get_memrange()[0], 4096)).submit()
                s.rdma.task_send_allocate_init(s.conn, inv.buf_get_by_data(s.mm, s.base + 4096, 4)).submit()

            s.rdma.set_state_changed_cb(on_state)
            s.rdma.start()
            wait_for(pe, lambda: len(s.done) == 2, "write and send completions")
            out["requester"] = [(k, t.get_status()) for k, t in s.done]
            assert s.rdma.stop() is CtxState.STOPPING
            for _, t in s.done:
                for b in (t.get_src_buf(), getattr(t, "get_dst_buf", lambda: None)()):
                    if b is not None:
                        b.dec_refcount()
                t.free()
            wait_for(pe, lambda: s.rdma.get_state() is CtxState.IDLE, "IDLE")
            for rm in remote:
                rm.close()
            close_side(s)

    def responder(dev: d.Dev) -> None:
        with d.Pe() as pe, d.BufInventory(16) as inv:
            s = make_side(dev, pe)
            swap["mmap"].put(s.mm.export_rdma(dev))

            def on_state(u: Any, ctx: Any, prev: CtxState, nxt: CtxState) -> None:
                if nxt is not CtxState.RUNNING:
                    return
                blob, s.conn = s.rdma.export()
                swap["resp"].put(blob)
                s.rdma.connect(swap["req"].get(timeout=DEADLINE), s.conn)
                s.rdma.task_receive_allocate_init(inv.buf_get_by_addr(s.mm, s.base + (1 << 20), 64)).submit()

            s.rdma.set_state_changed_cb(on_state)
            s.rdma.start()
            wait_for(pe, lambda: s.done, "receive")
            kind, t = s.done[0]
            # RC order: the write issued before the send is visible when the send arrives.
            out["responder"] = (kind, t.get_status(), bytes(t.get_dst_buf().data_view()),
                                bytes(s.mem[:len(payload)]), t.get_result_rdma_connection() is s.conn)
            t.get_dst_buf().dec_refcount()
            t.free()
            s.rdma.stop()
            wait_for(pe, lambda: s.rdma.get_state() is CtxState.IDLE, "IDLE")
            close_side(s)

    errors: list[BaseException] = []

    def guarded(fn: Any, dev: d.Dev) -> None:
        try:
            fn(dev)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    with d.Dev.open_by_pci_addr(DPU_PCI) as dev:
        threads = [threading.Thread(target=guarded, args=(fn, dev)) for fn in (responder, requester)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(2 * DEADLINE)
        assert not any(th.is_alive() for th in threads), "a side hung"
        if errors:
            raise errors[0]
    assert out["requester"] == [("ok", e.ErrorCode.SUCCESS)] * 2
    assert out["responder"] == ("ok", e.ErrorCode.SUCCESS, b"done", payload, True)


def test_storage_app_order_connect_before_running(ver3: tuple[int, int], env: tuple[d.Dev, d.Pe, d.BufInventory]) \
        -> None:
    """The 3.2 storage apps: export and connect right after start (STARTING), then poll RUNNING."""
    dev, pe, inv = env
    a, b = make_side(dev, pe), make_side(dev, pe)
    for s in (a, b):
        assert s.rdma.start() is CtxState.STARTING
    blob_a, a.conn = a.rdma.export()
    blob_b, b.conn = b.rdma.export()
    a.rdma.connect(blob_b, a.conn)
    b.rdma.connect(blob_a, b.conn)
    assert a.rdma.get_state() is b.rdma.get_state() is CtxState.STARTING
    wait_for(pe, lambda: a.rdma.get_state() is b.rdma.get_state() is CtxState.RUNNING, "RUNNING")
    r = b.rdma.task_receive_allocate_init(inv.buf_get_by_addr(b.mm, b.base, 64))
    r.submit()
    a.mem[:3] = b"abc"
    assert run(pe, a, a.rdma.task_send_allocate_init(a.conn, inv.buf_get_by_data(a.mm, a.base, 3))) == ["ok"]
    wait_for(pe, lambda: b.done, "receive")
    assert bytes(b.mem[:3]) == b"abc"
    _teardown(inv, a, b)


def _half_connected(dev: d.Dev, pe: d.Pe) -> tuple[Side, Side, bytes]:
    """*a* connected to *b*'s export; *b* never connects back. Returns b's connection blob."""
    a, b = make_side(dev, pe), make_side(dev, pe)
    a.rdma.start()
    b.rdma.start()
    _, a.conn = a.rdma.export()
    blob_b, b.conn = b.rdma.export()
    a.rdma.connect(blob_b, a.conn)
    wait_for(pe, lambda: a.rdma.get_state() is CtxState.RUNNING, "RUNNING")
    return a, b, blob_b


def test_task_waits_for_the_peer_and_runs_once_it_connects(
        ver: tuple[int, int], env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    dev, pe, inv = env
    a, b = make_side(dev, pe), make_side(dev, pe)
    a.rdma.start()
    b.rdma.start()
    blob_a, a.conn = a.rdma.export()
    blob_b, b.conn = b.rdma.export()
    a.rdma.connect(blob_b, a.conn)
    wait_for(pe, lambda: a.rdma.get_state() is CtxState.RUNNING, "RUNNING")
    remote = d.Mmap.create_from_export(b.mm.export_rdma(dev), dev)
    a.mem[:5] = b"early"
    w = a.rdma.task_write_allocate_init(a.conn, inv.buf_get_by_data(a.mm, a.base, 5),
                                        inv.buf_get_by_addr(remote, remote.get_memrange()[0] + 64, 16))
    s = a.rdma.task_send_allocate_init(a.conn, inv.buf_get_by_data(a.mm, a.base, 5))
    w.submit()
    s.submit()
    _idle_rounds(pe, 0.1)
    assert a.done == [] and bytes(b.mem[64:69]) == bytes(5)  # waiting: nothing moved
    b.rdma.connect(blob_a, b.conn)
    wait_for(pe, lambda: b.rdma.get_state() is CtxState.RUNNING, "RUNNING")
    b.rdma.task_receive_allocate_init(inv.buf_get_by_addr(b.mm, b.base + 4096, 64)).submit()
    wait_for(pe, lambda: len(a.done) == 2 and b.done, "completions")
    assert sorted(k for k, _ in a.done) == ["ok", "ok"] and b.done[0][0] == "ok"
    assert bytes(b.mem[64:69]) == b"early" and bytes(b.mem[4096:4101]) == b"early"
    _teardown(inv, a, b, mmaps=(remote,))


def test_task_fails_with_time_out_when_the_peer_never_connects(
        ver: tuple[int, int], short_window: float, env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    dev, pe, inv = env
    a, b, _ = _half_connected(dev, pe)
    assert a.conn is not None
    t = a.rdma.task_send_allocate_init(a.conn, inv.buf_get_by_data(a.mm, a.base, 8))
    started = time.monotonic()
    t.submit()
    wait_for(pe, lambda: a.done, "the send's completion")
    assert time.monotonic() - started >= short_window * 0.9
    assert a.done == [("err", t)] and t.get_status() == e.ErrorCode.TIME_OUT
    assert "DOCA_PY_RDMA_CONNECT_WINDOW" in reason(t)
    assert a.rdma.get_state() is CtxState.STOPPING  # a failed task stops its ctx
    if has_connection_objects():  # DOCA 2.6 has no connection callbacks
        wait_for(pe, lambda: ("failure", a.conn) in a.events, "connection failure callback")
    _teardown(inv, a, b)


def test_task_fails_with_connection_reset_when_the_peer_goes_away(
        ver: tuple[int, int], env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    dev, pe, inv = env
    a, b, _ = _half_connected(dev, pe)
    assert a.conn is not None
    t = a.rdma.task_send_allocate_init(a.conn, inv.buf_get_by_data(a.mm, a.base, 8))
    t.submit()
    _idle_rounds(pe, 0.05)
    assert a.done == []
    b.rdma.stop()  # the peer's ctx stops before it ever connected: its connections close
    wait_for(pe, lambda: a.done, "the send's completion")
    assert t.get_status() == e.ErrorCode.CONNECTION_RESET
    _teardown(inv, a, b)


def test_submit_on_an_exported_but_unconnected_connection_is_refused(
        ver3: tuple[int, int], env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    dev, pe, inv = env
    a = make_side(dev, pe)
    a.rdma.start()
    _, conn = a.rdma.export()
    wait_for(pe, lambda: a.rdma.get_state() is CtxState.RUNNING, "RUNNING")
    t = a.rdma.task_send_allocate_init(conn, None)
    with pytest.raises(e.DocaNotConnected):
        t.submit()
    assert not backing(t).inflight  # the caller keeps the task
    t.free()
    close_side(a)


def test_second_connect_is_bad_state(ver: tuple[int, int], env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    dev, pe, _ = env
    a, b = make_side(dev, pe), make_side(dev, pe)
    a.rdma.start()
    b.rdma.start()
    blob_a, a.conn = a.rdma.export()
    blob_b, b.conn = b.rdma.export()
    a.rdma.connect(blob_b, a.conn)
    with pytest.raises(e.DocaBadState):  # connected, the peer not yet
        a.rdma.connect(blob_b, a.conn)
    b.rdma.connect(blob_a, b.conn)
    if has_connection_objects():
        wait_for(pe, lambda: a.events and b.events, "established")
    else:  # DOCA 2.6: no connection callbacks; RUNNING once connected
        wait_for(pe, lambda: a.rdma.get_state() is b.rdma.get_state() is CtxState.RUNNING, "RUNNING")
    for s, blob in ((a, blob_b), (b, blob_a)):
        assert s.conn is not None
        with pytest.raises(e.DocaBadState):
            s.rdma.connect(blob, s.conn)
    close_side(a)
    close_side(b)


# -- rule 3: permissions -----------------------------------------------------------------------------
def test_set_permissions_refuses_pci_flags(env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    dev, pe, _ = env
    r = Rdma(dev)
    pe.connect_ctx(r)
    for flag in (A.PCI_READ_ONLY, A.PCI_READ_WRITE, A.PCI_RELAXED_ORDERING):
        with pytest.raises(e.DocaInvalidValue):
            r.set_permissions(A.LOCAL_READ_WRITE | A.RDMA_READ | flag)
    r.set_permissions(A.LOCAL_READ_WRITE | A.RDMA_READ | A.RDMA_WRITE | A.RDMA_ATOMIC)
    assert r.get_permissions() == A.LOCAL_READ_WRITE | A.RDMA_READ | A.RDMA_WRITE | A.RDMA_ATOMIC
    r.close()


def test_stop_of_an_idle_ctx_returns_idle(env: tuple[d.Dev, d.Pe, d.BufInventory]) -> None:
    dev, pe, _ = env
    s = make_side(dev, pe)
    assert s.rdma.stop() is CtxState.IDLE
    s.rdma.start()
    _idle_rounds(pe, 0.05)
    assert s.rdma.get_state() is not CtxState.IDLE
    assert s.rdma.stop() is CtxState.IDLE  # nothing allocated or in flight
    assert s.rdma.stop() is CtxState.IDLE
    close_side(s)


# -- rule 4: the remote side of read/write is one buffer ------------------------------------------------
@pytest.fixture(params=["same", "cross"])
def pair(backend: str, request: pytest.FixtureRequest) -> Iterator[Pair]:
    yield from _pair(backend, request.param)


def test_remote_chain_uses_its_head_only(pair: Pair) -> None:
    p, a, b = pair, pair.a, pair.b
    assert a.conn is not None
    b.mem[:512] = b"\x77" * 512
    a.mem[:8] = b"12345678"
    head = p.inv.buf_get_by_addr(p.remote, p.rbase + 100, 16)
    head.chain_list(p.inv.buf_get_by_addr(p.remote, p.rbase + 200, 16))
    src = p.inv.buf_get_by_data(a.mm, a.base, 8)
    assert run(p.pe, a, a.rdma.task_write_allocate_init(a.conn, src, head)) == ["ok"]
    assert bytes(b.mem[100:108]) == b"12345678" and bytes(b.mem[200:216]) == b"\x77" * 16
    assert head.get_data_len() == 8 and head.get_next_in_list().get_data_len() == 0  # type: ignore[union-attr]
    b.mem[10:30] = bytes(range(20))
    rsrc = p.inv.buf_get_by_data(p.remote, p.rbase + 10, 20)
    rsrc.chain_list(p.inv.buf_get_by_data(p.remote, p.rbase + 300, 20))
    dst = p.inv.buf_get_by_addr(a.mm, a.base + 4096, 64)
    assert run(p.pe, a, a.rdma.task_read_allocate_init(a.conn, rsrc, dst)) == ["ok"]
    assert bytes(dst.data_view()) == bytes(range(20))  # the head's 20 bytes, not 40


# -- rule 2: deferred execution --------------------------------------------------------------------------
def test_work_runs_in_progress_so_a_rewritten_source_sends_the_new_bytes(pair: Pair) -> None:
    p, a, b = pair, pair.a, pair.b
    assert a.conn is not None
    r = b.rdma.task_receive_allocate_init(p.inv.buf_get_by_addr(b.mm, b.base + 4096, 64))
    r.submit()
    a.mem[:4] = b"old!"
    src = p.inv.buf_get_by_data(a.mm, a.base, 4)
    dst = p.inv.buf_get_by_addr(p.remote, p.rbase, 64)
    w = a.rdma.task_write_allocate_init(a.conn, src, dst)
    s = a.rdma.task_send_allocate_init(a.conn, src)
    w.submit()
    s.submit()
    assert bytes(b.mem[:4]) == bytes(4)  # nothing happened at submit
    a.mem[:4] = b"new!"  # before progress: the tasks have not read their source yet
    wait_for(p.pe, lambda: len(a.done) == 2 and b.done, "completions")
    assert [k for k, _ in a.done] == ["ok", "ok"] and b.done[0][0] == "ok"
    assert bytes(b.mem[:4]) == b"new!" and bytes(b.mem[4096:4100]) == b"new!"


def test_receives_are_matched_in_submission_order(pair: Pair) -> None:
    """However the launches of one progress round are ordered, receives are posted (and
    sends leave) in submission order, as on a queue pair."""
    p, a, b = pair, pair.a, pair.b
    assert a.conn is not None
    n = 12
    recvs = [b.rdma.task_receive_allocate_init(p.inv.buf_get_by_addr(b.mm, b.base + i * 64, 64)) for i in range(n)]
    sends = []
    for i in range(n):
        a.mem[i * 64:i * 64 + 2] = i.to_bytes(2, "little")
        sends.append(a.rdma.task_send_allocate_init(a.conn, p.inv.buf_get_by_data(a.mm, a.base + i * 64, 2)))
    for t in (*sends, *recvs):  # sends first: they wait for the receives (RNR) in order
        t.submit()
    wait_for(p.pe, lambda: len(a.done) == n and len(b.done) == n, "completions")
    assert [int.from_bytes(r.get_dst_buf().data_view(), "little") for r in recvs] == list(range(n))  # type: ignore[union-attr]


# -- local buffers must be reachable by the ctx's device -------------------------------------------------
@pytest.mark.parametrize("op", ["send", "write", "read", "receive"])
def test_local_map_without_the_rdma_device_fails_not_permitted(backend: str, op: str) -> None:
    for p in _pair(backend, "same"):
        a, b = p.a, p.b
        assert a.conn is not None and b.conn is not None
        with d.Dev.open_by_pci_addr(HOST_PCI) as other:
            mm = d.Mmap()
            mm.allocate(1 << 16)
            mm.set_permissions(PERMS)
            mm.add_dev(other)  # not the rdma ctx's device
            mm.start()
            base = mm.get_memrange()[0]
            side = b if op == "receive" else a
            if op == "send":
                t: d.Task = a.rdma.task_send_allocate_init(a.conn, p.inv.buf_get_by_data(mm, base, 8))
            elif op == "write":
                t = a.rdma.task_write_allocate_init(a.conn, p.inv.buf_get_by_data(mm, base, 8),
                                                    p.inv.buf_get_by_addr(p.remote, p.rbase, 8))
            elif op == "read":
                t = a.rdma.task_read_allocate_init(a.conn, p.inv.buf_get_by_data(p.remote, p.rbase, 8),
                                                   p.inv.buf_get_by_addr(mm, base, 8))
            else:
                t = b.rdma.task_receive_allocate_init(p.inv.buf_get_by_addr(mm, base, 8))
            assert run(p.pe, side, t) == ["err"]
            assert t.get_status() == e.ErrorCode.NOT_PERMITTED
            assert "03:00.0" in reason(t) and "doca_mmap" in reason(t), reason(t)
            assert bytes(p.b.mem[:8]) == bytes(8)
            assert side.rdma.get_state() is CtxState.STOPPING  # a failed task stops its ctx
            for x in side.done:
                x[1].free()
            wait_for(p.pe, lambda: side.rdma.get_state() is CtxState.IDLE, "IDLE")
            p.inv.close()
            mm.close()


# -- rule 5: task buffers are pinned in strict mode; fault-injection kinds ------------------------------------
def test_every_task_pins_its_buffers_while_in_flight(pair: Pair) -> None:
    from doca_py.emulated import strict

    if not strict.STRICT:
        pytest.skip("strict mode is off (DOCA_PY_STRICT=0)")
    p, a, b = pair, pair.a, pair.b
    assert a.conn is not None
    inv = p.inv
    b.mem[64:72] = bytes(8)
    cases: list[tuple[d.Task, list[d.Buf]]] = []
    r_dst = inv.buf_get_by_addr(b.mm, b.base + 4096, 64)
    cases.append((b.rdma.task_receive_allocate_init(r_dst), [r_dst]))
    s_src = inv.buf_get_by_data(a.mm, a.base, 8)
    cases.append((a.rdma.task_send_allocate_init(a.conn, s_src), [s_src]))
    w_src, w_dst = inv.buf_get_by_data(a.mm, a.base, 8), inv.buf_get_by_addr(p.remote, p.rbase + 128, 8)
    cases.append((a.rdma.task_write_allocate_init(a.conn, w_src, w_dst), [w_src, w_dst]))
    rd_src, rd_dst = inv.buf_get_by_data(p.remote, p.rbase, 8), inv.buf_get_by_addr(a.mm, a.base + 256, 8)
    cases.append((a.rdma.task_read_allocate_init(a.conn, rd_src, rd_dst), [rd_src, rd_dst]))
    at_dst, at_res = inv.buf_get_by_data(p.remote, p.rbase + 64, 8), inv.buf_get_by_addr(a.mm, a.base + 512, 8)
    cases.append((a.rdma.task_atomic_fetch_add_allocate_init(a.conn, at_dst, at_res, 1), [at_dst, at_res]))
    for t, bufs in cases:
        t.submit()
        assert all(backing(buf).pins for buf in bufs), t
    # Re-aimed while a send reads it: refused (over libdoca the emulator's refusal reaches C as BAD_STATE).
    with pytest.raises(d.DocaUsageError if d.impl == "emulated" else e.DocaBadState):
        s_src.reset_data_len()
    wait_for(p.pe, lambda: len(a.done) == 4 and len(b.done) == 1, "completions")
    assert all(k == "ok" for k, _ in a.done + b.done)
    for _, bufs in cases:
        assert not any(backing(buf).pins for buf in bufs)


def test_task_kinds_are_known_to_fault_injection(pair: Pair, monkeypatch: pytest.MonkeyPatch) -> None:
    from doca_py.emulated import rdma as emu
    from doca_py.emulated import strict

    kinds = {emu.EmuRdmaTaskReceive: "rdma_receive", emu.EmuRdmaTaskSend: "rdma_send",
             emu.EmuRdmaTaskRead: "rdma_read", emu.EmuRdmaTaskWrite: "rdma_write",
             emu.EmuRdmaTaskAtomic: "rdma_atomic"}
    for cls, kind in kinds.items():
        assert cls.kind == kind and kind in strict.KINDS
    p, a = pair, pair.a
    assert a.conn is not None
    monkeypatch.setattr(strict, "FAULTS", {"rdma_write": (1.0, int(e.ErrorCode.CONNECTION_RESET))})
    monkeypatch.setattr(strict, "FAULTS_ON", True)
    t = a.rdma.task_write_allocate_init(a.conn, p.inv.buf_get_by_data(a.mm, a.base, 8),
                                        p.inv.buf_get_by_addr(p.remote, p.rbase, 8))
    assert run(p.pe, a, t) == ["err"]
    monkeypatch.undo()
    assert t.get_status() == e.ErrorCode.CONNECTION_RESET and "fault injected" in reason(t)
    assert bytes(p.b.mem[:8]) == bytes(8)

