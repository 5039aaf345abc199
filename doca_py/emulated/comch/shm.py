"""Same-host comch rings: a connection's frames through shared memory, polled by the progress engines.

Opt-in (``DOCA_PY_COMCH_SHM=1`` or :func:`.config.configure` ``(shm=True)`` on both ends). The
client creates the ring the server will write into and sends it, with its Pe's ``eventfd``, beside
its HELLO (``SCM_RIGHTS`` on the connection's own Unix socket); a server that takes rings answers
its WELCOME the same way. From then on each direction's byte stream, the very frames of
:mod:`.wire` in the same order, travels as chunks in the ring records of
:mod:`..transport.shmring`: the writer appends what :meth:`EmuComchConnection.flush` would have
sent, the reader's ``progress()`` copies the chunks into the connection's receive buffer and runs
the usual parser (:class:`CommPoller`). No system call and no thread hand-off per message: the
peer's Pe ``eventfd`` is rung only when that Pe sleeps (its ``csleep``/``psleep`` flag).

The socket stays: a peer's death is its EOF (the ring is drained first, then the connection dies
as over the socket), and it carries the fallback doorbell: while what we published is not consumed
(the peer's Pe is busy elsewhere or not progressing), a timer on our I/O thread writes a nudge
byte every :data:`NUDGE` seconds without progress, and the peer's I/O thread serves its ring itself,
posting to its Pe as the socket path does. Malformed ring content breaks that connection
(``CONNECTION_RESET``), never the process.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Protocol

from ...log import logger
from ..transport.shmring import (
    MAX_RECORD, REC_HDR, Consumer, Producer, Ring, RingError, attach_with_bell, fence, ring_doorbell, send_fds,
)
from ..pe import QUIET
from .common import post
from .config import RESET, monotonic

if TYPE_CHECKING:
    import socket
    import threading

    from ..pe import EmuPe
    from ..transport.reactor import Reactor

__all__ = ["ShmLink", "CommPoller", "RING_SIZE", "NUDGE", "offer", "accept", "adopt", "serve", "RingError",
           "LinkOwner", "LinkedConnection"]


class LinkOwner(Protocol):
    """The server or client as the rings see it (:class:`.endpoints.Endpoint` is one)."""

    poller: CommPoller | None

    @property
    def pe(self) -> EmuPe | None: ...
    def deliver_conn(self, arg: tuple[Any, bool]) -> None: ...


class LinkedConnection(Protocol):
    """A connection as its rings see it (:class:`.connection.EmuComchConnection` is one)."""

    alive: bool
    heard: float
    rpos: int
    rend: int
    fds_in: list[int]
    ring_offer: Ring | None
    shm: ShmLink | None

    @property
    def ctx(self) -> LinkOwner: ...
    @property
    def peer(self) -> str: ...
    @property
    def lock(self) -> threading.Lock: ...
    @property
    def r(self) -> Reactor: ...
    @property
    def sock(self) -> socket.socket | None: ...
    @property
    def mv(self) -> memoryview | None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def broken(self) -> bool: ...
    @property
    def torn_down(self) -> bool: ...
    @property
    def paused(self) -> bool: ...
    @property
    def want_write(self) -> bool: ...
    def die(self, code: int, reason: str | None) -> None: ...
    def bad_input(self, why: str) -> None: ...
    def parse_input(self) -> None: ...
    def write_ready(self) -> None: ...
    def release_receive_buffer(self) -> None: ...

#: Data bytes of each direction's ring.
RING_SIZE = 512 << 10
#: Seconds published bytes may sit unconsumed before the peer's I/O thread is nudged (its Pe may
#: not be progressing: producer ACKs and credits must not wait for it, as over the socket).
NUDGE = 0.005
K_BYTES = 1  # a chunk of the connection's byte stream
_KINDS = frozenset({K_BYTES})
_OK = frozenset({0})
_NUDGE_BYTE = b"\0"
_REC_HDR = REC_HDR.size


class ShmLink:
    """Both rings of one connection: ``rx`` (ours to read) and ``tx`` (the peer's, we write)."""

    def __init__(self, rx: Ring, tx: Ring, bell: int) -> None:
        self.rx = Consumer(rx, _KINDS)
        self.tx = Producer(tx)
        self.bell = bell  # the peer Pe's eventfd
        self.rlock = threading.Lock()  # consuming rx: the Pe's poll, or the I/O thread when nudged
        self.nudging = False  # the nudge timer runs (conn.lock)
        self.last_tail = -1
        self.closed = False

    def write(self, m: memoryview) -> int:
        """Append as much of *m* as fits and publish it (conn.lock held); bytes written."""
        tx = self.tx
        if tx.records:
            tx.reap(_OK)
        ring = tx.ring
        size, mask = ring.size, ring.mask
        left = len(m)
        done = 0
        while left:
            pos = tx.pos
            end_room = size - (pos & mask)
            free = size - (pos - tx.reaped)
            cap = (end_room if end_room < free else free) - _REC_HDR  # no min() calls: once per chunk
            if cap <= 0:  # the end of the ring is too short: pad, write at the start
                cap = min(free - end_room, size) - _REC_HDR
                if cap <= 0:
                    break
            k = left if left < cap else cap
            if k > MAX_RECORD:
                k = MAX_RECORD
            if not tx.put_one(K_BYTES, 0, 0, 0, m[done:done + k], k, None):
                break
            done += k
            left -= k
        if done:
            tx.publish()
            fence()  # the head before the look at the flag (the sleeper sets it, then looks at the head)
            if ring.csleep.value:
                ring_doorbell(self.bell)
        return done

    def reap(self) -> bool:
        """Free what the peer consumed (conn.lock held); whether it consumed anything."""
        tx = self.tx
        if not tx.records or tx.ring.tail.value == tx.reaped:
            return False
        tx.reap(_OK)
        return True

    def close(self) -> None:
        """Unmap both rings and drop the doorbell (rlock and conn.lock held, nothing uses them)."""
        if self.closed:
            return
        self.closed = True
        self.rx.ring.close()
        self.tx.ring.close()
        try:
            os.close(self.bell)
        except OSError:
            pass


# -- the reading side ------------------------------------------------------------------------------
def serve(conn: LinkedConnection, link: ShmLink) -> bool:
    """Copy the published chunks into the receive buffer and parse them (link.rlock held, Pe or I/O
    thread); whether anything was read. A malformed ring breaks the connection."""
    cons = link.rx
    ring = cons.ring
    data = ring.data
    mask = ring.mask
    did = False
    try:
        while not (conn.broken or conn.torn_down or conn.paused):
            head = cons.head()
            mv = conn.mv
            assert mv is not None
            rend = conn.rend
            room = len(mv) - rend
            got = False
            while True:
                hdr = cons.read(head)
                if hdr is None:
                    break
                n = hdr[2]
                if n > room:
                    break  # parse first: the buffer always has room for a whole record then
                off = (cons.pos & mask) + _REC_HDR
                mv[rend:rend + n] = data[off:off + n]
                rend += n
                room -= n
                cons.done(0)
                got = True
            if not got:
                break
            did = True
            if cons.publish():
                fence()
                if ring.psleep.value:  # the writer sleeps waiting for room
                    ring_doorbell(link.bell)
            conn.rend = rend
            conn.heard = monotonic()
            conn.parse_input()
    except RingError as exc:
        conn.die(RESET, f"the peer's shared-memory ring is malformed: {exc}")
        return True
    return did


def noop(_: object) -> None:
    """Posted to make a Pe poll its rings (and wake it if it sleeps)."""


QUIET[noop] = False  # what the poll delivers is the progress, not the nudge


class CommPoller:
    """An endpoint's ring connections, polled by its Pe (:attr:`EmuPe.pollers`)."""

    def __init__(self, pe: EmuPe) -> None:
        self.pe = pe
        self.conns: tuple[LinkedConnection, ...] = ()  # replaced, never mutated (any thread)
        self.lock = threading.Lock()

    def add(self, conn: LinkedConnection) -> None:
        pe = self.pe
        with self.lock:
            self.conns = self.conns + (conn,)
            if self not in pe.pollers:
                pe.pollers = pe.pollers + [self]  # replaced, not mutated: progress() may be iterating it
        try:
            pe.post(noop, None)  # poll once: bytes may have been published before we listened
        except OSError:
            pass

    def _drop(self, conn: LinkedConnection) -> None:
        """*conn* is torn down (Pe thread): unmap its rings; leave the Pe with the last one."""
        with self.lock:
            self.conns = tuple(c for c in self.conns if c is not conn)
            if not self.conns and self in self.pe.pollers:
                self.pe.pollers = [p for p in self.pe.pollers if p is not self]
        link = conn.shm
        if link is not None:
            with link.rlock, conn.lock:
                link.close()
                conn.release_receive_buffer()  # torn down: no reader is left

    def poll(self) -> bool:
        did = False
        for conn in self.conns:
            link = conn.shm
            if link is None or conn.torn_down:
                self._drop(conn)
                continue
            if conn.broken:
                continue
            ring = link.rx.ring
            if ring.csleep.value:  # awake: the peer need not ring
                ring.csleep.value = 0
            if ring.head.value != link.rx.pos and not conn.paused and link.rlock.acquire(False):
                try:
                    did = serve(conn, link) or did
                finally:
                    link.rlock.release()
            if conn.want_write and link.tx.ring.tail.value != link.tx.reaped:
                link.tx.ring.psleep.value = 0
                conn.write_ready()
                did = True
        pe = self.pe
        if not did and pe.armed and self.arm():
            pe.armed = False  # armed before this progress (it may sleep next): work came meanwhile
            ring_doorbell(pe.efd)
        return did

    def arm(self) -> bool:
        """The Pe is about to sleep: ask the peers for a doorbell; whether there is work already."""
        conns = self.conns
        for conn in conns:
            link = conn.shm
            if link is not None and not link.closed:
                link.rx.ring.csleep.value = 1
                if conn.want_write:
                    link.tx.ring.psleep.value = 1
        fence()  # the flags before the look at the indices (the peer publishes, then looks at the flags)
        for conn in conns:
            link = conn.shm
            if link is None or link.closed:
                continue
            if link.rx.ring.head.value != link.rx.pos and not conn.paused:
                return True
            if conn.want_write and link.tx.ring.tail.value != link.tx.reaped:
                return True
        return False


def poller(ctx: LinkOwner) -> CommPoller:
    p = ctx.poller
    if p is None:
        assert ctx.pe is not None
        p = ctx.poller = CommPoller(ctx.pe)
    return p


# -- set-up (I/O thread) ---------------------------------------------------------------------------
def offer(conn: LinkedConnection, hello: bytes) -> bool:
    """Send the client's HELLO with a fresh ring and our Pe's doorbell; False (nothing sent) if
    they cannot be made or sent: the caller sends the HELLO alone."""
    pe = conn.ctx.pe
    sock = conn.sock
    if pe is None or sock is None or pe.efd < 0:
        return False
    try:
        ring = Ring.create(RING_SIZE)
    except OSError as exc:
        logger.debug("comch: no shared-memory ring, the connection uses its socket: %s", exc)
        return False
    try:
        send_fds(sock, hello, [ring.fd, pe.efd])  # a fresh socket takes a small message whole
    except OSError as exc:
        ring.close()
        logger.debug("comch: cannot offer a shared-memory ring: %s", exc)
        return False
    conn.ring_offer = ring
    return True


def accept(conn: LinkedConnection, welcome: bytes) -> bool | None:
    """Server side, on a HELLO that offered rings: send *welcome* with our ring and doorbell and
    switch the connection to the rings. None: the WELCOME was sent without them (rings disabled
    here, or they cannot be made); False: the offer was malformed (the connection must go)."""
    fds, conn.fds_in = conn.fds_in, []
    from .config import shm_enabled
    if not shm_enabled():
        for fd in fds:
            os.close(fd)
        return None
    try:
        tx, bell = attach_with_bell(fds)
    except RingError as exc:
        conn.bad_input(f"ring offer: {exc}")
        return False
    sock, pe = conn.sock, conn.ctx.pe
    try:
        rx = Ring.create(RING_SIZE)
    except OSError:
        tx.close()
        os.close(bell)
        return None
    if sock is None or pe is None:
        rx.close()
        tx.close()
        os.close(bell)
        return None
    try:
        send_fds(sock, welcome, [rx.fd, pe.efd])
    except OSError as exc:
        rx.close()
        tx.close()
        os.close(bell)
        conn.die(RESET, f"send failed: {exc.strerror}")
        return False
    _switch(conn, ShmLink(rx, tx, bell))
    return True


def adopt(conn: LinkedConnection) -> bool:
    """Client side, on the WELCOME: switch to the rings if the server answered with its own. False if
    its descriptors are malformed (the connection must go)."""
    fds, conn.fds_in = conn.fds_in, []
    rx, conn.ring_offer = conn.ring_offer, None
    if rx is None or not fds:
        for fd in fds:
            os.close(fd)
        if rx is not None:
            rx.close()
        return True
    try:
        tx, bell = attach_with_bell(fds)
    except RingError as exc:
        rx.close()
        conn.bad_input(f"ring answer: {exc}")
        return False
    _switch(conn, ShmLink(rx, tx, bell))
    return True


def _switch(conn: LinkedConnection, link: ShmLink) -> None:
    # Whatever else the socket held after the handshake frame is a nudge: nothing else travels there.
    logger.debug("comch: connection %s uses shared-memory rings", conn.peer)
    conn.rpos = conn.rend = 0
    conn.shm = link
    # Up (and announced) before the Pe polls: it may parse the peer's first frames at once, whose
    # events must follow the connection's, as over the socket.
    conn.alive = True
    ctx = conn.ctx
    post(ctx.pe, ctx.deliver_conn, (conn, True))
    poller(ctx).add(conn)


# -- the fallback doorbell (I/O thread) ------------------------------------------------------------
def arm_nudge(conn: LinkedConnection, link: ShmLink) -> None:
    """We published bytes (conn.lock held): check on the peer in :data:`NUDGE` seconds."""
    if link.nudging:
        return
    link.nudging = True
    link.last_tail = link.tx.reaped
    r = conn.r
    r.call_soon(lambda: r.call_later(NUDGE, lambda: _nudge_check(conn, link)))


def _nudge_check(conn: LinkedConnection, link: ShmLink) -> None:
    ready = False
    with conn.lock:
        if conn.closed or link.closed:
            link.nudging = False
            return
        tx = link.tx
        tail = tx.ring.tail.value
        if tail == tx.ring.head.value and not conn.want_write:
            link.nudging = False  # everything consumed: the next publish re-arms
            return
        stuck = tail == link.last_tail
        if not stuck:
            conn.heard = monotonic()
        link.last_tail = tail
        ready = conn.want_write and tail != tx.reaped
        sock = conn.sock
    if ready:
        conn.write_ready()  # our Pe may not be progressing either
    if stuck and sock is not None:
        try:
            sock.send(_NUDGE_BYTE)
        except OSError:
            pass  # full (the peer is far behind, or stopped): the retry window decides
    conn.r.call_later(NUDGE, lambda: _nudge_check(conn, link))


def nudged(conn: LinkedConnection, link: ShmLink, buf: memoryview) -> None:
    """Bytes on a ring connection's socket (I/O thread): only nudges may come; serve the ring."""
    if any(buf):
        conn.die(RESET, "malformed frame: stream bytes after the ring set-up")
        return
    conn.heard = monotonic()
    with link.rlock:
        if not link.closed:
            serve(conn, link)
    if conn.want_write:
        conn.write_ready()


def drain(conn: LinkedConnection) -> None:
    """The peer closed its socket (I/O thread): what it published before is delivered first."""
    link = conn.shm
    if link is not None:
        with link.rlock:
            if not link.closed:
                serve(conn, link)

