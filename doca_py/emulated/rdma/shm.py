"""Same-host send/receive over shared-memory rings, polled by the progress engines.

When both ends of a connection run on one host and reach each other over the ctx's Unix
listener, each stream's acceptor creates a ring (:mod:`..transport.shmring`) for the requests
that will arrive on it and hands it over with its Pe's ``eventfd`` in the handshake reply
(``SCM_RIGHTS``, after the key check). From then on every receive-consuming request of that
direction (send, send-with-immediate, the notice of a write-with-immediate) is a ring record
instead of a TCP frame: the sender writes it inside ``progress()`` (:meth:`ShmTx.send`), the
receiver's ``progress()`` matches it with a posted receive and writes its status back
(:meth:`.ring_poll.RdmaPoller.poll`), and the sender's next ``progress()`` completes the task. Sends
larger than one record travel as fragments. The TCP/Unix streams still carry connection setup,
one-sided work, liveness probes and teardown: the peer's death still breaks the connection
(``CONNECTION_RESET``), a silent peer still ends the retry window (``IO_FAILED``), and a
receiver with no receive posted still answers ``TIME_OUT`` after the sender's RNR window.
"""

from __future__ import annotations

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
from ..transport.shmring import (
    K_PAD, MAX_RECORD, REC_HDR, Consumer, Producer, Ring, RingError, attach_with_bell, fence, ring_doorbell,
    send_fds,
)
from ..transport.stream import Listener, Stream
from .config import F_IMM, IO_FAILED, SUCCESS, TIME_OUT
from .segments import Fail
from .wire import unix_path
from .work import ReceiveWork, Work

if TYPE_CHECKING:
    from ..pe import EmuPe

__all__ = ["ShmTx", "ShmRx", "RING_SIZE", "RingOwner", "RingPeer", "RingServer", "PostedReceives", "close_rings",
           "monotonic", "unpack_hdr", "K_SEND", "K_WIMM", "F_FIRST", "F_LAST", "F_ONE", "REC_HDR_SIZE"]


class PostedReceives(Protocol):
    """The ctx's posted receives, oldest first."""

    def __len__(self) -> int: ...
    def popleft(self) -> ReceiveWork: ...


class RingServer(Protocol):
    """What consumes a ctx's rings (:class:`.ring_poll.RdmaPoller`)."""

    def receive(self, conn: RingPeer, rx: ShmRx, inline: bool) -> bool: ...


class RingOwner(Protocol):
    """The ctx as its rings see it (:class:`.ctx.EmuRdma` is one)."""

    @property
    def pe(self) -> EmuPe | None: ...
    @property
    def poller(self) -> RingServer: ...
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
unpack_hdr = REC_HDR.unpack_from
_pack_rec = REC_HDR.pack_into


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
        """Queue a send (inside ``progress()``); its completion comes from :meth:`.ring_poll.RdmaPoller.poll`."""
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

    def send_one(self, conn: RingPeer, task: Work, seg: memoryview, n: int, flags: int, imm: int) -> None:
        """:meth:`send` of a message in one segment of *n* <= :data:`MAX_RECORD` bytes, the common case, with
        :meth:`.Producer.put_one` inlined (keep the two in step): one frame per message."""
        with self.lock:
            if self.dead:
                raise Fail(conn.err, conn.err_reason)
            if not self.backlog:
                prod = self.prod
                ring = prod.ring
                pos = prod.pos
                size = ring.size
                off = pos & ring.mask
                rec = (n + 31) & ~15  # header and payload, 16-aligned
                end_room = size - off
                free = size - (pos - prod.reaped)
                if rec > end_room:  # no wrap inside a record: pad to the end, if the record fits after it
                    fits = rec + end_room <= free
                    if fits:
                        _pack_rec(ring.data, off, 0, K_PAD, 0, 0, 0, 0)
                        pos += end_room
                        off = 0
                else:
                    fits = rec <= free
                if fits:
                    # The header (REC_HDR: length, kind, flags, status, a, b) through the ring's word views,
                    # as the receiver reads it: no struct call per message.
                    data, st32, w = ring.data, ring.st32, off >> 2
                    st32[w] = n
                    data[off + 4] = K_SEND
                    data[off + 5] = flags | F_ONE
                    ring.st16[(off >> 1) + 3] = 0xFFFF
                    st32[w + 2] = imm
                    st32[w + 3] = n
                    if n:
                        data[off + REC_HDR_SIZE:off + REC_HDR_SIZE + n] = seg
                    prod.pos = end = pos + rec
                    prod.records.append((pos, end, task))
                    self.busy = busy = self.busy + 1
                    self.dirty = dirty = self.dirty + 1 + (n >> 10)
                    if dirty >= PUBLISH_EVERY:  # mid-batch: the receiver starts on these while we write on
                        self._publish_locked()
                    if busy > 1:
                        return
                    waits = True
                else:
                    waits = False
            else:
                waits = False
        if waits:
            conn.start_waiting(ring=True)
            return
        self._queue(conn, (task, [seg], n, flags | F_FIRST, imm))

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
                out = done  # type: ignore[assignment]  # every tag is a task (typing.cast is a call)
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
