"""Emulated ``doca_comch``: server, client, connections, producers and consumers.

A server listens on a Unix-domain socket (see :mod:`.comch_io` for paths and the
wire format); a client connects to it and becomes RUNNING once the handshake is
done. Both ends of a connection carry, on one byte stream, control messages,
consumer announcements, receive credits, producer data and the acknowledgements of
that data.

Tasks follow DOCA 3.x: ``submit`` only checks and queues the task on the ``Pe``; its
work runs in ``Pe.progress()`` (:meth:`EmuTask._begin`): a message or producer task then
appends its frame to the connection's output buffer (reading the producer's source
buffer at that moment) and posts one flush per progress engine and batch, so many
frames leave in one ``send``; the I/O thread finishes what the socket refuses. A
message task completes once its bytes are in the socket; a producer task completes
when the peer's I/O thread acknowledges the data landing in a posted receive buffer.

Credits: a consumer's posted receives are announced to the other side with CREDIT
frames (once the receive is queued, in ``progress``), and the connection counts them per
remote consumer. A producer send spends one credit at ``submit``; with none left
``submit`` raises ``DocaAgain`` and the caller keeps the task, as ``doca_task_submit``
returns ``DOCA_ERROR_AGAIN`` when the consumer has no receive posted. Should a credit
turn out to be stale (the consumer restarted, or was not running yet), the receiving
side answers ``AGAIN`` and the task waits, still in flight, for the next credit of that
consumer: ``AGAIN`` never reaches a completion callback. Waiting tasks fail only for a
real reason (the consumer expired, the connection died, the producer stopped).

Receiving: the I/O thread parses and validates frames, copies producer data straight
into the consumer's posted buffer (through :meth:`EmuMmap.view`, which checks range and
permission), and posts batches of control messages, events and completions to the
owning ``Pe``. It never runs user code.

Silent peers: while producer data waits for the peer's ACK or the socket refuses our bytes, a
retry-window timer runs on the I/O thread (``DOCA_PY_COMCH_RETRY_WINDOW``, default 4 s); a peer
that shows no sign of life (no byte read, no room made) for a whole window is dropped as a
crashed one, its waiting tasks failing with ``DOCA_ERROR_IO_FAILED``. Nothing runs when idle.
"""

from __future__ import annotations

import itertools
import os
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from ..abc import BufHandle, DevInfoHandle, MmapHandle
from ..errors import (
    DocaAgain,
    DocaBadState,
    DocaError,
    DocaInUse,
    DocaInvalidValue,
    DocaNotConnected,
    DocaNotPermitted,
    DocaNotSupported,
    DocaOperatingSystem,
    ErrorCode,
    error_name,
    lookup,
)
from ..log import logger
from ..types import AccessFlag
from . import strict
from .buf import EmuBuf
from .comch_io import (
    HDR,
    HDR_SIZE,
    MAGIC,
    T_ACK,
    T_CONSUMER_GONE,
    T_CONSUMER_NEW,
    T_CREDIT,
    T_DATA,
    T_HELLO,
    T_MSG,
    T_WELCOME,
    VERSION,
    NameLock,
    is_refused,
    reactor,
    socket_path,
)
from .ctx import FLUSHED, EmuCtx, EmuTask, TaskPool, complete_task, unpin_bufs
from .dev import EmuDevInfo
from .mmap import EmuMmap, dev_key, reachable
from .pe import EmuPe

__all__ = [
    "EmuComchServer", "EmuComchClient", "EmuComchConnection", "EmuComchConsumer", "EmuComchProducer",
    "EmuComchTaskSend", "EmuComchConsumerTaskPostRecv", "EmuComchProducerTaskSend",
    "server_create", "client_create", "consumer_create", "producer_create",
    "MAX_NAME_LEN", "MAX_MSG_SIZE", "MAX_RECV_QUEUE_SIZE", "DEFAULT_RECV_QUEUE_SIZE", "MAX_CLIENTS",
    "MAX_SEND_TASKS", "MAX_BUF_SIZE", "MAX_IMM_DATA_LEN", "MAX_NUM_TASKS", "MAX_CONSUMERS", "MAX_PRODUCERS",
    "cap_server_is_supported",
    "cap_client_is_supported",
    "cap_get_max_name_len",
    "cap_get_max_msg_size",
    "cap_get_max_recv_queue_size",
    "cap_get_max_clients",
    "cap_get_max_send_tasks",
    "consumer_cap_is_supported",
    "consumer_cap_get_max_num_tasks",
    "consumer_cap_get_max_buf_size",
    "consumer_cap_get_max_buf_list_len",
    "consumer_cap_get_max_consumers",
    "consumer_cap_get_max_imm_data_len",
    "producer_cap_is_supported",
    "producer_cap_get_max_num_tasks",
    "producer_cap_get_max_buf_size",
    "producer_cap_get_max_buf_list_len",
    "producer_cap_get_max_producers",
    "configure", "DEFAULT_RETRY_WINDOW",
]

_IDLE, _STARTING, _RUNNING, _STOPPING = 0, 1, 2, 3

#: Capabilities of the emulated devices (``doca_comch_cap_*``).
MAX_NAME_LEN = 120  # including the terminating NUL, as DOCA counts it
MAX_MSG_SIZE = 4080
MAX_RECV_QUEUE_SIZE = 1 << 14
DEFAULT_RECV_QUEUE_SIZE = 1024
MAX_CLIENTS = 512
MAX_SEND_TASKS = 1 << 14
MAX_BUF_SIZE = 1 << 20  # producer/consumer buffers (hardware: up to 1 GiB)
MAX_BUF_LIST_LEN = 1
MAX_IMM_DATA_LEN = 32
MAX_NUM_TASKS = 1 << 14
MAX_CONSUMERS = 512
MAX_PRODUCERS = 512

#: Largest frame a peer may send; the receive buffer is sized from it once, so no length
#: read from the wire ever sizes an allocation.
MAX_FRAME = HDR_SIZE + MAX_IMM_DATA_LEN + MAX_BUF_SIZE
RX_SIZE = MAX_FRAME + (64 << 10)

_SUCCESS = 0
_AGAIN = int(ErrorCode.AGAIN)
_NOT_FOUND = int(ErrorCode.NOT_FOUND)
_TOO_BIG = int(ErrorCode.TOO_BIG)
_RESET = int(ErrorCode.CONNECTION_RESET)
_ABORTED = int(ErrorCode.CONNECTION_ABORTED)
_NOT_CONNECTED = int(ErrorCode.NOT_CONNECTED)
_FULL = int(ErrorCode.FULL)
_BAD_STATE = int(ErrorCode.BAD_STATE)
_INVALID = int(ErrorCode.INVALID_VALUE)
_NOT_PERMITTED = int(ErrorCode.NOT_PERMITTED)
_PCI_READ = int(AccessFlag.PCI_READ_ONLY | AccessFlag.PCI_READ_WRITE)
_PCI_WRITE = int(AccessFlag.PCI_READ_WRITE)
_complete = complete_task
_IO_FAILED = int(ErrorCode.IO_FAILED)
_monotonic = time.monotonic

#: Seconds output waiting for the peer (producer data not acknowledged, bytes its socket refused)
#: may see no sign of life from it before the connection is declared dead
#: (``DOCA_PY_COMCH_RETRY_WINDOW``); the same default as rdma's retry window.
DEFAULT_RETRY_WINDOW = 4.0
_retry_window = float(os.environ.get("DOCA_PY_COMCH_RETRY_WINDOW", "") or DEFAULT_RETRY_WINDOW)


def configure(*, retry_window: float | None = None) -> None:
    """Override the environment for connections made from now on (tests, tools).

    *retry_window*: seconds work waiting for the peer may see no sign of life from it before it
    fails with ``DOCA_ERROR_IO_FAILED`` and the connection goes down (``0`` restores
    :data:`DEFAULT_RETRY_WINDOW`).
    """
    global _retry_window
    if retry_window is not None:
        _retry_window = retry_window if retry_window > 0 else DEFAULT_RETRY_WINDOW

_MSG_HDRS: dict[int, bytes] = {}  # message headers by length (at most max_msg_size + 1 entries)
_ids = itertools.count(1)  # consumer and producer ids: unique in the process, never 0
_PEERCRED = struct.Struct("3i")


def _post(pe: EmuPe | None, fn: Callable[[Any], object], arg: Any) -> None:
    """``pe.post`` from the I/O thread, tolerating an engine destroyed meanwhile."""
    if pe is None or pe.efd < 0:
        return
    try:
        pe.post(fn, arg)
    except OSError:
        pass


def _complete_soft(task: EmuTask) -> None:
    """Deliver a task error that does not stop its ctx (the lost connection of a
    multi-client server): the error callback runs and the ctx stays RUNNING."""
    ctx = task.ctx
    if ctx.state == _RUNNING and task.status:
        task.inflight = False
        ctx.inflight -= 1
        if task.pinned:
            unpin_bufs(task)
        cb = task.pool.error
        assert cb is not None
        cb(task.owner)
        return
    _complete(task)


def _flush_ctx(ctx: _Sender) -> None:
    """Posted once per batch by ``submit``: push every dirty connection's output."""
    ctx.flush_posted = False
    dirty, ctx.dirty = ctx.dirty, set()
    for conn in dirty:
        conn.flush()


def _flush_credits(c: EmuComchConsumer) -> None:
    """Posted once per batch by post-recv tasks: announce the receives just posted."""
    c.credit_posted = False
    n, c.unsent = c.unsent, 0
    if not n or c.state != _RUNNING:
        return  # a stopped consumer's receives were flushed (and its expiry announced)
    conn = c.conn
    with conn.lock:
        if conn.closed:
            return
        conn.out += HDR.pack(T_CREDIT, 0, 0, 0, c.id, n)
        conn.enq += HDR_SIZE
    conn.flush()


def _device_view(mm: EmuMmap, addr: int, n: int, write: bool) -> memoryview:
    """``[addr, addr+n)`` of a producer or consumer buffer, as the comch device reaches it: over
    PCIe, so the map needs ``PCI_READ_WRITE`` (a consumer's) or a ``PCI_*`` flag (a producer's),
    which is how DOCA's comch samples register these maps; local access rights are irrelevant."""
    mv = mm.mv
    if mm.fast and mv is not None and mm.addr <= addr and addr + n <= mm.hi and n >= 0:
        if not mm.perms & (_PCI_WRITE if write else _PCI_READ):
            raise DocaNotPermitted(f"mmap permissions {AccessFlag(mm.perms)!r} do not let the comch device "
                                   f"{'write' if write else 'read'} it (it needs "
                                   f"{'PCI_READ_WRITE' if write else 'PCI_READ_ONLY or PCI_READ_WRITE'})")
        off = addr - mm.addr
        return mv[off:off + n]
    return mm.view(addr, n, write)  # not a started local map: the map's own checks


def _check_name(name: str) -> bytes:
    raw = name.encode()
    if not raw or len(raw) >= MAX_NAME_LEN or b"\0" in raw:
        raise DocaInvalidValue(f"comch server name must be 1..{MAX_NAME_LEN - 1} bytes without NUL, got {name!r}")
    return raw


# -- connections ----------------------------------------------------------------------------------
class _Remote:
    """A consumer of the peer, as this side's producers see it: receive credits, and the
    producer tasks (in flight) waiting for one because their data found no receive posted."""

    __slots__ = ("credits", "waiting")

    def __init__(self) -> None:
        self.credits = 0
        self.waiting: deque[EmuComchProducerTaskSend] = deque()


class EmuComchConnection:
    """Emulated ``doca_comch_connection``: one end of a socket between a client and a server."""

    def __init__(self, ctx: _Endpoint, server_side: bool, peer: str) -> None:
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
        self.wq: deque[EmuComchTaskSend] = deque()  # message tasks waiting for their bytes to be written
        self.pq: deque[EmuComchProducerTaskSend] = deque()  # producer tasks waiting for the peer's ACK
        self.want_write = False
        self.closed = False  # no more output (set under lock)
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
        self.consumers: dict[int, EmuComchConsumer] = {}
        self.producers: set[EmuComchProducer] = set()  # started ones (changed under lock)
        # The peer's consumers, by id: credits and waiting producer tasks (guarded by lock).
        self.remote: dict[int, _Remote] = {}
        self.users: set[EmuCtx] = set()  # consumers and producers created and not destroyed
        self.nmsgs = 0  # messages queued (SENT_MESSAGES) ...
        self.nframe_bytes = 0  # ... and their frame bytes
        # Counters (doca_comch_counter): live values and the snapshot update_info() takes.
        self.live = [0, 0, 0, 0, 0]
        self.snap = [0, 0, 0, 0, 0]
        # Retry window: output waits for the peer while pq is non-empty or the socket refused bytes.
        self.window = _retry_window
        self.since = 0.0  # when output last started waiting for the peer (under lock)
        self.heard = 0.0  # when the peer last showed life: bytes read, room made (I/O thread)
        self.rt_armed = False  # a retry-window timer runs (under lock)

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
        self._update_mask()

    def _update_mask(self) -> None:
        if self.torn_down or self.sock is None:
            return
        want = (0 if self.paused else 1) | (2 if self.want_write else 0)
        self.mask = self.r.set_mask(self.sock, self.mask, want, self._event)

    def _event(self, mask: int) -> None:
        if mask & 2:
            self._write_ready()
        if mask & 1 and not self.torn_down and not self.paused:
            self._read_ready()

    # -- output --------------------------------------------------------------------------------
    def _send_locked(self) -> None:
        """Write what the socket takes (lock held); arm the I/O thread for the rest."""
        sock = self.sock
        if sock is None:
            return
        out = self.out
        try:
            with memoryview(out) as m, m[self.opos:] as rest:
                n = sock.send(rest)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError as exc:
            reason = f"send failed: {exc.strerror}"
            self.r.call_soon(lambda: self.die(_RESET, reason))
            return
        self.sent += n
        self.opos += n
        if self.opos >= len(out):
            del out[:]
            self.opos = 0
            if self.want_write:
                self.want_write = False
                self.r.call_soon(self._update_mask)
        elif not self.want_write:
            if not self.pq:
                self._waiting_locked()
            self.want_write = True
            self.r.call_soon(self._update_mask)

    def _written_locked(self) -> list[EmuComchTaskSend] | None:
        wq = self.wq
        if not wq or wq[0].end > self.sent:
            return None
        sent = self.sent
        done = []
        while wq and wq[0].end <= sent:
            done.append(wq.popleft())
        return done

    def flush(self) -> None:
        """Send what is queued (any thread); completes the message tasks written."""
        with self.lock:
            if self.closed or self.want_write or self.opos >= len(self.out):
                return
            self._send_locked()
            done = self._written_locked()
        if done:
            _post_done(done)

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
            _post_done(done)
        return True

    def _kick_locked(self) -> list[EmuComchTaskSend] | None:
        """Push queued output now (lock held); the message tasks written, to be posted."""
        if not self.want_write:
            self._send_locked()
        return self._written_locked()

    # -- producer data and credits (lock held unless said otherwise) ----------------------------
    def _queue_data_locked(self, t: EmuComchProducerTaskSend) -> int:
        """Append *t*'s DATA frame, read from its source buffer now; 0, or the status if the
        buffer cannot be read."""
        buf = t.buf
        assert buf is not None and buf.mmap is not None
        n = buf.data_len
        try:
            src = _device_view(buf.mmap, buf.data, n, False)
        except DocaError as exc:
            t.reason = f"the source buffer cannot be read: {exc}"
            return exc.code
        imm = t.imm
        out = self.out
        out += HDR.pack(T_DATA, len(imm), 0, len(imm) + n, t.consumer_id, t.ctx.id)  # type: ignore[attr-defined]
        if imm:
            out += imm
        out += src
        self.enq += HDR_SIZE + len(imm) + n
        if not self.pq and not self.want_write:
            self._waiting_locked()
        self.pq.append(t)
        return _SUCCESS

    # -- retry window ------------------------------------------------------------------------------
    def _waiting_locked(self) -> None:
        """Output starts waiting for the peer (lock held): run the retry-window timer."""
        self.since = _monotonic()
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
            now = _monotonic()
            if self.paused:  # we are not reading (our Pe is behind): the peer's answers wait in our socket
                self.since = now
            left = max(self.since, self.heard) + self.window - now
            if left > 0:
                self.r.call_later(left, self._retry_check)
                return
            self.rt_armed = False
            what = f"{len(self.pq)} producer send(s) unacknowledged" if self.pq else "its socket full"
        self.die(_IO_FAILED, f"the peer did not answer within the retry window ({self.window:g} s, "
                             f"DOCA_PY_COMCH_RETRY_WINDOW), {what}")

    def _grant_locked(self, r: _Remote, n: int) -> bool:
        """Add *n* credits to *r*; waiting tasks take them first. Whether a frame was queued."""
        r.credits += n
        queued = False
        w = r.waiting
        while w and r.credits > 0:
            t = w.popleft()
            st = self._queue_data_locked(t)
            if st:
                t.status = st
                _post(t.ctx.pe, _complete, t)
                continue
            r.credits -= 1
            queued = True
        return queued

    def refund(self, r: _Remote) -> None:
        """Give back a credit a submitted producer task did not use (Pe thread)."""
        with self.lock:
            if self.closed or not self._grant_locked(r, 1):
                return
            done = self._kick_locked()
        if done:
            _post_done(done)

    def _requeue(self, t: EmuComchProducerTaskSend) -> None:
        """The peer had no receive posted for *t* (a stale credit): wait for the next credit
        of that consumer, in flight (I/O thread)."""
        done = None
        with self.lock:
            if self.closed:
                t.status = _NOT_CONNECTED
                _post(t.ctx.pe, _complete_soft, t)
            elif t.ctx not in self.producers:
                t.status = FLUSHED  # its producer is stopping
                _post(t.ctx.pe, _complete, t)
            else:
                r = self.remote.get(t.consumer_id)
                if r is None:
                    t.status = _NOT_FOUND
                    t.reason = f"remote consumer {t.consumer_id} expired"
                    _post(t.ctx.pe, _complete, t)
                else:
                    r.waiting.append(t)
                    if r.credits > 0 and self._grant_locked(r, 0):
                        done = self._kick_locked()
        if done:
            _post_done(done)

    def _write_ready(self) -> None:
        self.heard = _monotonic()  # the peer made room in its socket
        with self.lock:
            if self.closed:
                return
            self._send_locked()
            if self.opos > (1 << 20):
                del self.out[:self.opos]
                self.opos = 0
            done = self._written_locked()
        if done:
            _post_done(done)

    def close_local(self) -> None:
        """Close from this side (stop, disconnect): push what fits, then tear down (any thread)."""
        with self.lock:
            if self.closed:
                return
            if self.sock is not None and not self.want_write and self.opos < len(self.out):
                try:
                    with memoryview(self.out) as m, m[self.opos:] as rest:
                        self.sent += self.sock.send(rest)
                except OSError:
                    pass
            done = self._written_locked()
            self.closed = True
        if done:
            _post_done(done)
        self.r.call_soon(lambda: self.die(_ABORTED, None))

    def die(self, code: int, reason: str | None) -> None:
        """Release the socket, fail what is in flight and post the events, once (I/O thread)."""
        if self.torn_down:
            return
        if reason:
            logger.warning("comch: dropping connection %s: %s", self.peer, reason)
        with self.lock:
            self.closed = True
            self.torn_down = True
            wq, self.wq = self.wq, deque()
            pq, self.pq = self.pq, deque()
            for r in self.remote.values():
                pq.extend(r.waiting)
                r.waiting.clear()
            self.remote.clear()
            del self.out[:]
            self.opos = 0
        sock, self.sock = self.sock, None
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
            _post(t.ctx.pe, _complete_soft, t)
        for p in pq:
            p.status = code
            _post(p.ctx.pe, _complete_soft, p)
        for c in list(self.consumers.values()):
            _post(c.pe, c._conn_lost, None)
        for pr in list(self.producers):
            _post(pr.pe, pr._conn_lost, None)
        self.ctx._conn_gone(self)

    # -- input (I/O thread) ------------------------------------------------------------------------
    def _read_ready(self) -> None:
        sock, mv = self.sock, self.mv
        if sock is None or mv is None:
            return
        try:
            n = sock.recv_into(mv[self.rend:])
        except (BlockingIOError, InterruptedError):
            return
        except ConnectionResetError:
            logger.debug("comch: connection %s reset by the peer", self.peer)
            self.die(_RESET, None)
            return
        except OSError as exc:
            self.die(_RESET, f"receive failed: {exc.strerror}")
            return
        if not n:
            if self.rend > self.rpos:
                self.die(_RESET, f"the peer closed the stream inside a frame ({self.rend - self.rpos} bytes "
                                 "of a truncated frame)")
            else:
                self.die(_RESET, None)
            return
        self.rend += n
        self.heard = _monotonic()
        self._parse()

    def _bad(self, why: str) -> None:
        self.die(_RESET, f"malformed frame: {why}")

    def _parse(self) -> None:
        rx = self.rx
        assert rx is not None
        unpack = HDR.unpack_from
        pos, end = self.rpos, self.rend
        lens: list[int] | None = None
        mstart = 0
        alive = self.alive
        max_recv = self.max_recv
        while end - pos >= HDR_SIZE:
            typ, small, aux, ln, a, b = unpack(rx, pos)
            if typ == T_MSG:
                if not alive:
                    return self._bad("message before the handshake")
                if ln > max_recv:
                    return self._bad(f"message of {ln} bytes exceeds max_msg_size {max_recv}")
                if end - pos - HDR_SIZE < ln:
                    break
                if lens is None:
                    lens = []
                    mstart = pos
                lens.append(ln)
                pos += HDR_SIZE + ln
                continue
            # Any other frame: check its length before waiting for its body.
            if typ == T_DATA:
                if ln > MAX_IMM_DATA_LEN + MAX_BUF_SIZE or small > MAX_IMM_DATA_LEN or small > ln:
                    return self._bad(f"producer data of {ln} bytes (immediate {small})")
            elif typ == T_HELLO:
                if ln >= MAX_NAME_LEN:
                    return self._bad(f"hello with a {ln}-byte name")
            elif typ in (T_WELCOME, T_ACK, T_CONSUMER_NEW, T_CONSUMER_GONE, T_CREDIT):
                if ln:
                    return self._bad(f"type {typ} frame with a {ln}-byte body")
            else:
                return self._bad(f"unknown frame type {typ}")
            if end - pos - HDR_SIZE < ln:
                break
            if lens:
                self._post_msgs(mstart, pos, lens)
                lens = None
            body = pos + HDR_SIZE
            pos = body + ln
            self.rpos = pos
            if not self._frame(typ, small, aux, ln, a, b, body):
                return
            alive = self.alive
        if lens:
            self._post_msgs(mstart, pos, lens)
        if self.ack_count:
            self._send_acks()
        if self.torn_down:
            return
        # Keep the partial frame at the front: the buffer always has room for a whole frame.
        if pos == end:
            self.rpos = self.rend = 0
        else:
            if pos:
                rest = end - pos
                rx[:rest] = self.mv[pos:end]  # type: ignore[index]
                pos, end = 0, rest
            self.rpos, self.rend = pos, end
        if self.posted - self.delivered > self.high:
            self.paused = True
            if self.posted - self.delivered <= self.high:  # the Pe caught up meanwhile
                self.paused = False
            self._update_mask()

    def _post_msgs(self, start: int, end: int, lens: list[int]) -> None:
        rx = self.rx
        assert rx is not None
        data = rx[start:end]
        n = end - start
        self.posted += n
        live = self.live
        live[3] += len(lens)
        live[4] += n - HDR_SIZE * len(lens)
        ctx = self.ctx
        _post(ctx.pe, ctx._deliver_msgs, (self, data, lens))

    def _frame(self, typ: int, small: int, aux: int, ln: int, a: int, b: int, body: int) -> bool:
        """Handle one non-message frame; False if the connection was dropped."""
        ctx = self.ctx
        if typ == T_DATA:
            if not self.alive:
                self._bad("producer data before the handshake")
                return False
            st = self._data(a, b, small, ln, body)
            if self.ack_count and st != self.ack_status:
                self._send_acks()
            self.ack_status = st
            self.ack_count += 1
            return True
        if typ == T_ACK:
            if not self.alive or not 0 < a <= len(self.pq):
                self._bad(f"acknowledgement of {a} producer sends ({len(self.pq)} in flight)")
                return False
            pq = self.pq
            if small == _AGAIN:  # stale credits: the data waits for the next one, in flight
                for _ in range(a):
                    self._requeue(pq.popleft())
                return True
            for _ in range(a):
                t = pq.popleft()
                t.status = small
                _post(t.ctx.pe, _complete, t)
            return True
        if typ == T_CREDIT:
            if not self.alive or not b:
                self._bad(f"credit of {b} receives" if self.alive else "credit before the handshake")
                return False
            done = None
            with self.lock:
                r = self.remote.get(a)
                # Unknown: the consumer expired after posting (its credits died with it).
                if r is not None and not self.closed and self._grant_locked(r, b):
                    done = self._kick_locked()
            if done:
                _post_done(done)
            return True
        if typ in (T_CONSUMER_NEW, T_CONSUMER_GONE):
            if not self.alive:
                self._bad("consumer event before the handshake")
                return False
            if typ == T_CONSUMER_NEW:
                with self.lock:
                    known = a in self.remote
                    room = len(self.remote) < MAX_CONSUMERS
                    if not known and room:
                        self.remote[a] = _Remote()
                if not (known or room):
                    self._bad(f"more than {MAX_CONSUMERS} consumers announced")
                    return False
            else:
                with self.lock:
                    gone = self.remote.pop(a, None)
                    waiting = list(gone.waiting) if gone is not None else []
                    if gone is not None:
                        gone.waiting.clear()
                for t in waiting:
                    t.status = _NOT_FOUND
                    t.reason = f"remote consumer {a} expired while the data waited for a receive"
                    _post(t.ctx.pe, _complete, t)
            _post(ctx.pe, ctx._deliver_consumer, (self, a, typ == T_CONSUMER_NEW))
            return True
        if typ == T_HELLO:
            if self.alive or not self.server_side:
                self._bad("unexpected hello")
                return False
            assert self.rx is not None
            name = bytes(self.rx[body:body + ln])
            if a != MAGIC or aux != VERSION:
                self._bad(f"hello with magic {a:#x} version {aux} (expected {MAGIC:#x} version {VERSION})")
                return False
            assert isinstance(ctx, EmuComchServer)
            return ctx._hello(self, name, b)
        if typ == T_WELCOME:
            if self.alive or self.server_side or a != MAGIC:
                self._bad("unexpected welcome")
                return False
            if small:
                assert isinstance(ctx, EmuComchClient)
                if not ctx.refusal_logged:
                    ctx.refusal_logged = True
                    logger.warning("comch: server %s refused the connection (%s); retrying",
                                   self.peer, error_name(small))
                self.die(small, None)
                return False
            self.alive = True
            self.max_send = min(self.max_send, b) if b else self.max_send
            _post(ctx.pe, ctx._deliver_conn, (self, True))
            return True
        return True  # unreachable: types are checked by _parse

    def _data(self, cid: int, pid: int, imm_len: int, ln: int, body: int) -> int:
        """Land producer data in the consumer's next posted buffer; returns the ACK status."""
        c = self.consumers.get(cid)
        if c is None:
            return _NOT_FOUND
        if c.state != _RUNNING:
            return _AGAIN  # starting: no receive posted yet (the producer waits for a credit)
        if imm_len > c.imm_data_len:
            if c.posted:  # the receive stays posted: give the producer side its credit back
                self.send_now(HDR.pack(T_CREDIT, 0, 0, 0, cid, 1))
            return _TOO_BIG
        try:
            t = c.posted.popleft()
        except IndexError:
            return _AGAIN
        n = ln - imm_len
        buf = t.buf
        assert buf is not None and self.mv is not None
        status = _SUCCESS
        if n > buf.head + buf.len - buf.data - buf.data_len:
            status = _TOO_BIG
        elif n:
            try:
                mm = buf.mmap
                assert mm is not None
                dst = _device_view(mm, buf.data + buf.data_len, n, True)
                dst[:] = self.mv[body + imm_len: body + ln]
            except DocaError as exc:
                status = exc.code
        if status == _SUCCESS:
            buf.data_len += n
            t.imm = bytes(self.mv[body: body + imm_len]) if imm_len else b""
            t.producer_id = pid
        t.status = status
        _post(c.pe, _complete, t)
        return status

    def _send_acks(self) -> None:
        st, n = self.ack_status, self.ack_count
        self.ack_count = 0
        self.send_now(HDR.pack(T_ACK, st, 0, 0, n, 0))

    def resume(self) -> None:
        """Read again after the Pe drained the backlog (I/O thread)."""
        if self.paused and self.posted - self.delivered <= self.high:
            self.paused = False
            self._update_mask()

    def delivered_bytes(self, n: int) -> None:
        """The Pe consumed *n* bytes of posted messages (Pe thread)."""
        self.delivered += n
        if self.paused and self.posted - self.delivered <= self.high // 2:
            self.r.call_soon(self.resume)

    def __repr__(self) -> str:
        return f"<EmuComchConnection {self.peer}>"


def _post_done(done: list[EmuComchTaskSend]) -> None:
    """Post the completions of message tasks whose bytes were written (one ctx, one post)."""
    _post(done[0].ctx.pe, _complete_batch, done)


def _complete_batch(tasks: list[EmuComchTaskSend]) -> None:
    """Deliver many completions in one Pe item; the common success path is inlined."""
    i = 0
    try:
        for t in tasks:
            i += 1
            ctx = t.ctx
            if ctx.state == _RUNNING and not t.status:
                t.inflight = False
                ctx.inflight -= 1
                if t.pinned:
                    unpin_bufs(t)
                t.pool.success(t.owner)  # type: ignore[misc]  # configured before start
            else:
                _complete(t)
    finally:
        if i < len(tasks):  # a callback raised: the others complete on the next progress
            _post(tasks[0].ctx.pe, _complete_batch, tasks[i:])


# -- ordered execution -------------------------------------------------------------------------------
# Comch queues are FIFOs: a ctx's tasks do their work (put bytes on the wire, post a receive) in
# submission order, even when the Pe launches them in another order (DOCA_PY_EMU_SHUFFLE). Each
# submission is queued on its ctx; a launched task is marked ready, and the ready tasks at the
# head of the queue run. An entry whose task was failed or flushed at launch is skipped.
_Q_IDLE, _Q_WAIT, _Q_READY = 0, 1, 2


def _drain(ctx: _OrderedCtx) -> None:
    """Run the ready tasks at the head of *ctx*'s queue (inside ``progress()``)."""
    fifo = ctx.fifo
    while fifo:
        if ctx.state != _RUNNING:  # stopped meanwhile: ready tasks are flushed, not run
            while fifo:
                h = fifo.popleft()
                if h.q == _Q_READY:
                    h.q = _Q_IDLE
                    complete_task(h)
            return
        h = fifo[0]
        q = h.q
        if q == _Q_READY:
            fifo.popleft()
            h.q = _Q_IDLE
            h._run()
        elif q == _Q_WAIT and h.inflight:  # its launch is still queued on the Pe
            if not ctx.drain_posted:
                ctx.drain_posted = True
                ctx.pe.post(_drain_later, ctx)  # type: ignore[union-attr]
            return
        else:
            fifo.popleft()  # failed or flushed at launch, or an older entry of a task that ran


def _drain_later(ctx: _OrderedCtx) -> None:
    ctx.drain_posted = False
    _drain(ctx)


class _OrderedTask(EmuTask):
    """A comch task whose work (:meth:`_run`) happens in its ctx's submission order."""

    __slots__ = ("q",)

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.q = _Q_IDLE

    def _queue(self) -> None:
        """End of ``_check_submit``: the submission is accepted, take a place in the queue."""
        self.q = _Q_WAIT
        ctx: _OrderedCtx = self.ctx  # type: ignore[assignment]
        ctx.fifo.append(self)

    def _begin(self) -> None:
        ctx: _OrderedCtx = self.ctx  # type: ignore[assignment]
        fifo = ctx.fifo
        if fifo and fifo[0] is self:  # in order (always, without shuffling): run now
            fifo.popleft()
            self.q = _Q_IDLE
            self._run()
            if fifo:
                h = fifo[0]
                if h.q != _Q_WAIT or not h.inflight:  # else its own launch comes next
                    _drain(ctx)
        else:
            self.q = _Q_READY
            _drain(ctx)

    def _run(self) -> None:
        """Do the work; complete now (on failure) or later."""
        raise NotImplementedError


# -- tasks ----------------------------------------------------------------------------------------
class EmuComchTaskSend(_OrderedTask):
    """``doca_comch_task_send``: one control message, copied at allocation, queued on its
    connection when the task runs (in ``progress``)."""

    __slots__ = ("conn", "frame", "end")
    kind = "comch_send"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.conn: EmuComchConnection | None = None
        self.frame = b""
        self.end = 0

    def _check_submit(self) -> None:
        if self.conn is None:
            raise DocaBadState("the send task has no connection")
        self.q = _Q_WAIT  # _queue(), inlined: this is the per-message path
        self.ctx.fifo.append(self)  # type: ignore[attr-defined]

    def _run(self) -> None:
        conn = self.conn
        assert conn is not None
        frame = self.frame
        with conn.lock:
            ok = not conn.closed
            if ok:
                conn.out += frame
                self.end = conn.enq = conn.enq + len(frame)
                conn.wq.append(self)
                conn.nmsgs += 1
                conn.nframe_bytes += len(frame)
        if ok:
            sender: _Sender = self.ctx  # type: ignore[assignment]
            sender.dirty.add(conn)
            if not sender.flush_posted:
                sender.flush_posted = True
                sender.pe.post(_flush_ctx, sender)  # type: ignore[union-attr]
        else:
            self.status = _NOT_CONNECTED
            self.reason = "the connection is closed"
            _complete_soft(self)

    def get_connection(self) -> EmuComchConnection | None:
        return self.conn

    def get_msg(self) -> bytes:
        return self.frame[HDR_SIZE:]


class EmuComchConsumerTaskPostRecv(_OrderedTask):
    """``doca_comch_consumer_task_post_recv``: a buffer offered to the peer's producers.

    Queued on the consumer when the task runs (in ``progress``), which also announces it
    to the peer (a credit)."""

    __slots__ = ("buf", "imm", "producer_id")
    kind = "comch_consumer_post_recv"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.buf: EmuBuf | None = None
        self.imm = b""
        self.producer_id = 0

    def _check_submit(self) -> None:
        buf = self.buf
        if buf is None or not buf.refcount or buf.mmap is not self.ctx.mmap:  # type: ignore[attr-defined]
            raise DocaInvalidValue("post-recv buffer must be a live buffer of the consumer's mmap")
        self._queue()

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return (self.buf,)

    def _run(self) -> None:
        ctx: EmuComchConsumer = self.ctx  # type: ignore[assignment]
        buf = self.buf
        assert buf is not None and buf.mmap is not None
        if not reachable(buf.mmap, ctx.dev_key):
            self.status = _NOT_PERMITTED
            self.reason = (f"{buf.mmap!r} has no device {ctx.dev_key} added (Mmap.add_dev): the comch "
                           f"device cannot write into it")
            complete_task(self)
            return
        self.imm = b""
        self.producer_id = 0
        ctx.posted.append(self)  # before its credit leaves: data never overtakes the receive
        ctx.unsent += 1
        if not ctx.credit_posted:
            ctx.credit_posted = True
            ctx.pe.post(_flush_credits, ctx)  # type: ignore[union-attr]

    def set_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.buf = buf


class EmuComchProducerTaskSend(_OrderedTask):
    """``doca_comch_producer_task_send``: the buffer's data into a remote consumer's buffer.

    ``submit`` spends one credit of the remote consumer (``DocaAgain`` if it has none: no
    receive posted); the source is read when the task runs, in ``progress``."""

    __slots__ = ("buf", "imm", "consumer_id", "credit")
    #: Faults of this task are drawn at submit (``AGAIN`` is a submit result in DOCA 3.x), so
    #: the launch-time draw of :class:`EmuTask` (``kind``) stays off.
    kind = ""
    submit_fault_kind = "comch_producer_send"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.buf: EmuBuf | None = None
        self.imm = b""
        self.consumer_id = 0
        self.credit: _Remote | None = None  # the credit taken at submit, until the task runs

    def _check_submit(self) -> None:
        if strict.FAULTS:
            code = strict.draw(self.submit_fault_kind)
            if code:
                raise lookup(code)(f"producer send refused: fault injected by DOCA_PY_EMU_FAULTS "
                                   f"(seed {strict.SEED})")
        conn: EmuComchConnection = self.ctx.conn  # type: ignore[attr-defined]
        cid = self.consumer_id
        with conn.lock:
            r = conn.remote.get(cid)
            if r is not None:  # unknown ids go out and fail at the peer (NOT_FOUND)
                if r.credits <= 0:
                    raise DocaAgain(f"remote consumer {cid} has no receive posted; submit again later")
                r.credits -= 1
            self.credit = r
        self._queue()

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return (self.buf,)

    def _run(self) -> None:
        ctx: EmuComchProducer = self.ctx  # type: ignore[assignment]
        conn = ctx.conn
        r, self.credit = self.credit, None
        buf = self.buf
        st = _SUCCESS
        if buf is None or buf.next is not None or buf.mmap is None or not buf.refcount:
            st, self.reason = _INVALID, "producer send needs one live, unchained source buffer"
        elif buf.data_len > MAX_BUF_SIZE:
            st, self.reason = _INVALID, f"producer buffer of {buf.data_len} bytes exceeds {MAX_BUF_SIZE}"
        elif not reachable(buf.mmap, ctx.dev_key):
            st, self.reason = _NOT_PERMITTED, (f"{buf.mmap!r} has no device {ctx.dev_key} added "
                                               f"(Mmap.add_dev): the comch device cannot read it")
        if st:
            if r is not None:
                conn.refund(r)
            self.status = st
            complete_task(self)
            return
        with conn.lock:
            if conn.closed:
                st = _NOT_CONNECTED
            else:
                st = conn._queue_data_locked(self)
                if st and r is not None:
                    conn._grant_locked(r, 1)  # the credit was not used
        if st == _NOT_CONNECTED:
            self.status, self.reason = st, "the connection is closed"
            _complete_soft(self)
            return
        ctx.dirty.add(conn)
        if not ctx.flush_posted:
            ctx.flush_posted = True
            ctx.pe.post(_flush_ctx, ctx)  # type: ignore[union-attr]
        if st:
            self.status = st
            complete_task(self)

    def set_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.buf = buf

    def set_imm_data(self, imm: bytes) -> None:
        if len(imm) > MAX_IMM_DATA_LEN:
            raise DocaInvalidValue(f"immediate data is at most {MAX_IMM_DATA_LEN} bytes, got {len(imm)}")
        self.imm = bytes(imm)

    def set_consumer_id(self, consumer_id: int) -> None:
        if not 0 < consumer_id <= 0xFFFFFFFF:
            raise DocaInvalidValue(f"consumer id {consumer_id} is not a 32-bit id")
        self.consumer_id = consumer_id


# -- contexts -------------------------------------------------------------------------------------
class _OrderedCtx(EmuCtx):
    """A ctx whose tasks work in submission order (see :func:`_drain`)."""

    def __init__(self) -> None:
        super().__init__()
        self.fifo: deque[_OrderedTask] = deque()
        self.drain_posted = False


class _Sender(_OrderedCtx):
    """A ctx whose tasks queue frames on connections and flush them once per batch."""

    def __init__(self) -> None:
        super().__init__()
        self.dirty: set[EmuComchConnection] = set()
        self.flush_posted = False


def _no_wrap(conn: EmuComchConnection) -> object:
    return conn


class _Endpoint(_Sender):
    """What the server and the client share: send tasks, messages and consumer events."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.name_raw = _check_name(name)
        self.send = TaskPool(self, EmuComchTaskSend)
        self.max_msg_size = MAX_MSG_SIZE
        self.recv_queue_size = DEFAULT_RECV_QUEUE_SIZE
        self.r = reactor()
        self.wrap: Callable[[EmuComchConnection], object] = _no_wrap
        self.cbs: dict[str, Callable[..., None] | None] = dict.fromkeys(
            ("msg_recv", "connect", "disconnect", "new_consumer", "expired_consumer"))

    # -- configuration ---------------------------------------------------------------------------
    def set_max_msg_size(self, value: int) -> None:
        self._configurable("set_max_msg_size")
        if not 0 < value <= MAX_MSG_SIZE:
            raise DocaInvalidValue(f"max_msg_size must be 1..{MAX_MSG_SIZE}, got {value}")
        self.max_msg_size = value

    def get_max_msg_size(self) -> int:
        return self.max_msg_size

    def set_recv_queue_size(self, value: int) -> None:
        self._configurable("set_recv_queue_size")
        if not 0 < value <= MAX_RECV_QUEUE_SIZE:
            raise DocaInvalidValue(f"recv_queue_size must be 1..{MAX_RECV_QUEUE_SIZE}, got {value}")
        self.recv_queue_size = value

    def get_recv_queue_size(self) -> int:
        return self.recv_queue_size

    def set_wrap(self, wrap: Callable[[Any], object]) -> None:
        self.wrap = wrap

    def set_event_cb(self, kind: str, cb: Callable[..., None] | None) -> None:
        self._configurable(f"register the {kind} event")
        if kind not in self.cbs:
            raise DocaInvalidValue(f"unknown comch event {kind!r}")
        self.cbs[kind] = cb

    # -- tasks -----------------------------------------------------------------------------------
    def task_send_alloc_init(self, conn: Any, data: Any) -> EmuComchTaskSend:
        if conn.__class__ is not EmuComchConnection or conn.ctx is not self:
            raise DocaInvalidValue("the connection does not belong to this comch ctx")
        if data.__class__ is bytes:
            n = len(data)
        else:
            with memoryview(data) as mv:
                data = mv.tobytes()
            n = len(data)
        if n > conn.max_send:
            raise DocaInvalidValue(f"message of {n} bytes exceeds the connection's max_msg_size {conn.max_send}")
        if conn.closed or not conn.alive:
            raise DocaNotConnected("the connection is closed")
        t: EmuComchTaskSend = self.send.alloc()  # type: ignore[assignment]
        t.conn = conn
        hdr = _MSG_HDRS.get(n)
        if hdr is None:
            hdr = _MSG_HDRS[n] = HDR.pack(T_MSG, 0, 0, n, 0, 0)
        t.frame = hdr + data
        return t

    # -- events (Pe thread) -----------------------------------------------------------------------
    def _owner(self, conn: EmuComchConnection) -> object:
        o = conn.owner
        if o is None:
            o = conn.owner = self.wrap(conn)
        return o

    def _deliver_msgs(self, arg: tuple[EmuComchConnection, bytearray, list[int]]) -> None:
        conn, data, lens = arg
        done = 0
        cb = self.cbs["msg_recv"]
        try:
            if cb is None or self.state != _RUNNING or self.destroyed:
                done = len(data)
                return
            owner = self._owner(conn)
            pos, i, count = 0, 0, len(lens)
            with memoryview(data) as mv:
                try:
                    for ln in lens:
                        pos += HDR_SIZE
                        m = mv[pos:pos + ln]
                        pos += ln
                        i += 1
                        try:
                            cb(m, owner)
                        finally:
                            m.release()
                finally:
                    done = pos
                    if i < count:  # a callback raised: the rest is delivered on the next progress
                        self.pe.post(self._deliver_msgs, (conn, data[pos:], lens[i:]))  # type: ignore[union-attr]
        finally:
            conn.delivered_bytes(done)

    def _deliver_consumer(self, arg: tuple[EmuComchConnection, int, bool]) -> None:
        conn, cid, new = arg
        cb = self.cbs["new_consumer" if new else "expired_consumer"]
        if cb is not None and not self.destroyed and self.state in (_RUNNING, _STOPPING):
            cb(self._owner(conn), cid)

    def _deliver_conn(self, arg: tuple[EmuComchConnection, bool]) -> None:
        """Connection up or down (the server's status callbacks; the client's state)."""
        raise NotImplementedError

    def _conn_gone(self, conn: EmuComchConnection) -> None:
        """A connection was torn down (I/O thread)."""
        raise NotImplementedError


class EmuComchServer(_Endpoint):
    """Emulated ``doca_comch_server``: listens for clients of one host function."""

    def __init__(self, dev: Any, rep: Any, name: str) -> None:
        super().__init__(name)
        info = dev.devinfo
        if not cap_server_is_supported(info):
            raise DocaNotSupported(f"device {info.pci_addr_str()} cannot run a comch server "
                                   "(servers run on the DPU device, which lists host representors)")
        self.dev, self.rep = dev, rep
        self.key = rep.devinfo_rep.pci_addr_str()
        self.path = ""
        self.name_lock: NameLock | None = None
        self.lsock: socket.socket | None = None
        self.lmask = 0
        self.conns: set[EmuComchConnection] = set()  # accepted and not torn down (I/O thread)

    def _on_start(self) -> None:
        path = socket_path(self.key, self.name)
        lock = NameLock(path, self.name)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC)
        try:
            try:
                os.unlink(path)  # a dead server's socket (we hold the name lock)
            except FileNotFoundError:
                pass
            s.bind(path)
            s.listen(128)
        except OSError as exc:
            s.close()
            lock.release(path)
            raise DocaOperatingSystem(f"cannot listen on {path}: {exc.strerror}") from None
        self.path, self.name_lock, self.lsock = path, lock, s
        self.r.call_soon(lambda: self._listen(s))

    def _listen(self, s: socket.socket) -> None:
        if self.lsock is s:
            self.lmask = self.r.set_mask(s, 0, 1, lambda mask: self._accept(s))

    def _accept(self, s: socket.socket) -> None:
        while True:
            try:
                c, _ = s.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                logger.warning("comch server %r: accept failed: %s", self.name, exc.strerror)
                return
            try:
                pid = _PEERCRED.unpack(c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size))[0]
            except OSError:
                pid = 0
            conn = EmuComchConnection(self, True, f"{self.name!r}<-pid {pid}")
            self.conns.add(conn)
            conn.attach(c)

    def _hello(self, conn: EmuComchConnection, name: bytes, peer_max: int) -> bool:
        """A client introduced itself (I/O thread); answer and report the connection."""
        if name != self.name_raw:
            conn._bad(f"hello for server {name!r}, this is {self.name_raw!r}")
            return False
        status = _SUCCESS
        if self.state != _RUNNING:
            status = _BAD_STATE
        elif sum(1 for c in self.conns if c.alive) >= MAX_CLIENTS:
            status = _FULL
        conn.send_now(HDR.pack(T_WELCOME, status, VERSION, 0, MAGIC, self.max_msg_size))
        if status:
            logger.info("comch server %r: refused %s (%s)", self.name, conn.peer, error_name(status))
            conn.die(status, None)
            return False
        conn.alive = True
        if peer_max:
            conn.max_send = min(conn.max_send, peer_max)
        _post(self.pe, self._deliver_conn, (conn, True))
        return True

    def _deliver_conn(self, arg: tuple[EmuComchConnection, bool]) -> None:
        conn, up = arg
        cb = self.cbs["connect" if up else "disconnect"]
        if cb is not None and not self.destroyed:
            cb(self._owner(conn), True)

    def _conn_gone(self, conn: EmuComchConnection) -> None:
        self.conns.discard(conn)
        if conn.alive:
            _post(self.pe, self._deliver_conn, (conn, False))

    def _unlisten(self, s: socket.socket) -> None:
        if self.lmask:
            try:
                self.r.sel.unregister(s)
            except (KeyError, ValueError):
                pass
            self.lmask = 0
        s.close()

    def _on_stop(self) -> None:
        s, self.lsock = self.lsock, None
        if self.name_lock is not None:
            self.name_lock.release(self.path)
            self.name_lock = None
        if s is not None:
            self.r.call_soon(lambda: self._unlisten(s))
        for c in list(self.conns):
            c.close_local()

    def disconnect(self, conn: Any) -> None:
        if not isinstance(conn, EmuComchConnection) or conn.ctx is not self:
            raise DocaInvalidValue("the connection does not belong to this server")
        if conn.users:
            raise DocaInUse(f"{len(conn.users)} consumer(s)/producer(s) still use this connection; "
                            "destroy them first")
        if conn.closed:
            raise DocaNotConnected("the connection is already closed")
        conn.close_local()

    def get_connections(self) -> list[EmuComchConnection]:
        return [c for c in list(self.conns) if c.alive and not c.closed]


class EmuComchClient(_Endpoint):
    """Emulated ``doca_comch_client``: connects to the named server of its host function."""

    def __init__(self, dev: Any, name: str) -> None:
        super().__init__(name)
        info = dev.devinfo
        if not cap_client_is_supported(info):
            raise DocaNotSupported(f"device {info.pci_addr_str()} cannot run a comch client "
                                   "(clients run on the host device)")
        self.dev = dev
        self.key = info.pci_addr_str()
        self.path = ""
        self.conn: EmuComchConnection | None = None
        self.backoff = 0.002
        self.refusal_logged = False

    def start(self) -> int:
        if self.pe is None:
            raise DocaNotConnected("connect the ctx to a Pe before start")
        if self.state != _IDLE:
            raise DocaBadState(f"ctx is in state {self.state}, not IDLE")
        self.path = socket_path(self.key, self.name)
        for pool in self.pools:
            pool.build()
        self.backoff = 0.002
        self.refusal_logged = False
        self._set_state(_STARTING)
        self.r.call_soon(self._dial)
        return self.state

    def _dial(self) -> None:
        """Try to reach the server (I/O thread); retried with back-off while STARTING."""
        if self.state != _STARTING or (self.conn is not None and not self.conn.torn_down):
            return
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC)
        try:
            s.connect(self.path)
        except OSError as exc:
            s.close()
            if not is_refused(exc):
                logger.warning("comch client %r: cannot connect to %s: %s", self.name, self.path, exc.strerror)
            self._retry()
            return
        conn = EmuComchConnection(self, False, f"{self.name!r}->{self.path}")
        self.conn = conn
        conn.attach(s)
        conn.send_now(HDR.pack(T_HELLO, 0, VERSION, len(self.name_raw), MAGIC, self.max_msg_size) + self.name_raw)

    def _retry(self) -> None:
        delay, self.backoff = self.backoff, min(self.backoff * 2, 0.1)
        self.r.call_later(delay, self._dial)

    def _deliver_conn(self, arg: tuple[EmuComchConnection, bool]) -> None:
        conn, up = arg
        if up and self.state == _STARTING and self.conn is conn and not conn.closed:
            self._set_state(_RUNNING)

    def _conn_gone(self, conn: EmuComchConnection) -> None:
        if self.conn is not conn:
            return
        if not conn.alive:
            if self.state == _STARTING:
                self._retry()
            return
        _post(self.pe, self._lost, conn)

    def _lost(self, conn: EmuComchConnection) -> None:
        """The server went away: STOPPING, then IDLE once every task is freed."""
        # Also while STARTING: the drop may overtake the event that would have made it RUNNING.
        if self.conn is not conn or self.state not in (_RUNNING, _STARTING):
            return
        self._set_state(_STOPPING)
        self._maybe_idle()

    def _on_stop(self) -> None:
        self.r.call_soon(self._close_conn)

    def _close_conn(self) -> None:
        c = self.conn
        if c is not None:
            c.close_local()

    def get_connection(self) -> EmuComchConnection:
        c = self.conn
        if self.state != _RUNNING or c is None or not c.alive:
            raise DocaBadState("the client has no connection until its ctx is RUNNING")
        return c


class EmuComchConsumer(_OrderedCtx):
    """Emulated ``doca_comch_consumer``: receives producer data into its mmap's buffers."""

    def __init__(self, conn: Any, mmap: MmapHandle) -> None:
        super().__init__()
        if not isinstance(conn, EmuComchConnection):
            raise DocaInvalidValue("not a comch connection")
        if not isinstance(mmap, EmuMmap):
            raise DocaInvalidValue("not an emulated mmap")
        if conn.closed or not conn.alive:
            raise DocaNotConnected("the comch connection is closed")
        if len(conn.consumers) >= MAX_CONSUMERS:
            raise DocaInvalidValue(f"a connection has at most {MAX_CONSUMERS} consumers")
        self.conn = conn
        conn.users.add(self)
        self.mmap = mmap
        self.id = next(_ids)
        self.imm_data_len = MAX_IMM_DATA_LEN
        self.post_recv = TaskPool(self, EmuComchConsumerTaskPostRecv)
        self.posted: deque[EmuComchConsumerTaskPostRecv] = deque()
        self.unsent = 0  # receives posted and not yet announced to the peer
        self.credit_posted = False
        self.dev_key = dev_key(conn.ctx.dev)  # type: ignore[attr-defined]

    def get_id(self) -> int:
        return self.id

    def destroy(self) -> None:
        super().destroy()
        self.conn.users.discard(self)

    def set_imm_data_len(self, n: int) -> None:
        self._configurable("set_imm_data_len")
        if not 0 <= n <= MAX_IMM_DATA_LEN:
            raise DocaInvalidValue(f"imm_data_len must be 0..{MAX_IMM_DATA_LEN}, got {n}")
        self.imm_data_len = n

    def get_imm_data_len(self) -> int:
        return self.imm_data_len

    def start(self) -> int:
        if self.pe is None:
            raise DocaNotConnected("connect the ctx to a Pe before start")
        if self.state != _IDLE:
            raise DocaBadState(f"ctx is in state {self.state}, not IDLE")
        conn = self.conn
        if conn.closed:
            raise DocaNotConnected("the comch connection is closed")
        for pool in self.pools:
            pool.build()
        self.unsent = 0
        conn.consumers[self.id] = self
        # Announced at once (the peer's new_consumer); receives are credited as they are posted.
        if not conn.send_now(HDR.pack(T_CONSUMER_NEW, 0, 0, 0, self.id, 0)):
            conn.consumers.pop(self.id, None)
            raise DocaNotConnected("the comch connection is closed")
        self._set_state(_STARTING)  # DOCA: start returns IN_PROGRESS
        self.pe.post(self._started, None)
        return self.state

    def _started(self, _: object) -> None:
        if self.state == _STARTING:
            self._set_state(_RUNNING)

    def _on_stop(self) -> None:
        conn = self.conn
        self.unsent = 0
        if conn.consumers.pop(self.id, None) is not None:
            conn.send_now(HDR.pack(T_CONSUMER_GONE, 0, 0, 0, self.id, 0))
        pe = self.pe
        assert pe is not None
        while True:
            try:
                t = self.posted.popleft()
            except IndexError:
                break
            pe.post(_complete, t)  # flushed: the ctx is stopping

    def _conn_lost(self, _: object) -> None:
        if self.state not in (_RUNNING, _STARTING) or self.destroyed:
            return
        # Posted receives fail with CONNECTION_RESET while the ctx still runs; whatever the
        # callbacks re-post is flushed by the stop that follows.
        drained = []
        while self.posted:
            drained.append(self.posted.popleft())
        for t in drained:
            t.status = _RESET
            _complete_soft(t)
        if self.state in (_RUNNING, _STARTING):
            self._set_state(_STOPPING)
            self._on_stop()
            self._maybe_idle()

    def task_post_recv_alloc_init(self, buf: BufHandle) -> EmuComchConsumerTaskPostRecv:
        if not isinstance(buf, EmuBuf) or buf.mmap is not self.mmap:
            raise DocaInvalidValue("the receive buffer must belong to the consumer's mmap")
        if buf.next is not None:
            raise DocaInvalidValue(f"consumer buffers are lists of at most {MAX_BUF_LIST_LEN} element")
        t = self.post_recv.alloc()
        assert isinstance(t, EmuComchConsumerTaskPostRecv)
        t.buf = buf
        t.imm = b""
        t.producer_id = 0
        return t


class EmuComchProducer(_Sender):
    """Emulated ``doca_comch_producer``: sends buffers to the peer's consumers."""

    def __init__(self, conn: Any) -> None:
        super().__init__()
        if not isinstance(conn, EmuComchConnection):
            raise DocaInvalidValue("not a comch connection")
        if conn.closed or not conn.alive:
            raise DocaNotConnected("the comch connection is closed")
        if len(conn.producers) >= MAX_PRODUCERS:
            raise DocaInvalidValue(f"a connection has at most {MAX_PRODUCERS} producers")
        self.conn = conn
        conn.users.add(self)
        self.id = next(_ids)
        self.dev_key = dev_key(conn.ctx.dev)  # type: ignore[attr-defined]
        self.tasks: list[EmuComchProducerTaskSend] = []  # every descriptor of the pool
        self.send = TaskPool(self, self._new_task)

    def _new_task(self, pool: TaskPool[EmuTask]) -> EmuComchProducerTaskSend:
        t = EmuComchProducerTaskSend(pool)
        self.tasks.append(t)
        return t

    def destroy(self) -> None:
        super().destroy()
        self.conn.users.discard(self)

    def get_id(self) -> int:
        return self.id

    def _on_start(self) -> None:
        conn = self.conn
        with conn.lock:
            if conn.closed:
                raise DocaNotConnected("the comch connection is closed")
            conn.producers.add(self)

    def _on_stop(self) -> None:
        """Flush the tasks waiting for a credit; give back the credits of tasks that will be
        flushed before they ran."""
        conn = self.conn
        mine: list[EmuComchProducerTaskSend] = []
        done = None
        with conn.lock:
            conn.producers.discard(self)
            for r in conn.remote.values():
                w = r.waiting
                for _ in range(len(w) if w else 0):
                    t = w.popleft()
                    (mine if t.ctx is self else w).append(t)
            queued = False
            for t in self.tasks:
                held = t.credit
                if held is not None:
                    t.credit = None
                    if not conn.closed:
                        queued |= conn._grant_locked(held, 1)
            if queued:
                done = conn._kick_locked()
        if done:
            _post_done(done)
        pe = self.pe
        assert pe is not None
        for t in mine:
            pe.post(_complete, t)  # flushed: the ctx is stopping

    def _conn_lost(self, _: object) -> None:
        if self.state == _RUNNING and not self.destroyed:
            self._set_state(_STOPPING)
            self._on_stop()
            self._maybe_idle()

    def task_send_alloc_init(self, buf: BufHandle, imm: bytes, consumer_id: int) -> EmuComchProducerTaskSend:
        if not isinstance(buf, EmuBuf):
            raise DocaInvalidValue("not an emulated buffer")
        if len(imm) > MAX_IMM_DATA_LEN:
            raise DocaInvalidValue(f"immediate data is at most {MAX_IMM_DATA_LEN} bytes, got {len(imm)}")
        if not 0 < consumer_id <= 0xFFFFFFFF:
            raise DocaInvalidValue(f"consumer id {consumer_id} is not a 32-bit id")
        t = self.send.alloc()
        assert isinstance(t, EmuComchProducerTaskSend)
        t.buf, t.imm, t.consumer_id = buf, bytes(imm), consumer_id
        return t


# -- factories and capabilities ---------------------------------------------------------------------
def server_create(dev: Any, rep: Any, name: str) -> EmuComchServer:
    """``doca_comch_server_create``."""
    return EmuComchServer(dev, rep, name)


def client_create(dev: Any, name: str) -> EmuComchClient:
    """``doca_comch_client_create``."""
    return EmuComchClient(dev, name)


def consumer_create(conn: Any, mmap: MmapHandle) -> EmuComchConsumer:
    """``doca_comch_consumer_create``."""
    return EmuComchConsumer(conn, mmap)


def producer_create(conn: Any) -> EmuComchProducer:
    """``doca_comch_producer_create``."""
    return EmuComchProducer(conn)


def _has_reps(devinfo: DevInfoHandle) -> bool:
    return isinstance(devinfo, EmuDevInfo) and bool(devinfo.spec.reps)


def cap_server_is_supported(devinfo: DevInfoHandle) -> bool:
    return _has_reps(devinfo)


def cap_client_is_supported(devinfo: DevInfoHandle) -> bool:
    return not _has_reps(devinfo)


def cap_get_max_name_len(devinfo: DevInfoHandle) -> int:
    return MAX_NAME_LEN


def cap_get_max_msg_size(devinfo: DevInfoHandle) -> int:
    return MAX_MSG_SIZE


def cap_get_max_recv_queue_size(devinfo: DevInfoHandle) -> int:
    return MAX_RECV_QUEUE_SIZE


def cap_get_max_clients(devinfo: DevInfoHandle) -> int:
    return MAX_CLIENTS


def cap_get_max_send_tasks(devinfo: DevInfoHandle) -> int:
    return MAX_SEND_TASKS


def consumer_cap_is_supported(devinfo: DevInfoHandle) -> bool:
    return True


def consumer_cap_get_max_num_tasks(devinfo: DevInfoHandle) -> int:
    return MAX_NUM_TASKS


def consumer_cap_get_max_buf_size(devinfo: DevInfoHandle) -> int:
    return MAX_BUF_SIZE


def consumer_cap_get_max_buf_list_len(devinfo: DevInfoHandle) -> int:
    return MAX_BUF_LIST_LEN


def consumer_cap_get_max_consumers(devinfo: DevInfoHandle) -> int:
    return MAX_CONSUMERS


def consumer_cap_get_max_imm_data_len(devinfo: DevInfoHandle) -> int:
    return MAX_IMM_DATA_LEN


def producer_cap_is_supported(devinfo: DevInfoHandle) -> bool:
    return True


def producer_cap_get_max_num_tasks(devinfo: DevInfoHandle) -> int:
    return MAX_NUM_TASKS


def producer_cap_get_max_buf_size(devinfo: DevInfoHandle) -> int:
    return MAX_BUF_SIZE


def producer_cap_get_max_buf_list_len(devinfo: DevInfoHandle) -> int:
    return MAX_BUF_LIST_LEN


def producer_cap_get_max_producers(devinfo: DevInfoHandle) -> int:
    return MAX_PRODUCERS
