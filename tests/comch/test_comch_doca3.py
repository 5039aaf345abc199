"""DOCA 3.x comch rules: a producer send is refused at ``submit`` (``DOCA_ERROR_AGAIN``) while the
remote consumer has no receive posted, tasks do their work in ``Pe.progress()``, and the comch
queues stay FIFO.

Sources: DOCA 3.0 ``doca_comch_producer.h`` / the ``comch_data_path_high_speed`` sample and the
3.2 storage initiator, which loop ``do { doca_task_submit } while (DOCA_ERROR_AGAIN)`` and treat the
producer's error callback as fatal.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

import doca_py as d
from doca_py import errors as e
from doca_py.comch import ComchConsumer, ComchProducer
from doca_py.types import CtxState

from .helpers import Pair, child, free_all, local_mmap, pair, pump, server_side, submit_when_posted, unique_name

pytestmark = pytest.mark.usefixtures("backend")


def _emulated_only() -> None:
    if d.impl != "emulated":
        pytest.skip("checks the emulator's internals or fault injection")


@pytest.fixture
def link() -> Iterator[tuple[Pair, d.BufInventory, d.Mmap, memoryview, d.Mmap, memoryview]]:
    """A pair, an inventory, the server's consumer map and the client's producer map."""
    with pair() as p, d.BufInventory(32) as inv:
        smm, smem = local_mmap(p.dpu)
        cmm, cmem = local_mmap(p.host)
        try:
            yield p, inv, smm, smem, cmm, cmem
        finally:
            smm.close()
            cmm.close()


def _consumer(p: Pair, mm: d.Mmap, n: int = 8) -> tuple[ComchConsumer, list[Any]]:
    """A consumer on the server side (started, not yet progressed)."""
    cons = ComchConsumer(p.sconn, mm)
    p.server.pe.connect_ctx(cons)
    done: list[Any] = []
    cons.task_post_recv_set_conf(lambda t, u, c: done.append(("ok", t, t.get_status())),
                                 lambda t, u, c: done.append(("err", t, t.get_status())), n)
    assert cons.start() == CtxState.STARTING  # DOCA: IN_PROGRESS
    return cons, done


def _producer(p: Pair, n: int = 8) -> tuple[ComchProducer, list[Any]]:
    """A producer on the client side (RUNNING)."""
    prod = ComchProducer(p.cconn)
    p.client.pe.connect_ctx(prod)
    done: list[Any] = []
    prod.task_send_set_conf(lambda t, u, c: done.append(("ok", t, t.get_status())),
                            lambda t, u, c: done.append(("err", t, t.get_status())), n)
    assert prod.start() == CtxState.RUNNING
    return prod, done


def _close(*objs: Any) -> None:
    for o in objs:
        if isinstance(o, d.Ctx):
            free_all(o)
        o.close()


def test_submit_raises_again_until_a_receive_is_posted(link: Any) -> None:
    p, inv, smm, smem, cmm, cmem = link
    cons, rdone = _consumer(p, smm)
    p.pump(lambda: cons.get_state() == CtxState.RUNNING and cons.get_id() in p.client.ids("new_consumer"))
    prod, sdone = _producer(p)
    cmem[:5] = b"hello"
    src = inv.buf_get_by_data(cmm, cmm.get_memrange()[0], 5)
    t = prod.task_send_alloc_init(src, None, cons.get_id())
    for _ in range(3):
        with pytest.raises(e.DocaAgain):
            t.submit()
    # The caller keeps the task: allocated, not in flight, no callback, the producer runs.
    assert t._allocated and not t._h.inflight and prod.get_num_inflight_tasks() == 0
    for _ in range(5):
        for pe in p.pes:
            pe.progress()
    assert sdone == [] and prod.get_state() == CtxState.RUNNING
    dst = inv.buf_get_by_addr(smm, smm.get_memrange()[0], 64)
    cons.task_post_recv_alloc_init(dst).submit()
    submit_when_posted(t, p.pes)
    p.pump(lambda: bool(sdone) and bool(rdone))
    assert sdone[0][0] == "ok" and rdone[0][0] == "ok" and bytes(dst.data_view()) == b"hello"
    # That receive is used up: AGAIN again.
    with pytest.raises(e.DocaAgain):
        t.submit()
    assert [k for k, _, _ in sdone] == ["ok"]
    _close(prod, cons, dst, src)


def test_again_for_an_announced_consumer_whose_pe_has_not_run(link: Any) -> None:
    p, inv, smm, smem, cmm, cmem = link
    cons, rdone = _consumer(p, smm)
    # Only the producer's side progresses: the peer heard of the consumer, which has posted nothing.
    pump([p.client.pe], lambda: cons.get_id() in p.client.ids("new_consumer"))
    assert cons.get_state() == CtxState.STARTING
    prod, sdone = _producer(p)
    src = inv.buf_get_by_data(cmm, cmm.get_memrange()[0], 16)
    t = prod.task_send_alloc_init(src, None, cons.get_id())
    with pytest.raises(e.DocaAgain):
        t.submit()
    pump([p.server.pe], lambda: cons.get_state() == CtxState.RUNNING)
    dst = inv.buf_get_by_addr(smm, smm.get_memrange()[0], 64)
    cons.task_post_recv_alloc_init(dst).submit()
    # Submitted but not yet run by its Pe: not posted, so still AGAIN.
    for _ in range(3):
        p.client.pe.progress()
        with pytest.raises(e.DocaAgain):
            t.submit()
    submit_when_posted(t, p.pes)
    p.pump(lambda: bool(sdone) and bool(rdone))
    assert sdone[0][0] == "ok" and rdone[0][0] == "ok" and not [x for x in sdone if x[0] == "err"]
    _close(prod, cons, dst, src)


def test_the_source_is_read_at_progress_not_at_submit(link: Any) -> None:
    p, inv, smm, smem, cmm, cmem = link
    cons, rdone = _consumer(p, smm)
    p.pump(lambda: cons.get_state() == CtxState.RUNNING)
    dst = inv.buf_get_by_addr(smm, smm.get_memrange()[0], 4096)
    cons.task_post_recv_alloc_init(dst).submit()
    p.pump(lambda: cons.get_id() in p.client.ids("new_consumer"))
    prod, sdone = _producer(p)
    n = 3000
    cmem[:n] = b"A" * n
    src = inv.buf_get_by_data(cmm, cmm.get_memrange()[0], n)
    t = prod.task_send_alloc_init(src, b"imm", cons.get_id())
    submit_when_posted(t, [p.server.pe])  # only the consumer's side progresses meanwhile
    cmem[:n] = b"B" * n  # rewritten after submit, before the producer's Pe ran the task
    p.pump(lambda: bool(sdone) and bool(rdone))
    assert bytes(dst.data_view()) == b"B" * n and rdone[0][1].get_imm_data() == b"imm"
    _close(prod, cons, dst, src)


def test_injected_again_is_raised_by_submit(link: Any) -> None:
    _emulated_only()
    from doca_py.emulated import strict

    p, inv, smm, smem, cmm, cmem = link
    cons, rdone = _consumer(p, smm)
    p.pump(lambda: cons.get_state() == CtxState.RUNNING)
    dst = inv.buf_get_by_addr(smm, smm.get_memrange()[0], 64)
    cons.task_post_recv_alloc_init(dst).submit()
    remote = p.cconn._h.remote  # the producer side's view of the peer's consumers
    p.pump(lambda: cons.get_id() in remote and remote[cons.get_id()].credits == 1)
    prod, sdone = _producer(p)
    src = inv.buf_get_by_data(cmm, cmm.get_memrange()[0], 8)
    t = prod.task_send_alloc_init(src, None, cons.get_id())
    strict.configure(faults="comch_producer_send=1.0")
    try:
        for _ in range(5):
            with pytest.raises(e.DocaAgain, match="fault injected"):
                t.submit()
        assert not t._h.inflight and sdone == [] and remote[cons.get_id()].credits == 1  # the credit is kept
    finally:
        strict.configure()
    t.submit()  # the receive is still posted: accepted at once
    p.pump(lambda: bool(sdone) and bool(rdone))
    assert sdone[0][0] == "ok"
    _close(prod, cons, dst, src)


def test_stale_credit_waits_for_the_next_receive_instead_of_failing(link: Any) -> None:
    """A credit spent on a consumer that restarted before the data arrived: the receiving side
    answers AGAIN, and the send waits in flight for the next receive (no AGAIN callback)."""
    _emulated_only()
    p, inv, smm, smem, cmm, cmem = link
    cons, rdone = _consumer(p, smm)
    p.pump(lambda: cons.get_state() == CtxState.RUNNING)
    r1 = inv.buf_get_by_addr(smm, smm.get_memrange()[0], 64)
    cons.task_post_recv_alloc_init(r1).submit()
    remote = p.cconn._h.remote
    p.pump(lambda: cons.get_id() in remote and remote[cons.get_id()].credits == 1)
    prod, sdone = _producer(p)
    cmem[:4] = b"late"
    src = inv.buf_get_by_data(cmm, cmm.get_memrange()[0], 4)
    t = prod.task_send_alloc_init(src, None, cons.get_id())
    t.submit()  # takes the credit; the producer's Pe has not run it yet
    # The consumer restarts meanwhile (its receive is flushed): the credit is stale.
    assert cons.stop() == CtxState.STOPPING
    pump([p.server.pe], lambda: bool(rdone))
    assert rdone[0][0] == "err"
    free_all(cons)
    pump([p.server.pe], lambda: cons.get_state() == CtxState.IDLE)
    assert cons.start() == CtxState.STARTING
    pump([p.server.pe], lambda: cons.get_state() == CtxState.RUNNING)
    # Now the data goes out and finds no receive: it waits, in flight, without a callback.
    for _ in range(50):
        for pe in p.pes:
            pe.wait(0.002)
    assert sdone == [] and t._h.inflight and prod.get_state() == CtxState.RUNNING
    r2 = inv.buf_get_by_addr(smm, smm.get_memrange()[0] + 1024, 64)
    cons.task_post_recv_alloc_init(r2).submit()
    p.pump(lambda: bool(sdone) and len(rdone) == 2)
    assert sdone[0][0] == "ok" and rdone[1][0] == "ok" and bytes(r2.data_view()) == b"late"
    _close(prod, cons, r1, r2, src)


def test_a_stopped_producer_gives_back_the_credit_it_did_not_use(link: Any) -> None:
    p, inv, smm, smem, cmm, cmem = link
    cons, rdone = _consumer(p, smm)
    p.pump(lambda: cons.get_state() == CtxState.RUNNING)
    dst = inv.buf_get_by_addr(smm, smm.get_memrange()[0], 64)
    cons.task_post_recv_alloc_init(dst).submit()
    p.pump(lambda: cons.get_id() in p.client.ids("new_consumer"))
    a, adone = _producer(p)
    b, bdone = _producer(p)
    src = inv.buf_get_by_data(cmm, cmm.get_memrange()[0], 8)
    ta = a.task_send_alloc_init(src, None, cons.get_id())
    submit_when_posted(ta, [p.server.pe])  # takes the only credit ...
    tb = b.task_send_alloc_init(src, None, cons.get_id())
    with pytest.raises(e.DocaAgain):
        tb.submit()
    assert a.stop() == CtxState.STOPPING  # ... and is flushed before it ran
    pump([p.client.pe], lambda: bool(adone))
    assert adone[0][0] == "err" and adone[0][2] == d.ErrorCode.IO_FAILED
    tb.submit()  # the credit came back
    p.pump(lambda: bool(bdone) and bool(rdone))
    assert bdone[0][0] == "ok" and rdone[0][1].get_producer_id() == b.get_id()
    _close(a, b, cons, dst, src)


def test_queues_are_fifo_even_when_the_pe_shuffles(link: Any) -> None:
    p, inv, smm, smem, cmm, cmem = link
    cons, rdone = _consumer(p, smm, n=16)
    p.pump(lambda: cons.get_state() == CtxState.RUNNING)
    base = smm.get_memrange()[0]
    dsts = [inv.buf_get_by_addr(smm, base + i * 256, 256) for i in range(8)]
    for b in dsts:
        cons.task_post_recv_alloc_init(b).submit()  # filled in posting order
    p.pump(lambda: cons.get_id() in p.client.ids("new_consumer"))
    prod, sdone = _producer(p)
    cbase = cmm.get_memrange()[0]
    payloads = [os.urandom(100 + i) for i in range(8)]
    srcs = []
    for i, data in enumerate(payloads):
        cmem[i * 256:i * 256 + len(data)] = data
        srcs.append(inv.buf_get_by_data(cmm, cbase + i * 256, len(data)))
    tasks = [prod.task_send_alloc_init(s, None, cons.get_id()) for s in srcs]
    submit_when_posted(tasks[0], p.pes)
    for t in tasks[1:]:
        t.submit()  # the 8 credits came in together
    p.pump(lambda: len(sdone) == 8 and len(rdone) == 8)
    assert [bytes(b.data_view()) for b in dsts] == payloads
    _close(prod, cons, *dsts, *srcs)


def test_state_machine_of_consumer_and_producer(link: Any) -> None:
    p, inv, smm, smem, cmm, cmem = link
    cons = ComchConsumer(p.sconn, smm)
    prod = ComchProducer(p.cconn)
    p.server.pe.connect_ctx(cons)
    p.client.pe.connect_ctx(prod)
    cons.task_post_recv_set_conf(lambda *a: None, lambda *a: None, 2)
    prod.task_send_set_conf(lambda *a: None, lambda *a: None, 2)
    assert cons.stop() == CtxState.IDLE and prod.stop() == CtxState.IDLE  # stopping an idle ctx
    assert cons.start() == CtxState.STARTING  # IN_PROGRESS
    assert prod.start() == CtxState.RUNNING
    p.pump(lambda: cons.get_state() == CtxState.RUNNING)
    assert cons.stop() == CtxState.IDLE and prod.stop() == CtxState.IDLE
    cons.close()
    prod.close()


def test_strict_mode_pins_the_buffers_of_comch_tasks(link: Any) -> None:
    _emulated_only()
    from doca_py.emulated import strict

    if not strict.STRICT:
        pytest.skip("strict mode is off")
    p, inv, smm, smem, cmm, cmem = link
    cons, rdone = _consumer(p, smm)
    p.pump(lambda: cons.get_state() == CtxState.RUNNING)
    dst = inv.buf_get_by_addr(smm, smm.get_memrange()[0], 64)
    cons.task_post_recv_alloc_init(dst).submit()
    with pytest.raises(d.DocaUsageError):
        dst.reset_data_len()  # DOCA writes into it until the receive completes
    p.pump(lambda: cons.get_id() in p.client.ids("new_consumer"))
    prod, sdone = _producer(p)
    src = inv.buf_get_by_data(cmm, cmm.get_memrange()[0], 8)
    submit_when_posted(prod.task_send_alloc_init(src, None, cons.get_id()), p.pes)
    with pytest.raises(d.DocaUsageError):
        src.set_data(src.get_data(), 4)
    p.pump(lambda: bool(sdone) and bool(rdone))
    src.set_data(src.get_data(), 4)  # free again once completed
    _close(prod, cons, dst, src)


@pytest.mark.multiprocess
def test_again_at_submit_across_processes() -> None:
    name = unique_name()
    with server_side(name) as (srv, dev), child("client", name, [srv.pe]) as ch, d.BufInventory(8) as inv:
        assert ch.ask("conn") == "conn"
        pump([srv.pe], lambda: any(k == "connect" for k, _ in srv.events))
        conn = [c for k, c in srv.events if k == "connect"][0]
        mm, mem = local_mmap(dev)
        base = mm.get_memrange()[0]
        # Our producer -> the child's consumer, which posted none of its 2 receives.
        cid = int(ch.ask("consumer 2 4096 0").split()[1])
        pump([srv.pe], lambda: cid in srv.ids("new_consumer"))
        prod = ComchProducer(conn)
        srv.pe.connect_ctx(prod)
        pdone: list[Any] = []
        prod.task_send_set_conf(lambda t, u, c: pdone.append(("ok", t.get_status())),
                                lambda t, u, c: pdone.append(("err", t.get_status())), 4)
        prod.start()
        payload = os.urandom(3000)
        mem[:3000] = payload
        src = inv.buf_get_by_data(mm, base, 3000)
        t = prod.task_send_alloc_init(src, None, cid)
        with pytest.raises(e.DocaAgain):
            t.submit()
        assert not t._h.inflight and pdone == []
        assert ch.ask("post 1") == "posted 1"
        submit_when_posted(t, [srv.pe])
        pump([srv.pe], lambda: bool(pdone))
        assert pdone == [("ok", d.ErrorCode.SUCCESS)]
        assert ch.ask("recvd 1") == f"recvd SUCCESS:{prod.get_id()}:-:{payload.hex()}"
        with pytest.raises(e.DocaAgain):  # its one receive is used up
            t.submit()
        # The child's producer -> our consumer, which has no receive posted yet.
        cons = ComchConsumer(conn, mm)
        srv.pe.connect_ctx(cons)
        rdone: list[Any] = []
        cons.task_post_recv_set_conf(lambda t, u, c: rdone.append(t), lambda t, u, c: rdone.append(t), 2)
        cons.start()
        pump([srv.pe], lambda: cons.get_state() == CtxState.RUNNING)
        assert ch.ask("producer").startswith("producer ")
        assert ch.ask("newcons") == f"newcons {cons.get_id()}"
        assert ch.ask(f"ptry {b'x'.hex()} - {cons.get_id()}") == "refused AGAIN"
        dst = inv.buf_get_by_addr(mm, base + 8192, 4096)
        cons.task_post_recv_alloc_init(dst).submit()
        back = os.urandom(2000)
        assert ch.ask(f"psend {back.hex()} - {cons.get_id()}") == "psent SUCCESS"  # retried until posted
        pump([srv.pe], lambda: bool(rdone))
        assert rdone[0].get_status() == d.ErrorCode.SUCCESS and bytes(dst.data_view()) == back
        _close(prod, cons, src, dst)
        mm.close()


def test_the_comch_device_needs_pci_access_and_its_device_on_the_maps(link: Any) -> None:
    p, inv, smm, smem, cmm, cmem = link
    # DOCA's comch samples register producer and consumer maps with PCI_READ_WRITE only: enough.
    pci_only = d.Mmap()
    pci_only.allocate(4096)
    pci_only.set_permissions(d.AccessFlag.PCI_READ_WRITE)
    pci_only.add_dev(p.dpu)
    pci_only.start()
    cons, rdone = _consumer(p, pci_only)
    p.pump(lambda: cons.get_state() == CtxState.RUNNING)
    dst = inv.buf_get_by_addr(pci_only, pci_only.get_memrange()[0], 64)
    cons.task_post_recv_alloc_init(dst).submit()
    p.pump(lambda: cons.get_id() in p.client.ids("new_consumer"))
    prod, sdone = _producer(p)
    cmem[:3] = b"pci"
    src = inv.buf_get_by_data(cmm, cmm.get_memrange()[0], 3)
    submit_when_posted(prod.task_send_alloc_init(src, None, cons.get_id()), p.pes)
    p.pump(lambda: bool(sdone) and bool(rdone))
    assert sdone[0][0] == "ok" and bytes(dst.data_view()) == b"pci"
    # A source map without the client's device: the device cannot read it (a real error).
    other = d.Mmap()
    other.allocate(4096)
    other.set_permissions(d.AccessFlag.LOCAL_READ_WRITE | d.AccessFlag.PCI_READ_WRITE)
    other.add_dev(p.dpu)
    other.start()
    dst.reset_data_len()
    rdone[0][1].submit()
    bad = inv.buf_get_by_data(other, other.get_memrange()[0], 8)
    submit_when_posted(prod.task_send_alloc_init(bad, None, cons.get_id()), p.pes)
    p.pump(lambda: len(sdone) == 2)
    assert sdone[1][0] == "err" and sdone[1][2] == d.ErrorCode.NOT_PERMITTED
    assert prod.get_state() == CtxState.STOPPING
    _close(prod, cons, dst, src, bad, other, pci_only)
