"""The receiving side of the same-host rings: a ctx's rings polled by its Pe (:class:`RdmaPoller`).

Each poll matches the records the peers published with the ctx's posted receives, in order, writes
each record's status and publishes them before the receive completions run; it also reaps the
statuses of this side's own sends (:class:`.shm.ShmTx`). :func:`io_serve` does the same from the
I/O thread when a sender nudges us (our Pe is not progressing) or an RNR window ends. The rings and
their set-up are in :mod:`.shm`.
"""

from __future__ import annotations

import threading

from ..completion import complete_batch
from ..pe import QUIET
from ..transport.reactor import reactor
from ..transport.shmring import K_PAD, MAX_RECORD, RingError, fence, ring_doorbell
from .config import (
    C_ESTABLISHED, F_IMM, OP_RECV_SEND, OP_RECV_SEND_WITH_IMM, OP_RECV_WRITE_WITH_IMM, IO_FAILED, SUCCESS,
    TIME_OUT,
)
from .segments import grow_data, recv_segments, scatter, tail
from .shm import (
    F_FIRST, F_LAST, F_ONE, K_SEND, K_WIMM, REC_HDR_SIZE, RingOwner, RingPeer, ShmRx, close_rings, monotonic,
)
from .work import ReceiveWork

__all__ = ["RdmaPoller", "io_serve"]



class RdmaPoller:
    """A ctx's rings, polled by its Pe (:attr:`EmuPe.pollers`)."""

    def __init__(self, ctx: RingOwner) -> None:
        self.ctx = ctx
        self.conns: tuple[RingPeer, ...] = ()  # with a ring (replaced, never mutated: any thread)
        self.lock = threading.Lock()

    def add(self, conn: RingPeer) -> None:
        """Poll *conn*'s rings from now on (any thread); the first one registers the poller with the Pe."""
        pe = self.ctx.pe
        with self.lock:
            if conn not in self.conns:
                self.conns = self.conns + (conn,)
            if pe is not None and self not in pe.pollers:
                pe.pollers = pe.pollers + [self]  # replaced, not mutated: progress() may be iterating it
        if pe is not None:
            pe.post(_noop, None)  # poll once: records may have been published before we listened

    def _drop(self, conn: RingPeer) -> None:
        """*conn* is down (Pe thread, not polling it): unmap its rings; leave the Pe with the last one."""
        with self.lock:
            self.conns = tuple(c for c in self.conns if c is not conn)
            last = not self.conns
        close_rings(conn)
        if last:
            self._leave()

    def close(self) -> None:
        """The ctx is destroyed (Pe thread): unmap every ring, leave the Pe."""
        with self.lock:
            conns, self.conns = self.conns, ()
        for c in conns:
            close_rings(c)
        self._leave()

    def _leave(self) -> None:
        pe = self.ctx.pe
        with self.lock:
            if pe is not None and not self.conns and self in pe.pollers:
                pe.pollers = [p for p in pe.pollers if p is not self]

    def poll(self) -> bool:
        did = False
        for conn in self.conns:
            if conn.state != C_ESTABLISHED:
                if conn.state > C_ESTABLISHED:
                    self._drop(conn)
                continue
            try:
                rx = conn.rx
                if rx is not None:
                    ring = rx.ring
                    if ring.csleep.value:  # awake: the peer need not ring
                        ring.csleep.value = 0
                    if ring.head.value != rx.cons.pos and rx.lock.acquire(False):
                        try:
                            if self.receive(conn, rx, True):
                                did = True
                        finally:
                            rx.lock.release()
                tx = conn.tx
                if tx is not None and tx.busy:
                    if tx.ring.psleep.value:
                        tx.ring.psleep.value = 0
                    done = tx.reap()
                    if done:
                        for t, st in done:
                            t.status = st
                            if not st:
                                if t.succeeds:
                                    t.succeed()
                            else:
                                t.reason = ("the receiver had no receive posted within the RNR window"
                                            if st == TIME_OUT else "the receiver could not take the message")
                        complete_batch([t for t, _ in done])  # the reaped batch, delivered in one call
                        did = True
            except RingError as exc:
                self.ctx.break_connection(conn, IO_FAILED, reason=f"the peer's shared-memory ring is malformed: {exc}")
                did = True
        pe = self.ctx.pe
        if not did and pe is not None and pe.armed and self.arm():
            pe.armed = False  # armed before this progress (it may sleep next): work came meanwhile
            ring_doorbell(pe.efd)
        return did

    def arm(self) -> bool:
        """The Pe is about to sleep: ask the peers for a doorbell; whether there is work already."""
        ready = False
        for conn in self.conns:
            rx, tx = conn.rx, conn.tx
            if rx is not None:
                rx.ring.csleep.value = 1
            if tx is not None and tx.busy:
                tx.ring.psleep.value = 1
                if tx.dirty:
                    tx.publish()
        fence()  # the flags before the look at the indices (the peer publishes, then looks at the flags)
        for conn in self.conns:
            rx, tx = conn.rx, conn.tx
            if rx is not None and rx.ring.head.value != rx.cons.pos and (not rx.stall_since or self.ctx.posted):
                ready = True
            if tx is not None and tx.busy and tx.ring.tail.value != tx.prod.reaped:
                ready = True
        return ready

    def receive(self, conn: RingPeer, rx: ShmRx, inline: bool) -> bool:
        """Match the published records with posted receives, in order (rx.lock held); False if none
        could be. *inline*: inside ``progress()`` (complete at once), else on the I/O thread (post)."""
        ctx = self.ctx
        pe = ctx.pe
        if pe is None:
            return False
        cons = rx.cons
        ring = rx.ring
        data, st16, st32, mask, size = ring.data, ring.st16, ring.st32, ring.mask, ring.size
        posted = ctx.posted
        did = False
        landed: list[ReceiveWork] = []
        head = cons.head()  # one index read per batch: later records wait for the next poll
        pos = cons.pos
        plain = rx.cur is None and not rx.skip and not rx.stall_since  # between messages, not stalled
        try:
            while pos != head and conn.state == C_ESTABLISHED:
                off = pos & mask
                w = off >> 2  # the header's fields through the word views: no struct call per record
                length, kind, flags, a, b = st32[w], data[off + 4], data[off + 5], st32[w + 2], st32[w + 3]
                rec = (length + 31) & ~15  # header and payload, 16-aligned
                task: ReceiveWork | None = None
                if kind == K_SEND and length <= MAX_RECORD and off + rec <= size and pos + rec <= head:
                    # A well-formed send record (Consumer.read's checks). The common case, as the streams'
                    # serve_stream: a whole send in one record, into a posted receive of one buffer of a started
                    # local map with room: copied straight from the ring, its status written in place.
                    if plain and flags & F_ONE == F_ONE and b == length:
                        try:
                            task = posted.popleft()  # atomic; the receives are posted under ctx.lock
                        except IndexError:
                            task = None  # receiver not ready: the general path starts the RNR window
                        else:
                            # segments.land inlined (keep the two in step): one buffer of a started local
                            # map with the room, written through the map's view.
                            dst = task.dst
                            fits = not length
                            if not fits and dst is not None and dst.next is None and \
                                    (dm := dst.mmap) is not None and dm.writable and (dv := dm.mv) is not None and \
                                    dm.addr <= (at := dst.data + dst.data_len) and \
                                    at + length <= dst.head + dst.len and at + length <= dm.hi:
                                at -= dm.addr
                                p = off + REC_HDR_SIZE
                                dv[at:at + length] = data[p:p + length]
                                dst.data_len += length
                                fits = True
                            if fits:
                                task.result_conn = conn
                                task.result_len = length
                                if flags & F_IMM:
                                    task.opcode, task.imm = OP_RECV_SEND_WITH_IMM, a
                                else:
                                    task.opcode, task.imm = OP_RECV_SEND, 0
                                task.status = SUCCESS
                                st16[(off >> 1) + 3] = SUCCESS  # Consumer.done
                                pos += rec
                                landed.append(task)
                                did = True
                                continue
                            # Chained, too small or not a started local map: the general path fills it.
                    cons.pos, cons.cur = pos, rec  # as Consumer.read leaves them
                else:
                    cons.pos = pos
                    hdr = cons.read(head)  # pads, other kinds; RingError if malformed
                    if hdr is None:
                        pos = cons.pos
                        break
                    if kind == K_PAD:
                        pos = cons.pos  # past the pad (wrap-around): the next record may take the fast path
                        continue
                    kind, flags, length, a, b = hdr
                    off = cons.pos & mask
                payload = data[off + REC_HDR_SIZE:off + REC_HDR_SIZE + length]
                try:
                    waits = not self._record(conn, rx, task, kind, flags, length, a, b, payload, landed)
                finally:
                    payload.release()
                pos = cons.pos
                if waits:
                    break  # receiver not ready
                did = True
                plain = rx.cur is None and not rx.skip and not rx.stall_since
                if plain and landed and landed[-1].status:
                    break  # a receive failed: its completion stops the ctx, the later records stay unanswered
        finally:  # also when the ring turns out malformed: what was delivered before completes
            cons.pos = pos
            # The statuses go out before the receives complete: a callback that stops the ctx closes the
            # connection, and the sender must find its sends delivered, as on hardware.
            if cons.publish():
                fence()
                tx_bell = conn.peer_bell
                if rx.ring.psleep.value and tx_bell >= 0:
                    ring_doorbell(tx_bell)
            if landed:  # the batch's completions in one call (inside progress) or one Pe item (I/O thread)
                if inline:
                    complete_batch(landed)
                else:
                    pe.post(complete_batch, landed)
        return did

    def _record(self, conn: RingPeer, rx: ShmRx, task: ReceiveWork | None, kind: int, flags: int,
                length: int, a: int, b: int, payload: memoryview, landed: list[ReceiveWork]) -> bool:
        """The general path of one record (fragments, write-with-immediate notices, receives that are
        chained or short, RNR); *task*: the receive the fast path already took for it. False if the
        record must wait for a receive (it stays in the ring)."""
        cons = rx.cons
        first = kind == K_WIMM or flags & F_FIRST
        if first:
            if rx.cur is not None:
                raise RingError("a message starts inside another")
            if task is None:
                try:
                    task = self.ctx.posted.popleft()  # atomic; the receives are posted under ctx.lock
                except IndexError:
                    task = None
            if task is None:
                now = monotonic()
                if not rx.stall_since:
                    rx.stall_since = now
                if now - rx.stall_since < conn.peer_rnr:
                    self._stall_timer(conn, rx)
                    return False
                rx.skip = TIME_OUT  # the sender's RNR window ran out for this message
            else:
                rx.stall_since = 0.0
                rx.skip = 0
                total = a if kind == K_WIMM else b
                task.result_conn = conn
                task.result_len = total
                if kind == K_WIMM:
                    task.opcode, task.imm = OP_RECV_WRITE_WITH_IMM, b
                    segs: list[memoryview] = []
                    code = 0
                else:
                    task.opcode = OP_RECV_SEND_WITH_IMM if flags & F_IMM else OP_RECV_SEND
                    task.imm = a if flags & F_IMM else 0
                    code, segs = recv_segments(task, total)
                if code:
                    task.status = code  # completes after the statuses are published (it stops the ctx)
                    rx.skip = IO_FAILED  # the sender learns that the receiver failed
                    landed.append(task)
                else:
                    rx.cur, rx.segs = task, segs
        if not rx.skip and length:
            scatter(rx.segs, payload)
            rx.segs = tail(rx.segs, length)
        if kind == K_WIMM or flags & F_LAST:
            t, rx.cur, rx.segs = rx.cur, None, []
            cons.done(rx.skip)
            rx.skip = 0
            if t is not None:
                if kind == K_SEND:
                    grow_data(t.dst, t.result_len)
                t.status = SUCCESS
                landed.append(t)
        else:
            cons.done(rx.skip)
        return True

    def _stall_timer(self, conn: RingPeer, rx: ShmRx) -> None:
        """Wake the Pe when the RNR window of the stalled record ends (it may sleep meanwhile)."""
        if rx.stall_timer:
            return
        rx.stall_timer = True
        left = max(conn.peer_rnr - (monotonic() - rx.stall_since), 0.001)
        r = reactor()

        def fire() -> None:
            rx.stall_timer = False
            io_serve(conn)  # the window may end while our Pe does not progress
        r.call(lambda: r.call_later(left, fire))


def io_serve(conn: RingPeer) -> None:
    """Consume *conn*'s ring on the I/O thread (the sender nudged us, or an RNR window ended)."""
    rx = conn.rx
    if rx is None or conn.state != C_ESTABLISHED:
        return
    with rx.lock:
        if conn.rx is rx:
            try:
                conn.ctx.poller.receive(conn, rx, False)
            except RingError as exc:
                conn.ctx.break_connection(conn, IO_FAILED, reason=f"the peer's shared-memory ring is malformed: {exc}")


def _noop(_: object) -> None:
    """Posted to make a Pe poll its rings (and wake it if it sleeps)."""


QUIET[_noop] = False  # what the poll delivers is the progress, not the nudge
