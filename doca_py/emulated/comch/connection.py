"""The emulated ``doca_comch_connection``: output, credits, retry window and teardown."""

from __future__ import annotations

from typing import TYPE_CHECKING
import os
import socket
import threading
from collections import deque

from ...errors import (
    DocaError,
    DocaInvalidValue,
)
from ...log import logger
from ..ctx import FLUSHED, EmuCtx
from ..pe import Lane
from ..transport.reactor import reactor
from .wire import (
    HDR,
    HDR_SIZE,
    T_DATA,
)
from .receive import ConnectionInput, ConnectionOwner, LocalConsumer, LocalProducer
from .config import (
    RX_SIZE, ABORTED, IO_FAILED, NOT_CONNECTED, NOT_FOUND, RESET, SUCCESS, monotonic, retry_window,
)
from .common import complete_soft, device_view, post, post_complete, post_done
from .tasks import EmuComchProducerTaskSend, EmuComchTaskSend, Remote
from . import shm as _shm

if TYPE_CHECKING:
    from ..transport.shmring import Ring

# -- connections ----------------------------------------------------------------------------------
class EmuComchConnection(ConnectionInput):
    """Emulated ``doca_comch_connection``: one end of a socket between a client and a server."""

    def __init__(self, ctx: ConnectionOwner, server_side: bool, peer: str) -> None:
        self.ctx = ctx
        self.server_side = server_side
        self.peer = peer
        self.owner: object = None  # the public ComchConnection
        self.r = reactor()
        self.sock: socket.socket | None = None
        self.lock = threading.Lock()
        # Output (guarded by lock): bytes not yet sent are out[opos:].
        self.out = bytearray()
        self.opos = 0
        self.enq = 0  # stream offset after the last byte queued
        self.sent = 0  # stream offset after the last byte written
        self.lane = Lane()  # the connection's message tasks: they complete in submission order
        #: Message tasks waiting for their bytes to be written, in order: ``wq[wq_h:wq_n]`` of a list used as a
        #: growing array of ``wq_cap`` slots (a launch stores its task, the ones written are taken as one
        #: slice: no call per message). Slots outside that range are stale.
        self.wq: list[EmuComchTaskSend] = []
        self.wq_h = self.wq_n = self.wq_cap = 0
        # Producer tasks waiting for the peer's ACK, in wire order (guarded by lock); None stands for a
        # task its stopping producer flushed, whose ACK is still to come.
        self.pq: deque[EmuComchProducerTaskSend | None] = deque()
        self.want_write = False
        self.closed = False  # no more output (set under lock)
        #: Why the connection went down (set by :meth:`die`): ``CONNECTION_RESET`` (the peer closed it or
        #: broke the protocol), ``IO_FAILED`` (the retry window ran out), ``CONNECTION_ABORTED`` (closed
        #: here); 0 while it is up. The ctxs it stops flush their work with it.
        self.loss = SUCCESS
        self.torn_down = False  # socket released, events posted (I/O thread)
        self.alive = False  # handshake done
        self.mask = 0
        # Input (I/O thread only).
        self.rx: bytearray | None = None
        self.mv: memoryview | None = None
        self.rpos = self.rend = 0
        self.ack_status = 0
        self.ack_count = 0
        self.max_recv = ctx.max_msg_size
        self.max_send = ctx.max_msg_size
        self.high = min(64 << 20, ctx.recv_queue_size * (HDR_SIZE + ctx.max_msg_size))
        self.posted = 0  # bytes of messages posted to the Pe (I/O thread writes)
        self.delivered = 0  # ... and delivered by it (Pe thread writes)
        self.paused = False
        # Local consumers (looked up by id for incoming data) and producers on this connection.
        self.consumers: dict[int, LocalConsumer] = {}
        self.producers: set[LocalProducer] = set()  # started ones (changed under lock)
        # The peer's consumers, by id: credits and waiting producer tasks (guarded by lock).
        self.remote: dict[int, Remote] = {}
        self.users: set[EmuCtx] = set()  # consumers and producers created and not destroyed
        self.nmsgs = 0  # messages queued (SENT_MESSAGES) ...
        self.nframe_bytes = 0  # ... and their frame bytes
        # Counters (doca_comch_counter): live values and the snapshot update_info() takes.
        self.live = [0, 0, 0, 0, 0]
        self.snap = [0, 0, 0, 0, 0]
        # Retry window: output waits for the peer while pq is non-empty or the socket refused bytes.
        self.window = retry_window()
        self.since = 0.0  # when output last started waiting for the peer (under lock)
        self.heard = 0.0  # when the peer last showed life: bytes read, room made (I/O thread)
        self.rt_armed = False  # a retry-window timer runs (under lock)
        # Same-host rings (:mod:`.shm`): set once at the handshake, then the socket carries only nudges.
        self.shm: _shm.ShmLink | None = None
        self.ring_offer: Ring | None = None  # the client's ring, offered with its HELLO
        self.fds_in: list[int] = []  # descriptors that came with the handshake
        self.broken = False  # dropped from a Pe thread: the I/O thread tears it down
        self.nudge_mv: memoryview | None = None

    # -- public handle -------------------------------------------------------------------------
    def is_server_side(self) -> bool:
        return self.server_side

    def is_connected(self) -> bool:
        return self.alive and not self.closed

    def update_info(self) -> None:
        live = self.live
        live[1] = self.nmsgs
        live[2] = self.nframe_bytes - HDR_SIZE * self.nmsgs
        self.snap = list(live)

    def get_counter(self, counter: int) -> int:
        if not 1 <= counter <= 4:
            raise DocaInvalidValue(f"unknown doca_comch_counter {counter}")
        return self.snap[counter]

    # -- socket ----------------------------------------------------------------------------------
    def attach(self, sock: socket.socket) -> None:
        """Adopt a connected socket and start reading (I/O thread)."""
        sock.setblocking(False)
        self.sock = sock
        self.rx = bytearray(RX_SIZE)
        self.mv = memoryview(self.rx)
        self.update_mask()

    def release_receive_buffer(self) -> None:
        """Free the receive buffer (over a MiB) of a torn-down connection at once rather than at the next
        cyclic collection: a refused or departed client must cost nothing."""
        self.rx = self.mv = None

    def update_mask(self) -> None:
        if self.torn_down or self.sock is None or self.shm is not None:
            return  # ring mode: the socket is only read (nudges, EOF), whatever the Pe's backlog
        want = (0 if self.paused else 1) | (2 if self.want_write else 0)
        self.mask = self.r.set_mask(self.sock, self.mask, want, self._event)

    def _event(self, mask: int) -> None:
        if mask & 2:
            self.write_ready()
        if mask & 1 and not self.torn_down and (not self.paused or self.shm is not None):
            self.read_ready()

    # -- output --------------------------------------------------------------------------------
    def _send_locked(self) -> None:
        """Write what the socket takes (lock held); arm the I/O thread for the rest."""
        sock = self.sock
        if sock is None:
            return
        out = self.out
        link = self.shm
        try:
            with memoryview(out) as m, m[self.opos:] as rest:
                n = sock.send(rest) if link is None else link.write(rest)
        except (BlockingIOError, InterruptedError):
            n = 0
        except (OSError, _shm.RingError) as exc:
            reason = (f"send failed: {exc.strerror}" if isinstance(exc, OSError)
                      else f"the peer's shared-memory ring is malformed: {exc}")
            self.r.call_soon(lambda: self.die(RESET, reason))
            return
        if link is not None and n:
            _shm.arm_nudge(self, link)
        self.sent += n
        self.opos += n
        if self.opos >= len(out):
            del out[:]
            self.opos = 0
            if self.want_write:
                self.want_write = False
                if link is None:
                    self.r.call_soon(self.update_mask)
        elif not self.want_write:
            if not self.pq:
                self._waiting_locked()
            self.want_write = True
            if link is None:  # ring mode: room is noticed by the Pe's poll or the nudge timer
                self.r.call_soon(self.update_mask)

    def _written_locked(self) -> list[EmuComchTaskSend] | None:
        wq = self.wq
        h, n = self.wq_h, self.wq_n
        sent = self.sent
        if h == n or wq[h].end > sent:
            return None
        i = h + 1
        while i < n and wq[i].end <= sent:
            i += 1
        done = wq[h:i]
        if i == n:
            self.wq_h = self.wq_n = 0
        else:
            self.wq_h = i
        return done

    def wq_room_locked(self, t: EmuComchTaskSend) -> int:
        """:attr:`wq` is full (lock held): move the waiting tasks to its front if that frees half of it,
        else double it (*t* fills the new slots). Returns the next free slot."""
        h, n, wq = self.wq_h, self.wq_n, self.wq
        if h and h >= n // 2:
            wq[:n - h] = wq[h:n]
            self.wq_h = 0
            self.wq_n = n - h
            return n - h
        wq.extend([t] * max(n, 16))
        self.wq_cap = len(wq)
        return n

    def flush(self) -> None:
        """Send what is queued (any thread); completes the message tasks written."""
        with self.lock:
            if self.closed or self.want_write or self.opos >= len(self.out):
                return
            self._send_locked()
            done = self._written_locked()
        if done:
            post_done(done)

    def send_now(self, frame: bytes) -> bool:
        """Queue a control frame and push it at once (any thread). False if closed."""
        with self.lock:
            if self.closed:
                return False
            self.out += frame
            self.enq += len(frame)
            if not self.want_write:
                self._send_locked()
            done = self._written_locked()
        if done:
            post_done(done)
        return True

    def kick_locked(self) -> list[EmuComchTaskSend] | None:
        """Push queued output now (lock held); the message tasks written, to be posted."""
        if not self.want_write:
            self._send_locked()
        return self._written_locked()

    # -- producer data and credits (lock held unless said otherwise) ----------------------------
    def queue_data_locked(self, t: EmuComchProducerTaskSend) -> int:
        """Append *t*'s DATA frame, read from its source buffer now; 0, or the status if the
        buffer cannot be read."""
        buf = t.buf
        assert buf is not None and buf.mmap is not None
        n = buf.data_len
        try:
            src = device_view(buf.mmap, buf.data, n, False)
        except DocaError as exc:
            t.reason = f"the source buffer cannot be read: {exc.detail}"
            return exc.code
        imm = t.imm
        out = self.out
        out += HDR.pack(T_DATA, len(imm), 0, len(imm) + n, t.consumer_id, t.ctx.id)
        if imm:
            out += imm
        out += src
        self.enq += HDR_SIZE + len(imm) + n
        if not self.pq and not self.want_write:
            self._waiting_locked()
        self.pq.append(t)
        return SUCCESS

    # -- retry window ------------------------------------------------------------------------------
    def _waiting_locked(self) -> None:
        """Output starts waiting for the peer (lock held): run the retry-window timer."""
        self.since = monotonic()
        if not self.rt_armed:
            self.rt_armed = True
            r = self.r
            r.call_soon(lambda: r.call_later(self.window, self._retry_check))

    def _retry_check(self) -> None:
        """The retry-window timer (I/O thread): a peer silent for a whole window while output waits
        for it is dead (or stopped); with nothing waiting the timer stops (idle costs nothing)."""
        with self.lock:
            if self.torn_down or self.closed or not (self.pq or self.want_write):
                self.rt_armed = False
                return
            now = monotonic()
            if self.paused:  # we are not reading (our Pe is behind): the peer's answers wait in our socket
                self.since = now
            left = max(self.since, self.heard) + self.window - now
            if left > 0:
                self.r.call_later(left, self._retry_check)
                return
            self.rt_armed = False
            what = f"{len(self.pq)} producer send(s) unacknowledged" if self.pq else "its socket full"
        self.die(IO_FAILED, f"the peer did not answer within the retry window ({self.window:g} s, "
                             f"DOCA_PY_COMCH_RETRY_WINDOW), {what}")

    def grant_locked(self, r: Remote, n: int) -> bool:
        """Add *n* credits to *r*; waiting tasks take them first. Whether a frame was queued."""
        r.credits += n
        queued = False
        w = r.waiting
        while w and r.credits > 0:
            t = w.popleft()
            st = self.queue_data_locked(t)
            if st:
                t.status = st
                post_complete(t)
                continue
            r.credits -= 1
            queued = True
        return queued

    def refund(self, r: Remote) -> None:
        """Give back a credit a submitted producer task did not use (Pe thread)."""
        with self.lock:
            if self.closed or not self.grant_locked(r, 1):
                return
            done = self.kick_locked()
        if done:
            post_done(done)

    def requeue(self, t: EmuComchProducerTaskSend) -> None:
        """The peer had no receive posted for *t* (a stale credit): wait for the next credit
        of that consumer, in flight (I/O thread)."""
        done = None
        with self.lock:
            if self.closed:
                t.status = NOT_CONNECTED
                post(t.ctx.pe, complete_soft, t)
            elif t.ctx not in self.producers:
                t.status = FLUSHED  # its producer is stopping
                post_complete(t)
            else:
                r = self.remote.get(t.consumer_id)
                if r is None:
                    t.status = NOT_FOUND
                    t.reason = f"remote consumer {t.consumer_id} expired"
                    post_complete(t)
                else:
                    r.waiting.append(t)
                    if r.credits > 0 and self.grant_locked(r, 0):
                        done = self.kick_locked()
        if done:
            post_done(done)

    def write_ready(self) -> None:
        self.heard = monotonic()  # the peer made room in its socket
        with self.lock:
            if self.closed:
                return
            self._send_locked()
            if self.opos > (1 << 20):
                del self.out[:self.opos]
                self.opos = 0
            done = self._written_locked()
        if done:
            post_done(done)

    def close_local(self) -> None:
        """Close from this side (stop, disconnect): push what fits, then tear down (any thread)."""
        with self.lock:
            if self.closed:
                return
            if self.sock is not None and not self.want_write and self.opos < len(self.out):
                link = self.shm
                try:
                    with memoryview(self.out) as m, m[self.opos:] as rest:
                        self.sent += self.sock.send(rest) if link is None else link.write(rest)
                except (OSError, _shm.RingError):
                    pass
            done = self._written_locked()
            self.closed = True
        if done:
            post_done(done)
        self.r.call_soon(lambda: self.die(ABORTED, None))

    def die(self, code: int, reason: str | None) -> None:
        """Release the socket, fail what is in flight and post the events, once (I/O thread)."""
        if self.torn_down:
            return
        if not self.r.on_thread():  # a Pe thread found the peer's ring malformed: the I/O thread tears down
            self.broken = True
            self.r.call_soon(lambda: self.die(code, reason))
            return
        if reason:
            logger.warning("comch: dropping connection %s: %s", self.peer, reason)
        with self.lock:
            self.closed = True
            self.torn_down = True
            self.loss = code
            wq, self.wq = self.wq[self.wq_h:self.wq_n], []
            self.wq_h = self.wq_n = self.wq_cap = 0
            pq, self.pq = self.pq, deque()
            for r in self.remote.values():
                pq.extend(r.waiting)
                r.waiting.clear()
            self.remote.clear()
            del self.out[:]
            self.opos = 0
        sock, self.sock = self.sock, None
        if self.shm is None:
            # Only this thread read the receive buffer: free it now (with rings, the Pe's poller may still
            # be reading it, and lets go when it drops the link).
            self.release_receive_buffer()
        fds, self.fds_in = self.fds_in, []
        for fd in fds:
            os.close(fd)
        offered, self.ring_offer = self.ring_offer, None
        if offered is not None:
            offered.close()
        if self.shm is not None:  # unmapped by the Pe's poller, which may be reading it now
            post(self.ctx.pe, _shm.noop, None)
        if sock is not None:
            if self.mask:
                try:
                    self.r.sel.unregister(sock)
                except (KeyError, ValueError):
                    pass
                self.mask = 0
            sock.close()
        for t in wq:
            t.status = code
            post(t.ctx.pe, complete_soft, t)
        for p in pq:
            if p is not None:
                p.status = code
                post(p.ctx.pe, complete_soft, p)
        for c in list(self.consumers.values()):
            post(c.pe, c.conn_lost, None)
        for pr in list(self.producers):
            post(pr.pe, pr.conn_lost, None)
        self.ctx.conn_gone(self)


    def resume(self) -> None:
        """Read again after the Pe drained the backlog (I/O thread)."""
        if self.paused and self.posted - self.delivered <= self.high:
            self.paused = False
            self.update_mask()

    def delivered_bytes(self, n: int) -> None:
        """The Pe consumed *n* bytes of posted messages (Pe thread)."""
        self.delivered += n
        if self.paused and self.posted - self.delivered <= self.high // 2:
            if self.shm is not None:
                self.paused = False  # the Pe reads the ring: its next poll goes on
                return
            self.r.call_soon(self.resume)

    def __repr__(self) -> str:
        return f"<EmuComchConnection {self.peer}>"
