"""A comch peer that stops answering (SIGSTOP): work waiting for it fails after the retry window and the
connection goes down as when the peer's socket closes; a short stop and an idle connection are no failure.

The child is ``python -m tests.comch.peer``; this process shortens its retry window with
``doca_py.emulated.comch.configure`` before the connection is made. The only sleeps are the deliberate
SIGSTOP durations; every wait is bounded.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import doca_py as d
from doca_py.comch import ComchProducer
from doca_py.types import CtxState

from .helpers import Child, Endpoint, client_of_child_server, free_all, local_mmap, pump, server_side, \
    submit_when_posted, unique_name

pytestmark = [pytest.mark.multiprocess, pytest.mark.usefixtures("backend")]


@contextmanager
def _window(seconds: float) -> Iterator[None]:
    from doca_py.emulated import comch as emu

    emu.configure(retry_window=seconds)
    try:
        yield
    finally:
        emu.configure(retry_window=0)


@contextmanager
def _child(role: str, name: str, pes: list[d.Pe]) -> Iterator[Child]:
    ch = Child(role, name, pes)
    try:
        yield ch
    finally:
        if ch.p.poll() is None:
            ch.p.send_signal(signal.SIGCONT)
        ch.kill()
        ch.close()


def _conn(ep: Endpoint) -> Any:
    return [c for k, c in ep.events if k == "connect"][0]


def _producer(srv: Endpoint, conn: Any, done: list[Any]) -> ComchProducer:
    prod = ComchProducer(conn)
    srv.pe.connect_ctx(prod)
    prod.task_send_set_conf(lambda t, u, c: done.append(t.get_status()),
                            lambda t, u, c: done.append(t.get_status()), 8)
    prod.start()
    return prod


def test_stopped_client_fails_waiting_sends_and_the_server_keeps_serving(transport: str) -> None:
    """Over the socket or the rings, what waits for a stopped peer fails after the retry window."""
    name = unique_name()
    window = 0.6
    with _window(window), server_side(name, num_tasks=2048) as (srv, dev), d.BufInventory(16) as inv, \
            _child("client", name, [srv.pe]) as ch:
        assert ch.ask("conn") == "conn"
        cid = int(ch.ask("consumer 2 4096").split()[1])
        pump([srv.pe], lambda: cid in srv.ids("new_consumer"))
        conn = _conn(srv)
        if transport == "rings":
            assert conn._h.shm is not None, "the connection did not switch to the rings"
        mm, _ = local_mmap(dev)
        pdone: list[Any] = []
        prod = _producer(srv, conn, pdone)
        src = inv.buf_get_by_data(mm, mm.get_memrange()[0], 512)
        ch.p.send_signal(signal.SIGSTOP)
        t0 = time.monotonic()
        sends = [prod.task_send_alloc_init(src, None, cid) for _ in range(2)]
        for t in sends:
            submit_when_posted(t, [srv.pe])
        msg = os.urandom(4080)
        for _ in range(2048):  # 8 MiB: more than the socket holds
            srv.ctx.task_send_alloc_init(conn, msg).submit()
        pump([srv.pe], lambda: any(k == "disconnect" for k, _ in srv.events) and len(pdone) == 2
             and len(srv.sent) == 2048)
        took = time.monotonic() - t0
        assert window * 0.9 <= took <= window + 5, took
        assert pdone == [d.ErrorCode.IO_FAILED] * 2
        failed = {st for k, _, st in srv.sent if k == "err"}
        assert failed == {d.ErrorCode.IO_FAILED}
        assert srv.ctx.get_state() == CtxState.RUNNING  # a multi-client server keeps running
        free_all(prod)
        pump([srv.pe], lambda: prod.get_state() == CtxState.IDLE)
        prod.close()
        for _, t, _ in srv.sent:
            t.free()
        src.close()
        mm.close()


def test_stopped_server_moves_the_client_to_idle() -> None:
    name = unique_name()
    window = 0.6
    with _window(window), client_of_child_server(name, 2048, spawn=_child) as (cli, ch):
        pe = cli.pe
        ch.p.send_signal(signal.SIGSTOP)
        t0 = time.monotonic()
        msg = os.urandom(4080)
        for _ in range(2048):  # 8 MiB: more than the socket holds
            cli.ctx.task_send_alloc_init(cli.ctx.get_connection(), msg).submit()
        pump([pe], lambda: cli.ctx.get_state() != CtxState.RUNNING and len(cli.sent) == 2048)
        assert window * 0.9 <= time.monotonic() - t0 <= window + 5
        assert cli.ctx.get_state() == CtxState.STOPPING
        errs = {st for k, _, st in cli.sent if k == "err"}
        assert errs and errs <= {d.ErrorCode.IO_FAILED}
        free_all(cli.ctx)
        pump([pe], lambda: cli.ctx.get_state() == CtxState.IDLE)


def _two_sends_to_a_stopped_peer(srv: Endpoint, dev: d.Dev, inv: d.BufInventory, ch: Child, receives: int,
                                 fill: bytes) -> tuple[int, d.Mmap, d.Buf, ComchProducer, list[Any]]:
    """The child connected, with a consumer of *receives* posted receives; then SIGSTOPped, with two
    producer sends of 512 *fill* bytes on the wire to it, unacknowledged. (consumer id, our map, the
    source buffer, the producer, its completion statuses)"""
    assert ch.ask("conn") == "conn"
    cid = int(ch.ask(f"consumer {receives} 4096").split()[1])
    pump([srv.pe], lambda: cid in srv.ids("new_consumer"))
    mm, mem = local_mmap(dev)
    pdone: list[Any] = []
    prod = _producer(srv, _conn(srv), pdone)
    mem[:512] = fill * 512
    src = inv.buf_get_by_data(mm, mm.get_memrange()[0], 512)
    ch.p.send_signal(signal.SIGSTOP)
    for _ in range(2):
        submit_when_posted(prod.task_send_alloc_init(src, None, cid), [srv.pe])
    srv.pe.progress()
    return cid, mm, src, prod, pdone


def test_peer_stopped_shorter_than_the_window_is_no_failure() -> None:
    name = unique_name()
    with _window(2.0), server_side(name) as (srv, dev), d.BufInventory(16) as inv, \
            _child("client", name, [srv.pe]) as ch:
        cid, mm, src, prod, pdone = _two_sends_to_a_stopped_peer(srv, dev, inv, ch, 2, b"z")
        time.sleep(0.5)  # the deliberate stop, with the producer data unacknowledged
        ch.p.send_signal(signal.SIGCONT)
        pump([srv.pe], lambda: len(pdone) == 2)
        assert pdone == [d.ErrorCode.SUCCESS] * 2
        assert len(ch.ask("recvd 2").split()) == 3
        assert not any(k == "disconnect" for k, _ in srv.events)
        free_all(prod)
        prod.close()
        src.close()
        mm.close()


def test_idle_connection_survives_a_stop_longer_than_the_window() -> None:
    name = unique_name()
    window = 0.4
    with _window(window), server_side(name) as (srv, _), _child("client", name, [srv.pe]) as ch:
        assert ch.ask("conn") == "conn"
        pump([srv.pe], lambda: any(k == "connect" for k, _ in srv.events))
        ch.p.send_signal(signal.SIGSTOP)
        end = time.monotonic() + 3 * window  # the deliberate stop; nothing is in flight
        while time.monotonic() < end:
            srv.pe.wait(end - time.monotonic())
        ch.p.send_signal(signal.SIGCONT)
        assert ch.ask("send 6869") == "sent SUCCESS"
        pump([srv.pe], lambda: bool(srv.msgs))
        assert srv.msgs[0][0] == b"hi"
        conn = _conn(srv)
        srv.ctx.task_send_alloc_init(conn, b"back").submit()
        pump([srv.pe], lambda: bool(srv.sent))
        assert srv.sent[0][0] == "ok"
        assert ch.ask("msgs 1") == "msgs " + b"back".hex()
        assert not any(k == "disconnect" for k, _ in srv.events)
        srv.sent[0][1].free()


def test_stopping_a_producer_flushes_sends_a_stopped_peer_has_not_acknowledged() -> None:
    """Hardware flushes a queue's outstanding work on stop: the producer goes IDLE at once, not after the
    retry window; the peer, resumed, still gets the data, its ACKs complete nothing twice, and the
    connection carries on."""
    name = unique_name()
    window = 60.0  # far beyond the bounded waits: only the flush can end the stop in time
    with _window(window), server_side(name) as (srv, dev), d.BufInventory(16) as inv, \
            _child("client", name, [srv.pe]) as ch:
        cid, mm, src, prod, pdone = _two_sends_to_a_stopped_peer(srv, dev, inv, ch, 4, b"q")
        assert not pdone and prod.get_num_inflight_tasks() == 2
        prod.stop()
        pump([srv.pe], lambda: len(pdone) == 2, deadline=window / 4)
        assert pdone == [d.ErrorCode.IO_FAILED] * 2  # DOCA's flush status here
        free_all(prod)
        pump([srv.pe], lambda: prod.get_state() == CtxState.IDLE, deadline=window / 4)
        ch.p.send_signal(signal.SIGCONT)
        prod.start()
        submit_when_posted(prod.task_send_alloc_init(src, None, cid), [srv.pe])
        pump([srv.pe], lambda: len(pdone) == 3, deadline=window / 4)
        assert pdone[2] == d.ErrorCode.SUCCESS
        got = ch.ask("recvd 3").split()[1:]
        assert len(got) == 3 and all(g.endswith((b"q" * 512).hex()) for g in got)
        assert not any(k == "disconnect" for k, _ in srv.events)
        free_all(prod)
        prod.close()
        src.close()
        mm.close()
