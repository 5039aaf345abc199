"""Two processes: messages, producer/consumer and events across a process boundary, duplicate
names, and a peer killed in the middle of a transfer.

Control messages run as a ``doca_pair`` (a server function on the DPU side, a client function on
the host side); the other tests drive a scripted child (``python -m tests.comch.peer``) step by
step from this process, to stall or SIGKILL it at chosen points."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

import doca_py as d
from doca_py.comch import ComchClient, ComchConsumer, ComchProducer, ComchServer
from doca_py.testing import DocaPair, Side
from doca_py.types import CtxState

from .helpers import DEADLINE, HOST_PCI, Child, Endpoint, child, free_all, local_mmap, pump, server_side, \
    client_of_child_server, submit_when_posted, unique_name, until_loss_queued

pytestmark = [pytest.mark.multiprocess, pytest.mark.usefixtures("backend")]


def _conn(ep: Endpoint) -> Any:
    return [c for k, c in ep.events if k == "connect"][0]


PAYLOADS = [b"\x00", bytes(range(256)), os.urandom(4080), b"tail"]


def _server(side: Side) -> tuple[list[bytes], bool, list[d.ErrorCode], list[bytes]]:
    """DPU side: the messages the client sent, whether all came on one connection, our sends' statuses."""
    with d.Pe() as pe:
        srv = Endpoint(ComchServer(side.dev, side.rep, f"ctrl-{side.token}"), pe)
        pe.connect_ctx(srv.ctx)
        srv.configure(64)
        srv.ctx.event_connection_status_changed_register(lambda c, ok: srv.events.append(("connect", c)),
                                                         lambda c, ok: srv.events.append(("disconnect", c)))
        srv.ctx.start()
        side.send("listening")
        pump([pe], lambda: any(k == "connect" for k, _ in srv.events))
        conn = _conn(srv)
        pump([pe], lambda: len(srv.msgs) == len(side.args))
        same_conn = all(c is conn for _, c in srv.msgs)
        back = [os.urandom(n) for n in (1, 63, 64, 1000, 4080)]
        for m in back:
            srv.ctx.task_send_alloc_init(conn, m).submit()
        pump([pe], lambda: len(srv.sent) == len(back))
        side.send(back)
        assert side.recv(DEADLINE) == "got them"  # the client leaves first: the server's stop flushes nothing
        pump([pe], lambda: any(k == "disconnect" for k, _ in srv.events))
        for _, t, _ in srv.sent:
            t.free()
        srv.ctx.close()
    return [m for m, _ in srv.msgs], same_conn, [st for _, _, st in srv.sent], back


def _client(side: Side) -> tuple[list[d.ErrorCode], list[bytes]]:
    """Host side: our sends' statuses and the messages the server sent."""
    assert side.recv(DEADLINE) == "listening"
    with d.Pe() as pe:
        cli = Endpoint(ComchClient(side.dev, f"ctrl-{side.token}"), pe)
        pe.connect_ctx(cli.ctx)
        cli.configure(64)
        cli.ctx.start()
        pump([pe], lambda: cli.ctx.get_state() == CtxState.RUNNING)
        for m in side.args:
            cli.ctx.task_send_alloc_init(cli.ctx.get_connection(), m).submit()
        pump([pe], lambda: len(cli.sent) == len(side.args))
        back = side.recv(DEADLINE)
        pump([pe], lambda: len(cli.msgs) == len(back))
        side.send("got them")
        for _, t, _ in cli.sent:
            t.free()
        cli.ctx.close()
    return [st for _, _, st in cli.sent], [m for m, _ in cli.msgs]


def test_control_messages_both_ways_byte_exact(doca_pair: DocaPair) -> None:
    (client_sent, client_got), (server_got, same_conn, server_sent, back) = doca_pair.run(
        _client, _server, args=PAYLOADS)
    assert client_sent == [d.ErrorCode.SUCCESS] * len(PAYLOADS)
    assert server_got == PAYLOADS and same_conn
    assert server_sent == [d.ErrorCode.SUCCESS] * len(back)
    assert client_got == back


def test_producer_consumer_and_consumer_events_across_processes() -> None:
    name = unique_name()
    with server_side(name) as (srv, dev), child("client", name, [srv.pe]) as ch, d.BufInventory(16) as inv:
        assert ch.ask("conn") == "conn"
        pump([srv.pe], lambda: any(k == "connect" for k, _ in srv.events))
        conn = _conn(srv)
        # Child consumer ← our producer.
        cid = int(ch.ask("consumer 4 4096").split()[1])
        pump([srv.pe], lambda: cid in srv.ids("new_consumer"))
        mm, mem = local_mmap(dev, 1 << 17)
        prod = ComchProducer(conn)
        srv.pe.connect_ctx(prod)
        pdone: list[Any] = []
        prod.task_send_set_conf(lambda t, u, c: pdone.append(t.get_status()),
                                lambda t, u, c: pdone.append(t.get_status()), 8)
        prod.start()
        base = mm.get_memrange()[0]
        chunks = [os.urandom(n) for n in (1, 100, 4096)]
        for i, data in enumerate(chunks):
            mem[i * 4096: i * 4096 + len(data)] = data
            src = inv.buf_get_by_data(mm, base + i * 4096, len(data))
            submit_when_posted(prod.task_send_alloc_init(src, bytes([i]) * (i * 10), cid), [srv.pe])
        pump([srv.pe], lambda: len(pdone) == 3)
        assert pdone == [d.ErrorCode.SUCCESS] * 3
        got = ch.ask("recvd 3").split()[1:]
        # The child lists completions in their (unordered) delivery order.
        assert sorted(got) == sorted(f"SUCCESS:{prod.get_id()}:{(bytes([i]) * (i * 10)).hex() or '-'}:{data.hex()}"
                                     for i, data in enumerate(chunks))
        # Our consumer ← child producer.
        cons = ComchConsumer(conn, mm)
        srv.pe.connect_ctx(cons)
        rdone: list[Any] = []
        cons.task_post_recv_set_conf(lambda t, u, c: rdone.append(t), lambda t, u, c: rdone.append(t), 4)
        assert cons.start() == CtxState.STARTING
        pump([srv.pe], lambda: cons.get_state() == CtxState.RUNNING)
        dst = inv.buf_get_by_addr(mm, base + 65536, 8192)
        cons.task_post_recv_alloc_init(dst).submit()
        pid = int(ch.ask("producer").split()[1])
        assert ch.ask("newcons") == f"newcons {cons.get_id()}"
        payload = os.urandom(5000)
        assert ch.ask(f"psend {payload.hex()} {b'imm!'.hex()} {cons.get_id()}") == "psent SUCCESS"
        pump([srv.pe], lambda: bool(rdone))
        assert rdone[0].get_status() == d.ErrorCode.SUCCESS and rdone[0].get_producer_id() == pid
        assert rdone[0].get_imm_data() == b"imm!" and bytes(dst.data_view()) == payload
        # No receive posted: the child's submit itself raises AGAIN (DOCA 3.x), no callback.
        assert ch.ask(f"ptry {payload.hex()} - {cons.get_id()}") == "refused AGAIN"
        # Expiry both ways.
        assert ch.ask("drop_consumer") == "dropped"
        pump([srv.pe], lambda: cid in srv.ids("expired_consumer"))
        rdone[0].free()
        cons.close()
        assert ch.ask("expired") == f"expired {cons.get_id()}"
        free_all(prod)
        prod.close()
        dst.close()
        mm.close()


def test_duplicate_name_across_processes_and_stale_socket_of_a_killed_server() -> None:
    name = unique_name()
    with server_side(name) as (srv, _):
        with child("server", name, [srv.pe]) as ch:
            assert ch.first == "error ALREADY_EXIST"
    other = unique_name()
    with d.Pe() as pe, child("server", other, [pe]) as ch:
        assert ch.first == "started"
        ch.kill()  # leaves its socket file behind
    with server_side(other) as (srv, _), child("client", other, [srv.pe]) as cl:
        assert cl.ask("conn") == "conn"
        pump([srv.pe], lambda: any(k == "connect" for k, _ in srv.events))


def test_client_killed_mid_transfer_fails_inflight_tasks_and_server_keeps_serving(transport: str) -> None:
    """The child stalls with 2 receives posted while messages and producer data wait for it (in the
    socket, or in the ring), then is SIGKILLed: everything in flight fails with CONNECTION_RESET and the
    server keeps serving."""
    name = unique_name()
    with server_side(name, num_tasks=2048) as (srv, dev), d.BufInventory(64) as inv:
        ch = Child("client", name, [srv.pe], rq=1)
        try:
            assert ch.ask("conn") == "conn"
            cid = int(ch.ask("consumer 2 4096").split()[1])
            pump([srv.pe], lambda: cid in srv.ids("new_consumer"))
            conn = _conn(srv)
            if transport == "rings":
                assert conn._h.shm is not None, "the connection did not switch to the rings"
            mm, mem = local_mmap(dev)
            prod = ComchProducer(conn)
            srv.pe.connect_ctx(prod)
            pdone: list[Any] = []
            prod.task_send_set_conf(lambda t, u, c: pdone.append(t.get_status()),
                                    lambda t, u, c: pdone.append(t.get_status()), 32)
            prod.start()
            # The child announced its 2 receives before answering; it never progresses again.
            assert ch.ask("stall") == "stalled"
            # 8 MiB of messages: far more than the child's buffers and the socket hold.
            msg = os.urandom(4080)
            for _ in range(2048):
                srv.ctx.task_send_alloc_init(conn, msg).submit()
            srv.pe.progress()  # the messages go on the wire first
            src = inv.buf_get_by_data(mm, mm.get_memrange()[0], 512)
            sends = [prod.task_send_alloc_init(src, None, cid) for _ in range(3)]
            for t in sends[:2]:
                submit_when_posted(t, [srv.pe])  # one credit per receive the child posted
            with pytest.raises(d.DocaError) as refused:
                sends[2].submit()  # no third receive: refused at submit, never in flight
            assert refused.value.code == d.ErrorCode.AGAIN and not sends[2]._h.inflight
            srv.pe.progress()
            assert srv.ctx.get_num_inflight_tasks() > 0 and prod.get_num_inflight_tasks() == 2
            ch.kill()
            pump([srv.pe], lambda: any(k == "disconnect" for k, _ in srv.events))
            pump([srv.pe], lambda: len(srv.sent) == 2048 and len(pdone) == 2)
        finally:
            ch.close()
        failed = [st for k, _, st in srv.sent if k == "err"]
        assert failed and set(failed) == {d.ErrorCode.CONNECTION_RESET}
        # AGAIN never reaches a callback; data stuck behind the messages dies with the connection.
        assert set(pdone) <= {d.ErrorCode.SUCCESS, d.ErrorCode.CONNECTION_RESET}
        assert d.ErrorCode.CONNECTION_RESET in pdone
        # The multi-client server keeps running; the producer on the dead connection stops.
        assert srv.ctx.get_state() == CtxState.RUNNING
        free_all(prod)
        pump([srv.pe], lambda: prod.get_state() == CtxState.IDLE)
        for _, t, _ in srv.sent:
            t.free()
        with child("client", name, [srv.pe]) as again:
            assert again.ask("conn") == "conn"
            pump([srv.pe], lambda: [k for k, _ in srv.events].count("connect") == 2)
        prod.close()
        src.close()
        mm.close()


def test_server_killed_moves_the_client_to_idle() -> None:
    name = unique_name()
    with d.Dev.open_by_pci_addr(HOST_PCI) as host, d.Pe() as pe:
        cli = Endpoint(ComchClient(host, name), pe)
        pe.connect_ctx(cli.ctx)
        cli.configure(256)
        states: list[tuple[CtxState, CtxState]] = []
        cli.ctx.set_state_changed_cb(lambda u, c, a, b: states.append((a, b)))
        ch = Child("server", name, [pe], rq=1)
        try:
            assert ch.first == "started"
            assert cli.ctx.start() == CtxState.STARTING
            pump([pe], lambda: cli.ctx.get_state() == CtxState.RUNNING)
            assert ch.ask("conn") == "conn"
            assert ch.ask("stall") == "stalled"
            msg = os.urandom(4080)
            for _ in range(256):
                cli.ctx.task_send_alloc_init(cli.ctx.get_connection(), msg).submit()
            pe.progress()
            ch.kill()
            pump([pe], lambda: cli.ctx.get_state() != CtxState.RUNNING and len(cli.sent) == 256)
        finally:
            ch.close()
        assert cli.ctx.get_state() == CtxState.STOPPING
        assert {st for k, _, st in cli.sent if k == "err"} <= {d.ErrorCode.CONNECTION_RESET}
        free_all(cli.ctx)
        pump([pe], lambda: len(states) == 4)
        assert cli.ctx.get_state() == CtxState.IDLE
        assert (CtxState.RUNNING, CtxState.STOPPING) in states and states[-1] == (CtxState.STOPPING, CtxState.IDLE)
    # The killed server left its socket behind: a new server of that name reclaims (and removes) it.
    with server_side(name):
        pass


@pytest.fixture
def long_window() -> Iterator[None]:
    """A retry window far beyond every bounded wait: no failure in these tests can come from it."""
    from doca_py.emulated import comch as emu

    emu.configure(retry_window=600)
    try:
        yield
    finally:
        emu.configure(retry_window=0)


def test_work_submitted_as_the_killed_client_is_noticed_fails_with_connection_reset(
        transport: str, long_window: None) -> None:
    """The race of a killed peer: its loss lands on the Pe while the application submits (a worker
    starting its next IO from a response's callback). The producer and consumer learn of the loss before
    they launch that work, so it is flushed; it fails as the peer left it, CONNECTION_RESET, never with
    IO_FAILED, which says the retry window ran out on a peer that is alive but does not answer."""
    name = unique_name()
    with server_side(name) as (srv, dev), d.BufInventory(16) as inv, child("client", name, [srv.pe]) as ch:
        assert ch.ask("conn") == "conn"
        cid = int(ch.ask("consumer 2 4096").split()[1])
        pump([srv.pe], lambda: cid in srv.ids("new_consumer"))
        conn = _conn(srv)
        mm, _ = local_mmap(dev)
        pdone: list[Any] = []
        prod = ComchProducer(conn)
        srv.pe.connect_ctx(prod)
        prod.task_send_set_conf(lambda t, u, c: pdone.append(t.get_status()),
                                lambda t, u, c: pdone.append(t.get_status()), 4)
        prod.start()
        rdone: list[Any] = []
        cons = ComchConsumer(conn, mm)
        srv.pe.connect_ctx(cons)
        cons.task_post_recv_set_conf(lambda t, u, c: rdone.append(t.get_status()),
                                     lambda t, u, c: rdone.append(t.get_status()), 2)
        cons.start()
        pump([srv.pe], lambda: cons.get_state() == CtxState.RUNNING)
        bufs = [inv.buf_get_by_addr(mm, mm.get_memrange()[0] + 4096 * (1 + i), 4096) for i in range(2)]
        recvs = [cons.task_post_recv_alloc_init(b) for b in bufs]
        recvs[0].submit()
        src = inv.buf_get_by_data(mm, mm.get_memrange()[0], 512)
        first = prod.task_send_alloc_init(src, None, cid)
        submit_when_posted(first, [srv.pe])
        pump([srv.pe], lambda: pdone == [d.ErrorCode.SUCCESS])
        late = prod.task_send_alloc_init(src, None, cid)
        ch.kill()
        until_loss_queued(conn)
        late.submit()  # the consumer's credits died with the connection: accepted, as in flight
        recvs[1].submit()
        pump([srv.pe], lambda: len(pdone) == 2 and len(rdone) == 2
             and any(k == "disconnect" for k, _ in srv.events))
        assert pdone[1] == d.ErrorCode.CONNECTION_RESET
        assert rdone == [d.ErrorCode.CONNECTION_RESET] * 2  # the posted receive and the one posted late
        assert prod.get_state() == CtxState.STOPPING and cons.get_state() == CtxState.STOPPING
        for ctx in (prod, cons):
            free_all(ctx)
        pump([srv.pe], lambda: prod.get_state() == CtxState.IDLE and cons.get_state() == CtxState.IDLE)
        prod.close()
        cons.close()
        for b in (src, *bufs):
            b.close()
        mm.close()


def test_a_message_submitted_as_the_killed_server_is_noticed_fails_with_connection_reset(
        long_window: None) -> None:
    """The client's side of the same race: the server's loss stops the client before a message submitted
    meanwhile is launched; that message fails with CONNECTION_RESET, not IO_FAILED."""
    with client_of_child_server(unique_name(), 4) as (cli, ch):
        conn = cli.ctx.get_connection()
        late = cli.ctx.task_send_alloc_init(conn, b"late")
        ch.kill()
        until_loss_queued(conn)
        late.submit()
        pump([cli.pe], lambda: len(cli.sent) == 1)
        assert [st for _, _, st in cli.sent] == [d.ErrorCode.CONNECTION_RESET]
        assert cli.ctx.get_state() == CtxState.STOPPING
        free_all(cli.ctx)
        pump([cli.pe], lambda: cli.ctx.get_state() == CtxState.IDLE)
