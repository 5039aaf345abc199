"""A fake storage service for the initiator tests: ``python -m tests.initiator.fake_bridge NAME PLAIN [options]``.

It plays the comch side of the gga / zero-copy bridge (storage-apps-spec §3.7 "Service")
without any target: a comch server (:func:`apps.storage.channels.comch_transport.listen_comch_server`)
answering the control phase positionally, and per initiator core one consumer (``2·T``
receive buffers) and one producer. Storage is the PLAIN file in local memory; each io
message is served with one ``Dma`` memcpy between that memory and the initiator's
PCI-exported region, then answered with the same 64 bytes turned into a response.

Lines on stdout (flushed): ``listening`` once the server runs, ``got <request>`` for each
control request, ``stalled`` / ``crashing`` for the fault options, ``bye`` at the end.

Options: ``--block-size B`` (default 4096); ``--crash-after-ios N`` (SIGKILL itself after
N responses); ``--stop-after-ios N`` (SIGSTOP itself after N responses: a hung service);
``--stall-after-ios N`` (stop answering io messages after N responses);
``--fail-io N`` (answer the N-th io with ``IO_FAILED``); ``--hang-on REQUEST`` (never answer
that control request); ``--corrupt-offset K`` (flip storage byte K).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

import doca_py as d
from doca_py.comch import ComchConsumer, ComchConsumerTaskPostRecv, ComchProducer, ComchProducerTaskSend
from doca_py.errors import DocaError, ErrorCode
from doca_py.types import CtxState

from apps.storage.channels.comch_transport import ComchTransport, listen_comch_server
from apps.storage.wire.control import (
    ControlMessage, InitStorage, MessageType, PhaseChecker, StorageDetails, make_response,
)
from apps.common.errors import PeerClosedError
from apps.common.runtime.doca_features import doca_features
from apps.storage.wire.io_message import IO_MESSAGE_SIZE, IoMessage, IoMessageType, make_response_in_place

HOST_PCI = "3b:00.0"
DPU_PCI = "03:00.0"
DEADLINE = 20.0


def _empty_at(buf: d.Buf, addr: int, length: int) -> None:
    buf.set_data(addr, 0)


def say(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


class Slot:
    """One receive buffer of one core, with its DMA tasks and its response send."""

    __slots__ = ("core", "index", "offset", "recv", "send", "dma_read", "dma_write", "hbuf", "lbuf", "msg")

    def __init__(self, core: int, index: int, offset: int) -> None:
        self.core, self.index, self.offset = core, index, offset
        self.recv: ComchConsumerTaskPostRecv | None = None
        self.send: ComchProducerTaskSend | None = None
        self.dma_read: Any = None
        self.dma_write: Any = None
        self.hbuf: d.Buf | None = None
        self.lbuf: d.Buf | None = None
        self.msg: IoMessage | None = None


class Bridge:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.plain = Path(args.plain).read_bytes()
        self.capacity = len(self.plain)
        self.responded = 0
        self.received = 0
        self.stalled = False
        self.held: list[Slot] = []
        self.retry: list[ComchProducerTaskSend] = []
        self.slots: list[Slot] = []
        self.consumers: list[ComchConsumer] = []
        self.producers: list[ComchProducer] = []
        self.io_region_len = 0
        # How the DMA buffers are aimed per IO: re-aimed onto the IO's bytes (DOCA 3.2+), or, before 3.2 (no
        # re-aim), windows over the whole regions whose data regions move (a memcpy writes exactly its source).
        self.aim_src: Callable[[d.Buf, int, int], None] = d.Buf.reuse_by_data
        self.aim_dst: Callable[[d.Buf, int, int], None] = d.Buf.reuse_by_addr

    # -- data path callbacks ------------------------------------------------------------------------
    def on_recv(self, task: ComchConsumerTaskPostRecv, slot: Slot, _: Any) -> None:
        msg = IoMessage.unpack(self.msg_mem, slot.offset)
        slot.msg = msg
        self.received += 1
        if self.stalled:
            self.held.append(slot)
            return
        if self.args.fail_io and self.received == self.args.fail_io:
            self.respond(slot, ErrorCode.IO_FAILED)
            return
        e = msg.io_size
        bad = msg.kind not in (IoMessageType.READ, IoMessageType.WRITE) or e == 0 or \
            msg.storage_offset + e > self.capacity or msg.requester_offset + e > self.io_region_len
        if bad:
            self.respond(slot, ErrorCode.INVALID_VALUE)
            return
        assert slot.hbuf is not None and slot.lbuf is not None
        host = self.host_base + msg.requester_offset
        local = self.local_base + msg.storage_offset
        if msg.kind is IoMessageType.READ:
            self.aim_src(slot.lbuf, local, e)
            self.aim_dst(slot.hbuf, host, e)
            slot.dma_read.submit()
        else:
            self.aim_src(slot.hbuf, host, e)
            self.aim_dst(slot.lbuf, local, e)
            slot.dma_write.submit()

    def on_recv_error(self, task: ComchConsumerTaskPostRecv, slot: Slot, _: Any) -> None:
        pass  # the initiator went away (or we stop): nothing to answer

    def on_dma(self, task: Any, slot: Slot, _: Any) -> None:
        self.respond(slot, ErrorCode.SUCCESS)

    def on_dma_error(self, task: Any, slot: Slot, _: Any) -> None:
        self.respond(slot, ErrorCode.IO_FAILED)

    def respond(self, slot: Slot, result: ErrorCode) -> None:
        make_response_in_place(self.msg_mem, result, slot.offset)
        assert slot.send is not None
        self.submit_send(slot.send)

    def submit_send(self, task: ComchProducerTaskSend) -> None:
        """Submit a response; DOCA 3.x refuses it with AGAIN while the initiator has no
        receive posted: keep it and submit it again later."""
        try:
            task.submit()
        except DocaError as exc:
            if exc.code != ErrorCode.AGAIN:
                raise
            self.retry.append(task)

    def on_sent(self, task: ComchProducerTaskSend, slot: Slot, _: Any) -> None:
        self.responded += 1
        if self.args.crash_after_ios and self.responded >= self.args.crash_after_ios:
            say("crashing")
            os.kill(os.getpid(), signal.SIGKILL)
        if self.args.stop_after_ios and self.responded >= self.args.stop_after_ios:
            say("stopping")
            os.kill(os.getpid(), signal.SIGSTOP)
        if self.args.stall_after_ios and self.responded >= self.args.stall_after_ios and not self.stalled:
            self.stalled = True
            say("stalled")
        assert slot.recv is not None
        slot.recv.get_buf().reset_data_len()
        slot.recv.submit()

    def on_send_error(self, task: ComchProducerTaskSend, slot: Slot, _: Any) -> None:
        pass  # fatal (the initiator went away, or we stop): that response is lost

    # -- control phase --------------------------------------------------------------------------------
    def run(self) -> int:
        announced = []

        def started() -> bool:
            if not announced:
                announced.append(True)
                say("listening")
            return False

        with d.Dev.open_by_pci_addr(DPU_PCI) as dev, d.Pe() as pe:
            self.dev, self.pe = dev, pe
            rep = dev.open_rep_by_pci_addr(HOST_PCI)
            channel, server, conn = listen_comch_server(dev, rep, self.args.name, pe, timeout=DEADLINE,
                                                        should_abort=started)
            self.conn = conn
            self.transport = channel.transport
            assert isinstance(self.transport, ComchTransport)
            phases = PhaseChecker.service()
            try:
                while not phases.done:
                    if self.retry:
                        retry, self.retry = self.retry, []
                        for t in retry:
                            self.submit_send(t)
                    msg = channel.poll(0.01 if self.retry else 0.2)
                    if msg is None:
                        continue
                    say(f"got {msg.type.wire_name}")
                    problem = phases.check(msg)
                    if problem is not None:
                        channel.send(problem)
                        continue
                    if self.args.hang_on == msg.type.wire_name:
                        say(f"hanging {msg.type.wire_name}")
                        while True:
                            channel.poll(1.0)
                    channel.send(self.handle(msg))
                channel.transport.pump(0.2)  # let the last response leave
                assert isinstance(self.transport, ComchTransport)
                self.transport.flush(2.0)
            except PeerClosedError:
                say("peer closed")
                return 3
            finally:
                self.teardown()
                channel.close()
                server.close()
        say("bye")
        return 0

    def handle(self, msg: ControlMessage) -> ControlMessage:
        t = msg.type
        if t is MessageType.QUERY_STORAGE_REQUEST:
            return make_response(msg, StorageDetails(self.capacity, self.args.block_size))
        if t is MessageType.INIT_STORAGE_REQUEST:
            assert isinstance(msg.payload, InitStorage)
            self.init(msg.payload)
            return make_response(msg)
        if t is MessageType.START_STORAGE_REQUEST:
            self.start()
            return make_response(msg)
        if t is MessageType.STOP_STORAGE_REQUEST:
            self.stalled = True
            return make_response(msg)
        if t is MessageType.SHUTDOWN_REQUEST:
            self.teardown()
            return make_response(msg)
        raise AssertionError(t)

    def wait(self, cond: Any, what: str) -> None:
        end = time.monotonic() + DEADLINE
        assert isinstance(self.transport, ComchTransport)
        while not cond():
            if time.monotonic() > end:
                raise SystemExit(f"fake bridge: timed out waiting for {what}")
            self.transport._wait(0.1)

    def init(self, p: InitStorage) -> None:
        dev, pe = self.dev, self.pe
        self.cores, n = p.core_count, 2 * p.transaction_count
        self.host = d.Mmap.create_from_export(p.mmap_export_blob, dev)
        self.host_base, self.io_region_len = self.host.get_memrange()
        self.local = d.Mmap()
        self.local_mem = self.local.allocate(self.capacity)
        self.local_mem[:] = self.plain
        if self.args.corrupt_offset >= 0:
            self.local_mem[self.args.corrupt_offset] ^= 0xFF
        self.local.set_permissions(d.AccessFlag.LOCAL_READ_WRITE)
        self.local.add_dev(dev)
        self.local.start()
        self.local_base = self.local.get_memrange()[0]
        self.msgs = d.Mmap()
        self.msg_mem = self.msgs.allocate(self.cores * n * IO_MESSAGE_SIZE)
        self.msgs.set_permissions(d.AccessFlag.LOCAL_READ_WRITE | d.AccessFlag.PCI_READ_WRITE)
        self.msgs.add_dev(dev)
        self.msgs.start()
        self.msg_base = self.msgs.get_memrange()[0]
        self.inv = d.BufInventory(self.cores * n * 4)
        self.dma = d.Dma(dev)
        pe.connect_ctx(self.dma)
        self.dma.task_memcpy_set_conf(self.on_dma, self.on_dma_error, 2 * self.cores * n)
        self.dma.start()
        for core in range(self.cores):
            cons = ComchConsumer(self.conn, self.msgs)
            pe.connect_ctx(cons)
            cons.task_post_recv_set_conf(self.on_recv, self.on_recv_error, n)
            prod = ComchProducer(self.conn)
            pe.connect_ctx(prod)
            prod.task_send_set_conf(self.on_sent, self.on_send_error, n)
            cons.start()
            prod.start()
            self.wait(lambda: cons.get_state() == CtxState.RUNNING, "the consumer")
            self.consumers.append(cons)
            self.producers.append(prod)
            for j in range(n):
                self.slots.append(Slot(core, j, (core * n + j) * IO_MESSAGE_SIZE))

    def start(self) -> None:
        assert isinstance(self.transport, ComchTransport)
        tr = self.transport
        self.wait(lambda: len(tr.remote_consumer_ids) >= self.cores, "the initiator's consumers")
        host_len = local_len = 1  # re-aimed per IO
        if not doca_features().buf_reuse:
            host_len, local_len = self.io_region_len, self.capacity
            self.aim_src, self.aim_dst = d.Buf.set_data, _empty_at
        for s in self.slots:
            cons, prod = self.consumers[s.core], self.producers[s.core]
            addr = self.msg_base + s.offset
            s.recv = cons.task_post_recv_alloc_init(self.inv.buf_get_by_addr(self.msgs, addr, IO_MESSAGE_SIZE),
                                                    user_data=s)
            s.send = prod.task_send_alloc_init(self.inv.buf_get_by_data(self.msgs, addr, IO_MESSAGE_SIZE), None,
                                               tr.remote_consumer_ids[s.core], user_data=s)
            s.hbuf = self.inv.buf_get_by_addr(self.host, self.host_base, host_len)
            s.lbuf = self.inv.buf_get_by_addr(self.local, self.local_base, local_len)
            s.dma_read = self.dma.task_memcpy_alloc_init(s.lbuf, s.hbuf, user_data=s)
            s.dma_write = self.dma.task_memcpy_alloc_init(s.hbuf, s.lbuf, user_data=s)
            s.recv.submit()

    def teardown(self) -> None:
        for ctx in [*self.consumers, *self.producers]:
            ctx.close()
        self.consumers.clear()
        self.producers.clear()
        for name in ("dma", "inv", "msgs", "local", "host"):
            obj = getattr(self, name, None)
            if obj is not None:
                obj.close()
                setattr(self, name, None)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("name")
    ap.add_argument("plain")
    ap.add_argument("--block-size", type=int, default=4096)
    ap.add_argument("--crash-after-ios", type=int, default=0)
    ap.add_argument("--stall-after-ios", type=int, default=0)
    ap.add_argument("--stop-after-ios", type=int, default=0)
    ap.add_argument("--fail-io", type=int, default=0)
    ap.add_argument("--hang-on", default="")
    ap.add_argument("--corrupt-offset", type=int, default=-1)
    return Bridge(ap.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())
