"""Same-host comch over the shared-memory rings (doca_py.emulated.comch.shm): the DOCA rules that hold
over the socket hold on the ring path (order, credits and AGAIN, resets, malformed peers)."""

from __future__ import annotations

import os
import select
from collections.abc import Iterator
from typing import Any

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.comch import ComchConsumer, ComchProducer
from doca_py.types import CtxState

from ..comch.helpers import (
    Pair, free_all, local_mmap, pair, pump, server_side, submit_when_posted, unique_name,
)

pytestmark = pytest.mark.usefixtures("rings")


@pytest.fixture
def rings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The rings are opt-in (``DOCA_PY_COMCH_SHM``): on for this process and the children it starts."""
    if d.impl != "emulated":
        pytest.skip("the shared-memory rings are the emulated backend's transport")
    from doca_py.emulated.comch import config

    monkeypatch.setenv("DOCA_PY_COMCH_SHM", "1")
    config.configure(shm=True)
    try:
        yield
    finally:
        config.configure(shm=False)


def _h(conn: Any) -> Any:
    return getattr(conn, "_h", conn)


def _ringed(p: Pair) -> tuple[Any, Any]:
    s, c = _h(p.sconn), _h(p.cconn)
    assert s.shm is not None and c.shm is not None, "the connection did not switch to the rings"
    return s, c


def _send_all(p: Pair, msgs: list[bytes], sender: str = "client") -> None:
    """Submit every message from *sender* with its task pool's size in flight, freeing completed ones."""
    ep = p.client if sender == "client" else p.server
    conn = p.cconn if sender == "client" else p.sconn
    i = 0
    while i < len(msgs):
        while i < len(msgs):
            try:
                t = ep.ctx.task_send_alloc_init(conn, msgs[i])
            except e.DocaError:
                break  # the pool is empty: progress first
            t.submit()
            i += 1
        for pe in p.pes:
            pe.progress()
        for k, t, st in ep.sent:
            assert k == "ok", st
            t.free()
        ep.sent.clear()


def test_order_both_ways_and_wrap_around(monkeypatch: pytest.MonkeyPatch) -> None:
    from doca_py.emulated.comch import shm

    monkeypatch.setattr(shm, "RING_SIZE", 8192)  # 8 KiB per direction: wraps and fills many times
    with pair(num_tasks=64) as p:
        s, c = _ringed(p)
        assert s.shm.tx.ring.size == 8192
        up = [i.to_bytes(4, "little") * (1 + i % 300) for i in range(3000)]  # ~1.8 MB
        down = [b"d" + i.to_bytes(4, "little") for i in range(2000)]
        _send_all(p, up, "client")
        _send_all(p, down, "server")
        p.pump(lambda: len(p.server.msgs) == len(up) and len(p.client.msgs) == len(down))
        assert [m for m, _ in p.server.msgs] == up
        assert [m for m, _ in p.client.msgs] == down
        assert s.shm.rx.pos > 8 * 8192  # wrapped
        assert _h(p.sconn).is_connected() and _h(p.cconn).is_connected()


def test_sleeping_peer_is_woken_by_the_doorbell() -> None:
    with pair() as p:
        _ringed(p)
        spe, cpe = p.server.pe, p.client.pe
        p.pump(lambda: not spe.progress() and not cpe.progress())  # both idle
        spe.request_notification()  # asleep: asks the sender for a doorbell
        assert select.select([spe], [], [], 0)[0] == []
        p.client.ctx.task_send_alloc_init(p.cconn, b"wake up").submit()
        cpe.progress()  # launch: queued on the connection
        cpe.progress()  # flush: into the ring, doorbell rung at once (not after the I/O thread's nudge)
        assert select.select([spe], [], [], 0)[0] == [spe]
        spe.clear_notification()
        p.pump(lambda: len(p.server.msgs) == 1)
        assert p.server.msgs[0][0] == b"wake up"


def _producer_to_consumer(p: Pair, tasks: int) -> tuple[Any, Any, Any, ComchConsumer, list[Any], ComchProducer,
                                                         list[Any]]:
    """A running consumer on the server side (its map, its completed receives) and a running producer on the
    client side (the client's map and its memory, the producer's completion statuses), *tasks* each."""
    smm, _ = local_mmap(p.dpu)
    cmm, cmem = local_mmap(p.host)
    cons = ComchConsumer(p.sconn, smm)
    p.server.pe.connect_ctx(cons)
    rdone: list[Any] = []
    cons.task_post_recv_set_conf(lambda t, u, c: rdone.append(t), lambda t, u, c: rdone.append(t), tasks)
    cons.start()
    p.pump(lambda: cons.get_state() == CtxState.RUNNING and cons.get_id() in p.client.ids("new_consumer"))
    prod = ComchProducer(p.cconn)
    p.client.pe.connect_ctx(prod)
    sdone: list[Any] = []
    prod.task_send_set_conf(lambda t, u, c: sdone.append(t.get_status()),
                            lambda t, u, c: sdone.append(t.get_status()), tasks)
    prod.start()
    return smm, cmm, cmem, cons, rdone, prod, sdone


def test_a_pe_that_does_not_progress_still_acknowledges_producer_data() -> None:
    """Over the socket the I/O thread lands producer data; on the rings the sender's nudge makes the
    receiver's I/O thread serve the ring while its Pe does not progress."""
    with pair() as p, d.BufInventory(8) as inv:
        _ringed(p)
        smm, cmm, cmem, cons, rdone, prod, sdone = _producer_to_consumer(p, 4)
        dst = inv.buf_get_by_addr(smm, smm.get_memrange()[0], 64)
        cons.task_post_recv_alloc_init(dst).submit()
        cmem[:4] = b"data"
        src = inv.buf_get_by_data(cmm, cmm.get_memrange()[0], 4)
        t = prod.task_send_alloc_init(src, b"im", cons.get_id())
        submit_when_posted(t, p.pes)
        pump([p.client.pe], lambda: bool(sdone))  # only the producer's Pe progresses from here
        assert sdone == [d.ErrorCode.SUCCESS]
        assert bytes(dst.data_view()) == b"data"
        p.pump(lambda: bool(rdone))
        assert rdone[0].get_imm_data() == b"im"
        for o in (prod, cons):
            free_all(o)
            o.close()
        for o2 in (dst, src, smm, cmm):
            o2.close()


def test_producer_data_credits_and_again() -> None:
    with pair() as p, d.BufInventory(32) as inv:
        _ringed(p)
        smm, cmm, cmem, cons, rdone, prod, sdone = _producer_to_consumer(p, 16)
        srcs = []
        for i in range(8):
            cmem[i * 64:i * 64 + 8] = i.to_bytes(8, "little")
            srcs.append(inv.buf_get_by_data(cmm, cmm.get_memrange()[0] + i * 64, 8))
        tasks = [prod.task_send_alloc_init(s, bytes([i]), cons.get_id()) for i, s in enumerate(srcs)]
        with pytest.raises(e.DocaAgain):
            tasks[0].submit()  # no receive posted yet
        dsts = [inv.buf_get_by_addr(smm, smm.get_memrange()[0] + i * 64, 64) for i in range(8)]
        for dst in dsts[:4]:
            cons.task_post_recv_alloc_init(dst).submit()
        for t in tasks[:4]:
            submit_when_posted(t, p.pes)
        with pytest.raises(e.DocaAgain):
            tasks[4].submit()  # the 4 credits are spent
        p.pump(lambda: len(sdone) == 4 and len(rdone) == 4)
        for dst in dsts[4:]:
            cons.task_post_recv_alloc_init(dst).submit()
        for t in tasks[4:]:
            submit_when_posted(t, p.pes)
        p.pump(lambda: len(sdone) == 8 and len(rdone) == 8)
        assert sdone == [d.ErrorCode.SUCCESS] * 8
        # In order: receive i got send i (callbacks may be shuffled: look at the buffers).
        assert [bytes(dst.data_view()) for dst in dsts] == [i.to_bytes(8, "little") for i in range(8)]
        assert sorted((r.get_imm_data(), bytes(r.get_buf().data_view())) for r in rdone) == \
            [(bytes([i]), i.to_bytes(8, "little")) for i in range(8)]
        for o in (prod, cons):
            free_all(o)
            o.close()
        for o2 in (*dsts, *srcs, smm, cmm):
            o2.close()


def _disconnected(p: Pair) -> bool:
    return any(k == "disconnect" for k, _ in p.server.events)


@pytest.mark.parametrize("how", ["kind", "length", "head", "frame", "socket"])
def test_malformed_ring_content_breaks_only_that_connection(how: str) -> None:
    from doca_py.emulated.comch import shm
    from doca_py.emulated.transport.shmring import REC_HDR

    with pair() as p:
        _s, c = _ringed(p)
        tx = c.shm.tx  # the client's view of the ring the server reads
        ring = tx.ring
        with c.lock:
            off = tx.pos & ring.mask
            if how == "kind":
                REC_HDR.pack_into(ring.data, off, 16, 9, 0, 0, 0, 0)
                ring.head.value = tx.pos + 32
            elif how == "length":
                REC_HDR.pack_into(ring.data, off, 1 << 30, shm.K_BYTES, 0, 0, 0, 0)
                ring.head.value = tx.pos + 32
            elif how == "head":
                ring.head.value = tx.pos + 10 * ring.size
            elif how == "frame":  # a well-formed record carrying a frame of unknown type
                tx.put_one(shm.K_BYTES, 0, 0, 0, bytes([99]) + bytes(19), 20, None)
                tx.publish()
            else:  # anything but a nudge on the socket
                assert c.sock is not None
                c.sock.send(b"junk")
        p.pump(lambda: _disconnected(p))
        assert p.server.ctx.get_state() == CtxState.RUNNING
        p.pump(lambda: p.client.ctx.get_state() != CtxState.RUNNING)  # its socket closed: it goes too


# A peer SIGKILLed with messages and producer data queued in the ring: tests/comch/test_comch_multiprocess.py
# (test_client_killed_mid_transfer_..., parametrized over the socket and the rings); a silent (SIGSTOPped)
# peer: tests/comch/test_comch_silent_peer.py (likewise).


@pytest.mark.parametrize("offer", ["unsealed", "none", "not_a_ring"])
def test_hostile_ring_offer_is_refused_and_the_server_keeps_serving(offer: str) -> None:
    """A client whose HELLO offers no ring, a ring it could shrink under our mapping (unsealed), or
    something that is not a ring: the server drops that connection and keeps running."""
    import socket

    from doca_py.emulated.comch.wire import HDR, MAGIC, T_HELLO, VERSION
    from doca_py.emulated.transport.shmring import Ring, send_fds

    name = unique_name()
    with server_side(name) as (srv, dev):
        path = _h(srv.ctx).path
        raw = name.encode()
        hello = HDR.pack(T_HELLO, 1, VERSION, len(raw), MAGIC, 4080) + raw
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        ring = Ring.create(8192, sealed=False) if offer == "unsealed" else None
        efd = os.eventfd(0)
        try:
            s.connect(path)
            if offer == "none":
                s.send(hello)
            elif ring is not None:
                send_fds(s, hello, [ring.fd, efd])
            else:
                send_fds(s, hello, [efd, efd])
            got: list[bytes] = []

            def closed() -> bool:
                if select.select([s], [], [], 0)[0]:
                    got.append(s.recv(4096))
                return bool(got) and got[-1] == b""

            pump([srv.pe], closed)
            assert b"".join(got) == b""  # no WELCOME: dropped at once
            assert srv.ctx.get_state() == CtxState.RUNNING and not srv.ids("connect")
        finally:
            s.close()
            os.close(efd)
            if ring is not None:
                ring.close()
        # A well-behaved client still gets in, on the rings.
        with d.Dev.open_by_pci_addr("3b:00.0") as host, d.Pe() as cpe:
            from doca_py.comch import ComchClient

            cli = ComchClient(host, name)
            cpe.connect_ctx(cli)
            cli.start()
            pump([srv.pe, cpe], lambda: cli.get_state() == CtxState.RUNNING)
            assert _h(cli.get_connection()).shm is not None
            cli.stop()
            pump([srv.pe, cpe], lambda: cli.get_state() == CtxState.IDLE)
            cli.close()
