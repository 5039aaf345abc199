"""Same-host send/receive over shared-memory rings, polled by the progress engines.

When both ends of a connection run on one host and reach each other over the ctx's Unix
listener, each stream's acceptor creates a ring (:mod:`..transport.shmring`) for the requests
that will arrive on it and hands it over with its Pe's ``eventfd`` in the handshake reply
(``SCM_RIGHTS``, after the key check). From then on every receive-consuming request of that
direction (send, send-with-immediate, the notice of a write-with-immediate) is a ring record
instead of a TCP frame: the sender writes it inside ``progress()`` (:meth:`ShmTx.send`), the
receiver's ``progress()`` matches it with a posted receive and writes its status back
(:meth:`RdmaPoller.poll`), and the sender's next ``progress()`` completes the task. Sends
larger than one record travel as fragments. The TCP/Unix streams still carry connection setup,
one-sided work, liveness probes and teardown: the peer's death still breaks the connection
(``CONNECTION_RESET``), a silent peer still ends the retry window (``IO_FAILED``), and a
receiver with no receive posted still answers ``TIME_OUT`` after the sender's RNR window.
"""

from __future__ import annotations

import functools
import os
import socket
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from ...errors import DocaConnectionAborted, DocaError
from ...log import logger
from ..ctx import _complete
from ..transport.reactor import reactor
from ..transport.shmring import (
    K_PAD, MAX_RECORD, REC_HDR, Consumer, Producer, Ring, RingError, attach_with_bell, fence, ring_doorbell,
    send_fds,
)
from ..transport.stream import Listener, Stream
from .config import (
    C_ESTABLISHED, F_IMM, OP_RECV_SEND, OP_RECV_SEND_WITH_IMM, OP_RECV_WRITE_WITH_IMM, IO_FAILED, SUCCESS,
    TIME_OUT,
)
from .segments import Fail, grow_data, land, recv_segments, scatter, tail
from .wire import unix_path
from .work import ReceiveWork, Work

if TYPE_CHECKING:
    from ..pe import EmuPe

__all__ = ["ShmTx", "ShmRx", "RdmaPoller", "RING_SIZE", "RingOwner", "RingPeer", "PostedReceives"]


class PostedReceives(Protocol):
    """The ctx's posted receives, oldest first."""

    def __len__(self) -> int: ...
    def popleft(self) -> ReceiveWork: ...


class RingOwner(Protocol):
    """The ctx as its rings see it (:class:`.ctx.EmuRdma` is one)."""

    @property
    def pe(self) -> EmuPe | None: ...
    @property
    def poller(self) -> RdmaPoller: ...
    @property
    def posted(self) -> PostedReceives: ...
    @property
    def serial(self) -> int: ...
    def accept_socket(self, sock: socket.socket) -> None: ...
    def break_connection(self, conn: Any, code: int, local: bool = False, reason: str = "") -> None: ...


class RingPeer(Protocol):
    """A connection as its rings see it (:class:`.connection.EmuRdmaConnection` is one)."""

    tx: ShmTx | None
    rx: ShmRx | None
    peer_bell: int

    @property
    def ctx(self) -> RingOwner: ...
    @property
    def state(self) -> int: ...
    @property
    def err(self) -> int: ...
    @property
    def err_reason(self) -> str: ...
    @property
    def peer_rnr(self) -> float: ...
    @property
    def same_host(self) -> bool: ...
    def start_waiting(self, ring: bool = False) -> None: ...


#: Data bytes of each direction's ring.
RING_SIZE = 256 << 10
#: Seconds a ring send waits before the receiver's I/O thread is asked to serve it (its Pe may not
#: be progressing); doubled while nothing is finished, up to a quarter of the retry window.
NUDGE = 0.005
#: One-record sends written in a row are published (made visible to the receiver) at least every this
#: many records plus KiB, not only once per batch: on two free cores the receiver works on them
#: meanwhile (64-byte sends, 64 in flight: about 1.8x the messages/s of publishing once per batch,
#: with less CPU per message); on a busy core it costs a little more CPU per message.
PUBLISH_EVERY = 32
K_SEND, K_WIMM = 1, 2
#: Flags of a send's records (with :data:`F_IMM`): the first and the last fragment of a message.
F_FIRST, F_LAST = 0x10, 0x20
F_ONE = F_FIRST | F_LAST  # a whole message in one record
_KINDS = frozenset({K_SEND, K_WIMM})
_STATUSES = frozenset({SUCCESS, TIME_OUT, IO_FAILED})
monotonic = time.monotonic
REC_HDR_SIZE = REC_HDR.size
_unpack_hdr = REC_HDR.unpack_from


class ShmTx:
    """The sending side of a connection's ring (Pe thread; :meth:`claim` from any thread)."""

    def __init__(self, ring: Ring, bell: int, pe: EmuPe | None) -> None:
        self.ring = ring
        self.pe = pe
        self.prod = Producer(ring)
        self.bell = bell  # the peer Pe's eventfd
        self.lock = threading.Lock()
        #: Sends not (fully) in the ring yet, in order: (task, segments, bytes left, flags, imm).
        self.backlog: deque[tuple[Work, list[memoryview], int, int, int]] = deque()
        self.busy = 0  # tasks written or waiting, not completed
        self.frags = 0  # records written without a task (a message's fragments before its last), not reaped
        self.dirty = 0  # written and not published (one-record sends: records plus KiB)
        self.dead = False
        self.heard = 0.0  # when the peer last finished records (retry window)
        self.seen = 0.0  # :attr:`heard` at the retry timer's last look (I/O thread)
        self.nudge = NUDGE  # the timer's next delay while the peer finishes nothing (I/O thread)

    def send(self, conn: RingPeer, task: Work, segs: Sequence[memoryview], n: int, flags: int,
             imm: int) -> None:
        """Queue a send (inside ``progress()``); its completion comes from :meth:`RdmaPoller.poll`."""
        if n <= MAX_RECORD and len(segs) <= 1:
            # The common case: one record from at most one segment, written now if nothing waits
            # before it and it fits (no backlog entry, no parts list).
            with self.lock:
                if self.dead:
                    raise Fail(conn.err, conn.err_reason)
                if not self.backlog and self.prod.put_one(K_SEND, flags | F_ONE, imm, n, segs[0] if segs else b"",
                                                          n, task):
                    self.busy = busy = self.busy + 1
                    self.dirty = dirty = self.dirty + 1 + (n >> 10)
                    if dirty >= PUBLISH_EVERY:  # mid-batch: the receiver starts on these while we write on
                        self._publish_locked()
                    if busy > 1:
                        return
                else:
                    busy = 0
            if busy:
                conn.start_waiting(ring=True)
                return
        self._queue(conn, (task, list(segs), n, flags | F_FIRST, imm))

    def send_wimm(self, conn: RingPeer, task: Work, n: int, imm: int) -> None:
        """The notice of a write-with-immediate whose bytes are in place: consumes a receive."""
        self._queue(conn, (task, [], -1 - n, F_IMM, imm))

    def _queue(self, conn: RingPeer, item: tuple[Work, list[memoryview], int, int, int]) -> None:
        with self.lock:
            if self.dead:
                raise Fail(conn.err, conn.err_reason)
            self.busy += 1
            first = self.busy == 1
            self.backlog.append(item)
            self._write_locked()
        if first:
            conn.start_waiting(ring=True)

    def _write_locked(self) -> None:
        prod = self.prod
        bl = self.backlog
        wrote = False
        while bl:
            task, segs, left, flags, imm = bl[0]
            if left < 0:  # write-with-immediate notice: length in the record, no payload
                if not prod.room(0):
                    break
                prod.put(K_WIMM, F_LAST, -1 - left, imm, (), 0, task)
                bl.popleft()
                wrote = True
                continue
            k = min(left, MAX_RECORD)
            if not prod.room(k):
                break
            parts: list[memoryview] = []
            got = 0
            while got < k:
                s = segs[0]
                take = min(len(s), k - got)
                parts.append(s[:take])
                got += take
                if take == len(s):
                    segs.pop(0)
                else:
                    segs[0] = s[take:]
            left -= k
            last = left == 0
            prod.put(K_SEND, flags | (F_LAST if last else 0), imm, left + k if flags & F_FIRST else 0, parts, k,
                     task if last else None)
            wrote = True
            if not last:
                self.frags += 1
            if last:
                bl.popleft()
            else:
                bl[0] = (task, segs, left, flags & ~F_FIRST, imm)
        if wrote:
            self.dirty += 1  # published once per batch: by the next poll, before a sleep, or by the timer

    def publish(self) -> None:
        """Make the records written since the last call visible, ringing the peer if it sleeps (any thread)."""
        with self.lock:
            if self.dirty and not self.dead:
                self._publish_locked()

    def _publish_locked(self) -> None:
        self.dirty = 0
        pe = self.pe
        if pe is not None and pe.armed:  # sent from a callback after the Pe armed: ask for the doorbell
            self.ring.psleep.value = 1  # (before the head: the consumer reads them in that order)
        self.prod.publish()
        fence()  # the head before the look at the flag (the consumer does the reverse)
        if self.ring.csleep.value:
            ring_doorbell(self.bell)

    def reap(self) -> list[tuple[Work, int]]:
        """Publish what was written, then the sends the peer finished: (task, status), in order (Pe
        thread, one lock round trip). :class:`RingError` if malformed."""
        with self.lock:
            if self.dead:
                return []
            if self.dirty:
                self._publish_locked()
            done = self.prod.reap(_STATUSES)
            if not done:
                return []
            self.heard = monotonic()
            if self.frags:  # the fragments before a message's last record have no task
                out = [(cast("Work", t), st) for t, st in done if t is not None]
                self.frags -= len(done) - len(out)
            else:
                out = cast("list[tuple[Work, int]]", done)
            self.busy -= len(out)
            if self.backlog:
                self._write_locked()
                if self.dirty:
                    self._publish_locked()
        return out

    def claim(self) -> tuple[list[tuple[Work, int]], list[Work]]:
        """The connection broke (any thread): no more sends. Returns the sends the peer finished
        before it went (their statuses are in the ring: a receiver that stops right after its
        receive completed has delivered the send) and the others, to be failed."""
        with self.lock:
            if self.dead:
                return [], []
            self.dead = True
            try:
                done = [(cast("Work", t), st) for t, st in self.prod.reap(_STATUSES) if t is not None]
            except RingError:
                done = []
            rest = [cast("Work", t) for _s, _e, t in self.prod.records if t is not None]
            rest += [item[0] for item in self.backlog]
            self.prod.records.clear()
            self.backlog.clear()
            self.busy = self.frags = 0
        return done, rest


class ShmRx:
    """The receiving side of a connection's ring (Pe thread only)."""

    def __init__(self, ring: Ring) -> None:
        self.ring = ring
        self.cons = Consumer(ring, _KINDS)
        self.stall_since = 0.0  # when the record at the front first found no receive posted
        self.stall_timer = False
        self.cur: ReceiveWork | None = None  # the receive a fragmented send is filling
        self.segs: list[memoryview] = []
        self.skip = 0  # status of the message being skipped (its receive failed, or RNR expired)
        #: Held while consuming: by the Pe's poll (which skips a busy ring), or by the I/O thread when the
        #: sender nudged us because our Pe is not progressing (receives land without it, as on hardware).
        self.lock = threading.Lock()


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
                            if self._receive(conn, rx, True):
                                did = True
                        finally:
                            rx.lock.release()
                tx = conn.tx
                if tx is not None and tx.busy:
                    if tx.ring.psleep.value:
                        tx.ring.psleep.value = 0
                    done = tx.reap()
                    for t, st in done:
                        t.status = st
                        if not st:
                            t.succeed()
                        else:
                            t.reason = ("the receiver had no receive posted within the RNR window" if st == TIME_OUT
                                        else "the receiver could not take the message")
                        _complete(t)
                    did = did or bool(done)
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

    def _receive(self, conn: RingPeer, rx: ShmRx, inline: bool) -> bool:
        """Match the published records with posted receives, in order (rx.lock held); False if none
        could be. *inline*: inside ``progress()`` (complete at once), else on the I/O thread (post)."""
        ctx = self.ctx
        pe = ctx.pe
        if pe is None:
            return False
        finish = _complete if inline else functools.partial(pe.post, _complete)
        cons = rx.cons
        ring = rx.ring
        data, st16, mask, size = ring.data, ring.st16, ring.mask, ring.size
        posted = ctx.posted
        did = False
        landed: list[ReceiveWork] = []
        head = cons.head()  # one index read per batch: later records wait for the next poll
        pos = cons.pos
        plain = rx.cur is None and not rx.skip and not rx.stall_since  # between messages, not stalled
        try:
            while pos != head and conn.state == C_ESTABLISHED:
                off = pos & mask
                length, kind, flags, _st, a, b = _unpack_hdr(data, off)
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
                            if land(task.dst, data, off + REC_HDR_SIZE, length):
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
            for t in landed:
                finish(t)
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
                conn.ctx.poller._receive(conn, rx, False)
            except RingError as exc:
                conn.ctx.break_connection(conn, IO_FAILED, reason=f"the peer's shared-memory ring is malformed: {exc}")


def _noop(_: object) -> None:
    """Posted to make a Pe poll its rings (and wake it if it sleeps)."""


def close_rings(conn: RingPeer) -> None:
    """Unmap a dead connection's rings (Pe thread, once nothing polls them); its sends not claimed yet
    complete now (those the peer finished with their status, the others with the connection's error)."""
    rx, tx = conn.rx, conn.tx
    if tx is not None:
        done, rest = tx.claim()
        for t in rest:
            done.append((t, conn.err))
            t.reason = conn.err_reason
        for t, st in done:
            t.status = st
            if not st:
                t.succeed()
            _complete(t)
    conn.rx = conn.tx = None
    if rx is not None:
        with rx.lock:  # not while the I/O thread serves it
            rx.ring.close()
    if tx is not None:
        tx.ring.close()
    bell, conn.peer_bell = conn.peer_bell, -1
    if bell >= 0:
        os.close(bell)


# -- set-up (called by the ctx) ---------------------------------------------------------------------
def listen(ctx: RingOwner) -> Listener | None:
    """The ctx's Unix listener for same-host peers; None (TCP only) if it cannot be made."""
    try:
        return Listener(unix_path(os.getpid(), ctx.serial), 0, ctx.accept_socket)
    except (OSError, DocaError) as exc:
        logger.debug("rdma: no Unix listener, same-host peers use TCP: %s", exc)
        return None


def offer_rx(conn: RingPeer, st: Stream) -> None:
    """Accepting a same-host peer's stream (ctx.lock held): create the ring its requests will use."""
    if st.sock.family == socket.AF_UNIX and conn.same_host and conn.rx is None:
        try:
            conn.rx = ShmRx(Ring.create(RING_SIZE))
        except OSError as exc:
            logger.debug("rdma: no shared-memory ring, the peer's requests use the stream: %s", exc)


def send_reply(conn: RingPeer | None, st: Stream, reply: bytes, ok: bool) -> None:
    """Send the handshake reply, with the ring and this Pe's doorbell if one was made (the key
    check passed: *ok*). ``OSError`` if the stream is gone."""
    rx = conn.rx if conn is not None else None
    pe = conn.ctx.pe if conn is not None else None
    if ok and rx is not None and pe is not None:
        send_fds(st.sock, reply, [rx.ring.fd, pe.efd])
        return
    if conn is not None and rx is not None:
        conn.rx = None
        rx.ring.close()
    st.sock.send(reply)


def attach_tx(conn: RingPeer, fds: list[int]) -> None:
    """The peer's reply carried its ring and doorbell (ctx.lock held). ``DocaConnectionAborted`` if
    they are not a ring and an eventfd."""
    try:
        ring, bell = attach_with_bell(fds)
    except RingError as exc:
        raise DocaConnectionAborted(f"the peer's shared-memory ring is unusable: {exc}") from None
    conn.tx = ShmTx(ring, bell, conn.ctx.pe)
    conn.peer_bell = bell
