"""In-process comch: a server and a client on two progress engines of one thread."""

from __future__ import annotations

import logging
import os
import socket
from typing import Any

import pytest

import doca_py as d
from doca_py import comch
from doca_py import errors as e
from doca_py.comch import ComchClient, ComchConsumer, ComchCounter, ComchProducer, ComchServer
from doca_py.types import CtxState

from .helpers import DPU_PCI, HOST_PCI, free_all, local_mmap, pair, pump, submit_when_posted, unique_name


@pytest.fixture
def devs(backend: str):  # type: ignore[no-untyped-def]
    with d.Dev.open_by_pci_addr(DPU_PCI) as dpu, d.Dev.open_by_pci_addr(HOST_PCI) as host:
        yield dpu, host


def test_capabilities(devs: tuple[d.Dev, d.Dev]) -> None:
    dpu, host = devs
    assert ComchServer.cap_is_supported(dpu.as_devinfo()) and not ComchServer.cap_is_supported(host.as_devinfo())
    assert ComchClient.cap_is_supported(host.as_devinfo()) and not ComchClient.cap_is_supported(dpu.as_devinfo())
    assert comch.cap_get_max_msg_size(dpu.as_devinfo()) >= 4000
    assert comch.cap_get_max_name_len(dpu.as_devinfo()) > 64
    assert comch.cap_get_max_clients(dpu.as_devinfo()) >= 1
    assert comch.cap_get_max_recv_queue_size(dpu.as_devinfo()) >= 1
    assert comch.cap_get_max_send_tasks(dpu.as_devinfo()) >= 1
    assert ComchConsumer.cap_get_max_imm_data_len(host.as_devinfo()) == 32
    assert ComchConsumer.cap_get_max_buf_size(host.as_devinfo()) >= 4096
    assert ComchProducer.cap_get_max_buf_list_len(host.as_devinfo()) == 1
    assert ComchConsumer.cap_is_supported(host.as_devinfo()) and ComchProducer.cap_is_supported(dpu.as_devinfo())


def test_server_and_client_need_their_side(devs: tuple[d.Dev, d.Dev]) -> None:
    dpu, host = devs
    rep = dpu.open_rep_by_pci_addr(HOST_PCI)
    with pytest.raises(e.DocaNotSupported):
        ComchServer(host, rep, unique_name())
    with pytest.raises(e.DocaNotSupported):
        ComchClient(dpu, unique_name())
    for bad in ("", "x" * 200, "a\0b"):
        with pytest.raises(e.DocaInvalidValue):
            ComchServer(dpu, rep, bad)


def test_state_machine_and_messages_both_ways(backend: str) -> None:
    with pair() as p:
        srv, cli = p.server, p.client
        assert srv.ctx.get_state() == CtxState.RUNNING
        conn = p.cconn
        assert conn.get_client_ctx() is cli.ctx and conn.get_server_ctx() is None
        sconn = p.sconn
        assert sconn.get_server_ctx() is srv.ctx and sconn.get_client_ctx() is None
        assert srv.ctx.get_connections() == [sconn]
        payloads = [b"", b"x", bytes(range(256)) * 15, os.urandom(4080)]
        for m in payloads:
            cli.ctx.task_send_alloc_init(conn, m, user_data=len(m)).submit()
        p.pump(lambda: len(srv.msgs) == len(payloads) and len(cli.sent) == len(payloads))
        assert [m for m, _ in srv.msgs] == payloads
        assert all(c is sconn for _, c in srv.msgs)
        assert all(k == "ok" and st == d.ErrorCode.SUCCESS for k, _, st in cli.sent)
        assert sorted(t.user_data for _, t, _ in cli.sent) == sorted(len(m) for m in payloads)
        for _, t, _ in cli.sent:
            assert t.get_connection() is conn
            t.free()
        for m in payloads:
            srv.ctx.task_send_alloc_init(sconn, bytearray(m)).submit()
        p.pump(lambda: len(cli.msgs) == len(payloads))
        assert [m for m, _ in cli.msgs] == payloads
        conn.update_info()
        assert conn.get_counter(ComchCounter.SENT_MESSAGES) == len(payloads)
        assert conn.get_counter(ComchCounter.SENT_BYTES) == sum(map(len, payloads))
        assert conn.get_counter(ComchCounter.RECV_MESSAGES) == len(payloads)
        assert conn.get_counter(ComchCounter.RECV_BYTES) == sum(map(len, payloads))


def test_many_messages_in_flight_arrive_in_order(backend: str) -> None:
    total = 5000
    nxt = [0]
    holder: list[Any] = []

    def resubmit(t: Any, u: Any, c: Any) -> None:
        cli = t.get_ctx()
        t.free()
        if nxt[0] < total:
            cli.task_send_alloc_init(holder[0], nxt[0].to_bytes(4, "little") * 16).submit()
            nxt[0] += 1

    def conf(s: ComchServer, c: ComchClient) -> None:
        c.task_send_set_conf(resubmit, lambda t, u, c: None, 256)

    with pair(configure=conf) as p:
        holder.append(p.cconn)
        for _ in range(256):
            p.client.ctx.task_send_alloc_init(p.cconn, nxt[0].to_bytes(4, "little") * 16).submit()
            nxt[0] += 1
        p.pump(lambda: len(p.server.msgs) == total)
        assert [int.from_bytes(m[:4], "little") for m, _ in p.server.msgs] == list(range(total))


def test_configuration_only_while_idle(backend: str) -> None:
    with pair() as p:
        for call in (lambda: p.server.ctx.set_max_msg_size(100),
                     lambda: p.client.ctx.set_recv_queue_size(4),
                     lambda: p.server.ctx.event_msg_recv_register(lambda m, c: None),
                     lambda: p.client.ctx.task_send_set_conf(lambda *a: None, lambda *a: None, 4)):
            with pytest.raises(e.DocaBadState):
                call()


def test_oversized_message_is_refused_at_allocation(backend: str) -> None:
    def small(s: ComchServer, c: ComchClient) -> None:
        s.set_max_msg_size(100)
        assert s.get_max_msg_size() == 100
        c.set_max_msg_size(200)

    with pair(configure=small) as p:
        # The connection uses the smaller of both sides' limits.
        with pytest.raises(e.DocaInvalidValue):
            p.client.ctx.task_send_alloc_init(p.cconn, bytes(101))
        with pytest.raises(e.DocaInvalidValue):
            p.server.ctx.task_send_alloc_init(p.sconn, bytes(101))
        p.client.ctx.task_send_alloc_init(p.cconn, bytes(100)).submit()
        p.pump(lambda: len(p.server.msgs) == 1)
    with d.Dev.open_by_pci_addr(DPU_PCI) as dpu:
        rep = dpu.open_rep_by_pci_addr(HOST_PCI)
        s = ComchServer(dpu, rep, unique_name())
        with pytest.raises(e.DocaInvalidValue):
            s.set_max_msg_size(comch.cap_get_max_msg_size(dpu.as_devinfo()) + 1)
        s.close()


def test_task_pool_is_bounded(backend: str) -> None:
    with pair(num_tasks=2) as p:
        a = p.client.ctx.task_send_alloc_init(p.cconn, b"a")
        p.client.ctx.task_send_alloc_init(p.cconn, b"b")
        with pytest.raises(e.DocaNoMemory):
            p.client.ctx.task_send_alloc_init(p.cconn, b"c")
        a.free()
        p.client.ctx.task_send_alloc_init(p.cconn, b"c")


def test_message_view_is_released_after_the_callback(backend: str) -> None:
    kept: list[memoryview] = []
    with pair(configure=lambda s, c: s.event_msg_recv_register(lambda m, conn: kept.append(m))) as p:
        p.client.ctx.task_send_alloc_init(p.cconn, b"short-lived").submit()
        p.pump(lambda: bool(kept))
        with pytest.raises(ValueError):
            bytes(kept[0])


def test_a_raising_callback_loses_no_message(backend: str) -> None:
    seen: list[bytes] = []

    def cb(m: memoryview, c: Any) -> None:
        seen.append(bytes(m))
        if len(seen) == 2:
            raise RuntimeError("boom")

    with pair(configure=lambda s, c: s.event_msg_recv_register(cb)) as p:
        for i in range(5):
            p.client.ctx.task_send_alloc_init(p.cconn, bytes([i])).submit()
        with pytest.raises(RuntimeError):
            p.pump(lambda: len(seen) == 5)
        p.pump(lambda: len(seen) == 5)
        assert seen == [bytes([i]) for i in range(5)]


def test_client_waits_for_a_server_that_starts_later(backend: str) -> None:
    with pair(start=False) as p:
        assert p.client.ctx.start() == CtxState.STARTING
        p.client.pe.progress()
        assert p.client.ctx.get_state() == CtxState.STARTING
        with pytest.raises(e.DocaBadState):
            p.client.ctx.get_connection()
        assert p.server.ctx.start() == CtxState.RUNNING
        p.pump(lambda: p.client.ctx.get_state() == CtxState.RUNNING)
        p.pump(lambda: any(k == "connect" for k, _ in p.server.events))


def test_connection_dropped_before_the_client_saw_running_stops_the_client(backend: str) -> None:
    if backend != "emulated":
        pytest.skip("drives the emulated client's internals to order the events")
    with pair(start=False) as p:
        assert p.server.ctx.start() == CtxState.RUNNING
        assert p.client.ctx.start() == CtxState.STARTING
        # Only the server progresses: the client's "connected" event stays queued on its Pe.
        pump([p.server.pe], lambda: any(k == "connect" for k, _ in p.server.events))
        first = p.client.ctx._h.conn
        p.server.ctx.disconnect(p.sconn)
        pump([p.server.pe], lambda: first.closed)
        # Now the client sees "connected" and "lost" together: it must stop, not hang in STARTING.
        p.pump(lambda: p.client.ctx.get_state() == CtxState.IDLE)
        assert p.client.ctx.start() == CtxState.STARTING  # and can start again
        p.pump(lambda: p.client.ctx.get_state() == CtxState.RUNNING)


def test_client_stop_while_starting_goes_idle(backend: str) -> None:
    with pair(start=False) as p:
        assert p.client.ctx.start() == CtxState.STARTING
        assert p.client.ctx.stop() == CtxState.IDLE


def test_duplicate_server_name_fails_and_stale_socket_is_reused(backend: str) -> None:
    from doca_py.emulated.comch.wire import socket_path

    with pair(start=False) as p:
        p.server.ctx.start()
        rep = p.dpu.open_rep_by_pci_addr(HOST_PCI)
        dup = ComchServer(p.dpu, rep, p.name)
        p.server.pe.connect_ctx(dup)
        with pytest.raises(e.DocaAlreadyExist):
            dup.start()
        # Another name on the same device is fine.
        other = ComchServer(p.dpu, rep, unique_name())
        p.server.pe.connect_ctx(other)
        assert other.start() == CtxState.RUNNING
        other.stop()
        # After the first server stops, the name is free again.
        assert p.server.ctx.stop() == CtxState.IDLE
        assert dup.start() == CtxState.RUNNING
        dup.stop()
    # A socket file left by a dead server (nobody holds its lock) is replaced.
    name = unique_name()
    path = socket_path("0000:3b:00.0", name)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.close()
    assert os.path.exists(path)
    with d.Dev.open_by_pci_addr(DPU_PCI) as dpu, d.Pe() as pe:
        srv = ComchServer(dpu, dpu.open_rep_by_pci_addr(HOST_PCI), name)
        pe.connect_ctx(srv)
        assert srv.start() == CtxState.RUNNING
        srv.stop()
    assert not os.path.exists(path)


def test_connection_user_data_and_server_disconnect(backend: str) -> None:
    with pair() as p:
        sconn = p.sconn
        sconn.set_user_data({"k": 1})
        assert sconn.get_user_data() == {"k": 1}
        pending = p.client.ctx.task_send_alloc_init(p.cconn, b"x")
        p.server.ctx.disconnect(sconn)
        p.pump(lambda: any(k == "disconnect" for k, _ in p.server.events))
        assert [c for k, c in p.server.events if k == "disconnect"] == [sconn]
        assert not sconn.is_connected()
        # The client notices: RUNNING → STOPPING, then IDLE once its tasks are freed.
        p.pump(lambda: p.client.ctx.get_state() != CtxState.RUNNING)
        assert p.client.ctx.get_state() == CtxState.STOPPING
        pending.free()
        p.pump(lambda: p.client.ctx.get_state() == CtxState.IDLE)
        assert p.server.ctx.get_state() == CtxState.RUNNING
        # The client can start again and reconnect.
        assert p.client.ctx.start() == CtxState.STARTING
        p.pump(lambda: p.client.ctx.get_state() == CtxState.RUNNING)


def test_server_stop_fails_inflight_client_tasks(backend: str) -> None:
    with pair() as p:
        p.server.ctx.stop()
        p.pump(lambda: p.client.ctx.get_state() == CtxState.STOPPING)
        free_all(p.client.ctx)
        p.pump(lambda: p.client.ctx.get_state() == CtxState.IDLE)
        with pytest.raises(e.DocaBadState):
            p.client.ctx.get_connection()


# -- producer / consumer ------------------------------------------------------------------------
def _consumer(conn: Any, mm: d.Mmap, pe: d.Pe, n: int = 8) -> tuple[ComchConsumer, list[Any]]:
    cons = ComchConsumer(conn, mm)
    pe.connect_ctx(cons)
    done: list[Any] = []
    cons.task_post_recv_set_conf(lambda t, u, c: done.append(("ok", t, t.get_status())),
                                 lambda t, u, c: done.append(("err", t, t.get_status())), n)
    return cons, done


def _producer(conn: Any, pe: d.Pe, n: int = 8) -> tuple[ComchProducer, list[Any]]:
    prod = ComchProducer(conn)
    pe.connect_ctx(prod)
    done: list[Any] = []
    prod.task_send_set_conf(lambda t, u, c: done.append(("ok", t, t.get_status())),
                            lambda t, u, c: done.append(("err", t, t.get_status())), n)
    return prod, done


def test_producer_consumer_with_immediate_data_both_directions(backend: str) -> None:
    with pair() as p, d.BufInventory(32) as inv:
        smm, smem = local_mmap(p.dpu)
        cmm, cmem = local_mmap(p.host)
        for (cons_conn, cons_pe, cons_mm, cons_mem, cons_side), (prod_conn, prod_pe, prod_mm, prod_mem, prod_side) in (
            ((p.sconn, p.server.pe, smm, smem, p.server), (p.cconn, p.client.pe, cmm, cmem, p.client)),
            ((p.cconn, p.client.pe, cmm, cmem, p.client), (p.sconn, p.server.pe, smm, smem, p.server)),
        ):
            cons, rdone = _consumer(cons_conn, cons_mm, cons_pe)
            assert cons.start() == CtxState.STARTING
            p.pump(lambda: cons.get_state() == CtxState.RUNNING)
            p.pump(lambda: cons.get_id() in prod_side.ids("new_consumer"))
            base = cons_mm.get_memrange()[0]
            dst = inv.buf_get_by_addr(cons_mm, base + 100, 1000)
            dst.reset_data_len()
            cons_mem[100:104] = b"HEAD"
            dst.set_data(base + 100, 4)  # the producer's data lands after the existing 4 bytes
            cons.task_post_recv_alloc_init(dst, user_data="rx").submit()
            prod, sdone = _producer(prod_conn, prod_pe)
            assert prod.start() == CtxState.RUNNING
            payload = os.urandom(700)
            pbase = prod_mm.get_memrange()[0]
            prod_mem[0:700] = payload
            src = inv.buf_get_by_data(prod_mm, pbase, 700)
            t = prod.task_send_alloc_init(src, b"imm-data-123", cons.get_id(), user_data="tx")
            assert t.get_imm_data() == b"imm-data-123" and t.get_consumer_id() == cons.get_id()
            submit_when_posted(t, p.pes)  # AGAIN until the consumer's receive is posted and announced
            p.pump(lambda: bool(rdone) and bool(sdone))
            assert rdone[0][0] == "ok" and sdone[0][0] == "ok"
            rt = rdone[0][1]
            assert rt.user_data == "rx" and rt.get_buf() is dst
            assert rt.get_imm_data() == b"imm-data-123" and rt.get_imm_data_len() == 12
            assert rt.get_producer_id() == prod.get_id()
            assert dst.get_data_len() == 704
            assert bytes(dst.data_view()) == b"HEAD" + payload
            # No receive posted now: submit itself raises AGAIN (DOCA 3.x); the caller keeps the
            # task, nothing is in flight, and the producer keeps running.
            with pytest.raises(e.DocaAgain):
                t.submit()
            assert t._allocated and not t._h.inflight and prod.get_num_inflight_tasks() == 0
            assert prod.get_state() == CtxState.RUNNING and len(sdone) == 1
            # Post again: the resubmitted send lands.
            dst.reset_data_len()
            rt.submit()
            submit_when_posted(t, p.pes)
            p.pump(lambda: len(sdone) == 2 and len(rdone) == 2)
            assert sdone[1][0] == "ok" and bytes(dst.data_view()) == payload
            # Destroying the consumer fires expired_consumer on the other side.
            for lst in (rdone, sdone):
                for _, task, _ in lst:
                    if task._allocated:
                        task.free()
            cons.close()
            p.pump(lambda: cons.get_id() in prod_side.ids("expired_consumer"))
            prod.close()
            dst.close()
            src.close()
        smm.close()
        cmm.close()


def test_producer_to_unknown_consumer_and_too_small_buffer(backend: str) -> None:
    with pair() as p, d.BufInventory(8) as inv:
        mm, mem = local_mmap(p.dpu)
        cmm, _ = local_mmap(p.host)
        cons, rdone = _consumer(p.sconn, mm, p.server.pe)
        cons.start()
        p.pump(lambda: cons.get_id() in p.client.ids("new_consumer"))
        prod, sdone = _producer(p.cconn, p.client.pe)
        prod.start()
        src = inv.buf_get_by_data(cmm, cmm.get_memrange()[0], 64)
        prod.task_send_alloc_init(src, None, cons.get_id() + 1000).submit()
        p.pump(lambda: bool(sdone))
        assert sdone[0][2] == d.ErrorCode.NOT_FOUND
        # A failed (non-AGAIN) task stops the producer, as on hardware.
        assert prod.get_state() == CtxState.STOPPING
        sdone[0][1].free()
        p.pump(lambda: prod.get_state() == CtxState.IDLE)
        prod.start()
        small = inv.buf_get_by_addr(mm, mm.get_memrange()[0], 16)
        cons.task_post_recv_alloc_init(small).submit()
        submit_when_posted(prod.task_send_alloc_init(src, None, cons.get_id()), p.pes)
        p.pump(lambda: len(sdone) == 2 and bool(rdone))
        assert sdone[1][2] == d.ErrorCode.TOO_BIG and rdone[0][2] == d.ErrorCode.TOO_BIG
        with pytest.raises(e.DocaInvalidValue):
            prod.task_send_alloc_init(src, bytes(33), cons.get_id())
        with pytest.raises(e.DocaInvalidValue):
            cons.task_post_recv_alloc_init(src)  # not the consumer's mmap
        for lst in (rdone, sdone):
            for _, task, _ in lst:
                if task._allocated:
                    task.free()
        small.close()
        src.close()
        cons.close()
        prod.close()
        mm.close()
        cmm.close()


def test_disconnect_is_refused_while_consumers_exist(backend: str) -> None:
    with pair() as p:
        mm, _ = local_mmap(p.dpu)
        cons, _ = _consumer(p.sconn, mm, p.server.pe)
        with pytest.raises(e.DocaInUse):
            p.server.ctx.disconnect(p.sconn)
        cons.close()
        p.server.ctx.disconnect(p.sconn)
        p.pump(lambda: any(k == "disconnect" for k, _ in p.server.events))
        mm.close()


@pytest.mark.conformance
def test_producer_and_consumer_need_an_established_connection(backend: str) -> None:
    # doca_comch_{producer,consumer}_create: BAD_STATE, "comch_connection is not established".
    with pair() as p:
        smm, _ = local_mmap(p.dpu)
        cmm, _ = local_mmap(p.host)
        sconn, cconn = p.sconn, p.cconn
        p.server.ctx.disconnect(sconn)
        p.pump(lambda: any(k == "disconnect" for k, _ in p.server.events))
        p.pump(lambda: p.client.ctx.get_state() != CtxState.RUNNING)
        for conn, mm in ((sconn, smm), (cconn, cmm)):
            with pytest.raises(e.DocaBadState, match="not established"):
                ComchProducer(conn)
            with pytest.raises(e.DocaBadState, match="not established"):
                ComchConsumer(conn, mm)
        assert p.server.ctx.get_state() == CtxState.RUNNING
        smm.close()
        cmm.close()


def test_consumer_fails_posted_receives_when_the_peer_goes(backend: str) -> None:
    with pair() as p, d.BufInventory(8) as inv:
        mm, _ = local_mmap(p.host)
        cons, rdone = _consumer(p.cconn, mm, p.client.pe)
        cons.start()
        p.pump(lambda: cons.get_state() == CtxState.RUNNING)
        b = inv.buf_get_by_addr(mm, mm.get_memrange()[0], 64)
        cons.task_post_recv_alloc_init(b).submit()
        p.server.ctx.stop()
        p.pump(lambda: bool(rdone) and cons.get_state() == CtxState.STOPPING)
        assert rdone[0][0] == "err" and rdone[0][2] == d.ErrorCode.CONNECTION_RESET
        rdone[0][1].free()
        p.pump(lambda: cons.get_state() == CtxState.IDLE)
        with pytest.raises(e.DocaNotConnected):
            cons.start()
        b.close()
        mm.close()


def test_closing_the_pe_tears_everything_down(backend: str) -> None:
    with pair() as p:
        mm, _ = local_mmap(p.dpu)
        cons, _ = _consumer(p.sconn, mm, p.server.pe)
        cons.start()
        prod, _ = _producer(p.sconn, p.server.pe)
        prod.start()
        p.server.ctx.task_send_alloc_init(p.sconn, b"bye").submit()
        p.server.pe.close()
        assert cons.closed and prod.closed and p.server.ctx.closed
        pump([p.client.pe], lambda: p.client.ctx.get_state() != CtxState.RUNNING)
        mm.close()


def test_logs_go_to_the_doca_py_logger(backend: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="doca_py")
    with pair() as p:
        p.server.ctx.stop()
        p.pump(lambda: p.client.ctx.get_state() != CtxState.RUNNING)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
