"""The emulated ``doca_rdma_connection``: its send queue, streams and retry window."""

from __future__ import annotations

from typing import Any, Protocol
import functools
import os
import secrets
import threading
from collections import deque
from collections.abc import Callable

from ...errors import (
    DocaBadState,
    DocaError,
    DocaInvalidValue,
    DocaNotSupported,
    ErrorCode,
)
from .. import export as ex
from .. import version as emu_version
from ..mmap import EmuMmap
from ..pe import QUIET, Lane
from ..transport.reactor import reactor
from ..transport.stream import Stream
from .config import (
    C_BROKEN, C_CLOSED, C_CONNECTING, C_ESTABLISHED, C_NEW, C_REQUESTED, T_DISC, T_MAP, T_PING, ABORTED, INVALID,
    IO_FAILED, RESET, cfg, monotonic, host_id, rnr_window,
)
from .segments import Fail
from .shm import RingOwner, ShmRx, ShmTx
from .work import Work
from .wire import REPLY, REPLY_MAGIC, VERSION, put_frame
from . import shm


#: DOCA RDMA connection objects (several connections per ctx, RDMA-CM, connection callbacks) exist from 3.0.
CONNECTIONS_SINCE = (3, 0)


def need_connections(what: str) -> DocaNotSupported:
    """The error for *what* where the presented DOCA (2.6) has one implicit connection per rdma ctx, as the
    native backend words it on a 2.6 runtime."""
    return DocaNotSupported(f"{what} needs DOCA RDMA connection objects (DOCA 3.0+); DOCA "
                            f"{emu_version.VERSION[0]}.{emu_version.VERSION[1]}, the version the emulator presents "
                            "(DOCA_PY_EMU_VERSION), has one implicit connection per rdma ctx "
                            "(doca_rdma_export/doca_rdma_connect without a connection)")

class ConnectionOwner(RingOwner, Protocol):
    """The ctx as its connections, and through them the serving side (:mod:`.serve`), see it
    (:class:`.ctx.EmuRdma` is one). A connection given as ``Any`` is an :class:`EmuRdmaConnection`."""

    @property
    def lock(self) -> threading.Lock: ...
    @property
    def conns(self) -> list[EmuRdmaConnection]: ...
    @property
    def epoch(self) -> int: ...
    @property
    def perms(self) -> int: ...
    @property
    def retry_window(self) -> float: ...
    @property
    def rnr_retry(self) -> int: ...
    @property
    def stalled(self) -> deque[Stream]: ...
    @property
    def dev(self) -> object: ...
    def dial(self, conn: Any, addr: tuple[str, int], peer_key: bytes, unix: str = "") -> None: ...
    def window_expired(self, arg: tuple[Any, int]) -> None: ...


class EmuRdmaConnection:
    """Emulated ``doca_rdma_connection``."""

    def __init__(self, ctx: ConnectionOwner, conn_id: int) -> None:
        self.ctx = ctx
        self.id = conn_id
        self.key = secrets.token_bytes(16)
        self.owner: object = None  # the public RdmaConnection
        self.state = C_NEW
        self.peer_key: bytes | None = None
        self.peer_host = b""
        self.peer_pid = 0
        self.peer_perms = 0
        self.peer_rnr = 0.0
        self.peer_addr: tuple[str, int] | None = None
        self.same_host = False
        self.req: Stream | None = None  # we dialed: our requests, their responses
        self.srv: Stream | None = None  # they dialed: their requests, our responses
        self.cm_sock: Stream | None = None  # CM request stream (client: to the server; server: from the client)
        self.cm_addr: tuple[int, str, int] | None = None
        self.pending: deque[Work] = deque()  # requests awaiting responses, in order (under req.lock)
        self.map_ids: dict[ex.Blob, int] = {}
        #: The blob :meth:`map_id` last answered for and its id: a write's hot path checks it by identity
        #: (no hash of the blob per task).
        self.last_blob: ex.Blob | None = None
        self.last_mid = 0
        self.blob = b""
        self.joined = False  # connect() was called (export/connect flow)
        self.epoch = ctx.epoch
        self.sq = Fifo(ctx, self.run_sq)  # submitted tasks, in order, until they start (Pe thread)
        self.err = RESET  # status of tasks started after the connection broke
        self.err_reason = "the connection is down"
        self.window_armed = False  # a connect-window timer runs for tasks waiting on the peer
        self.since = 0.0  # when :attr:`pending` last became non-empty (retry window)
        self.rt_armed = False  # a retry-window timer runs (set while :attr:`pending` is non-empty)
        #: Guards :attr:`rt_armed`: the Pe thread arms the timer after its work is counted (pending, the
        #: ring's busy), the I/O thread's timer disarms only after finding no work, both under it.
        self.rt_lock = threading.Lock()
        # Same host: the shared-memory rings of the receive-consuming requests (:mod:`.shm`) and the
        # peer Pe's eventfd, their doorbell. None/-1 over TCP.
        self.tx: ShmTx | None = None
        self.rx: ShmRx | None = None
        self.peer_bell = -1

    # -- public verbs ---------------------------------------------------------------------------
    def get_id(self) -> int:
        # DOCA 2.6 has no connection ids: its one implicit connection is number 0 (as the native backend says).
        return self.id if emu_version.VERSION >= CONNECTIONS_SINCE else 0

    def get_addr(self) -> tuple[int, str, int] | None:
        return self.cm_addr

    def accept(self, private_data: bytes | None) -> None:
        """Accept a pending CM request (server side)."""
        if emu_version.VERSION < CONNECTIONS_SINCE:
            raise need_connections("doca_rdma_connection_accept")
        ctx = self.ctx
        if self.state != C_REQUESTED or self.peer_key is None or self.peer_addr is None:
            raise DocaBadState("accept: the connection is not a pending connection request")
        if private_data is not None and len(private_data) > 255:
            raise DocaInvalidValue("private data is at most 255 bytes")
        cm = self.cm_sock
        try:
            ctx.dial(self, self.peer_addr, self.peer_key)
        except DocaError:
            ctx.break_connection(self, ABORTED)
            raise
        if cm is not None:
            cm.r.call(lambda: send_reply_and_close(cm, 0, ctx))

    def reject(self) -> None:
        """Reject a pending CM request (server side)."""
        if emu_version.VERSION < CONNECTIONS_SINCE:
            raise need_connections("doca_rdma_connection_reject")
        if self.state != C_REQUESTED:
            raise DocaBadState("reject: the connection is not a pending connection request")
        cm = self.cm_sock
        ctx = self.ctx
        with ctx.lock:
            self.state = C_CLOSED
            self.err, self.err_reason = ABORTED, "the connection request was rejected"
            if self in ctx.conns:
                ctx.conns.remove(self)
        if cm is not None:
            cm.r.call(lambda: send_reply_and_close(cm, ABORTED, ctx))
        if self.sq.tasks and ctx.pe is not None:
            ctx.pe.post(fifo_retry, self.sq)  # tasks waiting on the request fail

    def disconnect(self) -> None:
        """Tear the connection down (the peer sees its disconnection callback) and free its slot.

        A connection that already failed (its peer left, its tasks failed, the connect window
        ended) keeps its slot until it is disconnected, as in DOCA, whose samples call
        ``doca_rdma_connection_disconnect`` from the disconnection callback: disconnecting it only
        frees the slot. A connection disconnected before, or one of a ctx that stopped since (stop
        releases every connection), is ``BAD_STATE``.
        """
        if emu_version.VERSION < CONNECTIONS_SINCE:
            raise need_connections("doca_rdma_connection_disconnect")
        ctx = self.ctx
        with ctx.lock:
            held = self in ctx.conns
        if not held:
            raise DocaBadState("disconnect: the connection was already released (disconnected before, or its "
                               "ctx stopped since: a stop releases every connection)")
        if self.state not in (C_BROKEN, C_CLOSED):
            req = self.req
            if req is not None:
                with req.lock:
                    if not req.closed:
                        put_frame(req.out, T_DISC, 0, 0, 0, 0, 0)
                req.flush()
            ctx.break_connection(self, RESET, local=True)
        with ctx.lock:
            if self in ctx.conns:
                ctx.conns.remove(self)

    # -- sending requests (Pe thread) -----------------------------------------------------------
    def run_sq(self) -> None:
        """Start the queued tasks in order while the connection is up, or fail them once it is down.

        While the peer has not connected yet the tasks wait, as work requests on an RC
        queue pair whose peer is not ready: until the connection is established, breaks
        (``CONNECTION_RESET``) or the connect window ends (``TIME_OUT``).
        """
        q = self.sq
        while True:
            t = q.head()
            if t is None:
                return
            state = self.state
            if state != C_ESTABLISHED and state != C_BROKEN and state != C_CLOSED:
                self._wait_for_peer()
                return
            q.pop(t)
            t.go()

    def _wait_for_peer(self) -> None:
        if self.window_armed:
            return
        ctx = self.ctx
        pe = ctx.pe
        if pe is None:
            return
        self.window_armed = True
        arg = (self, ctx.epoch)
        r = reactor()

        def expired() -> None:
            pe.post(ctx.window_expired, arg)
        r.call(lambda: r.call_later(cfg.connect_window, expired))

    def request_stream(self) -> Stream:
        st = self.req
        if self.state != C_ESTABLISHED or st is None:
            if self.state in (C_BROKEN, C_CLOSED):
                raise Fail(self.err, self.err_reason)
            raise Fail(int(ErrorCode.NOT_CONNECTED), "the connection is not established")
        return st

    def push(self, t: Work) -> None:
        """*t* now waits for the peer's response (st.lock held): the retry window runs while any does."""
        p = self.pending
        if not p:
            self.start_waiting()
        p.append(t)

    def start_waiting(self, ring: bool = False) -> None:
        """Work starts waiting for the peer: (re)start the retry window, arm its timer (a ring send's
        sooner: the peer may need a nudge, :func:`_retry_check`)."""
        self.since = monotonic()
        with self.rt_lock:
            if self.rt_armed:
                return
            self.rt_armed = True
        r = reactor()
        delay = shm.NUDGE if ring else self.ctx.retry_window
        r.call(functools.partial(r.call_later, delay, functools.partial(_retry_check, self)))

    def schedule(self, st: Stream) -> None:
        if not st.flush_posted:
            st.flush_posted = True
            pe = self.ctx.pe
            assert pe is not None
            pe.defer(_flush, st)

    def map_id(self, st: Stream, mm: EmuMmap) -> int:
        """The id of *mm* on this connection; registers it with the peer first (st.lock held)."""
        blob = mm.blob
        if blob is None:
            raise Fail(INVALID, "the remote buffer is not in an mmap created from an RDMA export")
        mid = self.map_ids.get(blob)
        if mid is None:
            if len(self.map_ids) >= 0xFFFF:
                raise Fail(int(ErrorCode.FULL), "too many remote mmaps used on one connection")
            mid = len(self.map_ids) + 1
            self.map_ids[blob] = mid
            data = ex.encode(blob)
            put_frame(st.out, T_MAP, 0, mid, len(data), 0, 0)
            st.out += data
        self.last_blob, self.last_mid = blob, mid
        return mid




def _flush(st: Stream) -> None:
    st.flush()


QUIET[_flush] = False  # internal: the completions it leads to are the progress


def _retry_check(conn: EmuRdmaConnection) -> None:
    """The retry-window timer of *conn* (I/O thread).

    Work waits for the peer: if the peer showed no life (no byte on either stream, no room made in a
    full socket) for a whole window since the oldest waiting work was sent or the peer last answered,
    the connection fails as an RC queue pair whose transport retries ran out. Otherwise the timer
    runs again for the rest of the window; with nothing waiting it stops (an idle connection costs
    nothing).
    """
    st = conn.req
    ctx = conn.ctx
    window = ctx.retry_window
    if st is None or conn.state != C_ESTABLISHED:
        with conn.rt_lock:
            conn.rt_armed = False
        return
    tx = conn.tx
    probe = False
    if tx is not None and tx.dirty:
        tx.publish()  # written inside a progress() that was the last for a while
    with st.lock, conn.rt_lock:  # (the lock order of push: st.lock, then start_waiting's rt_lock)
        ring = tx.busy if tx is not None else 0
        if not (conn.pending or ring) or st.closed:
            conn.rt_armed = False
            return
        srv = conn.srv
        last = max(conn.since, st.heard, srv.heard if srv is not None else 0.0, tx.heard if tx is not None else 0.0)
        left = last + window - monotonic()
        if left > 0:
            if tx is not None and ring:
                # Ring sends are finished by the peer's progress: if it finished none since the last
                # look, ask its I/O thread to serve them (and to show it lives), backing off.
                if tx.heard == tx.seen:
                    put_frame(st.out, T_PING, 0, 0, 0, 0, 0)
                    probe = True
                    tx.nudge = min(tx.nudge * 2, window / 4)
                else:
                    tx.nudge = shm.NUDGE
                tx.seen = tx.heard
                left = min(left, tx.nudge)
            st.r.call_later(left, functools.partial(_retry_check, conn))
        else:
            conn.rt_armed = False
            n = len(conn.pending) + ring
    if probe:
        st.flush()
    if left > 0:
        return
    ctx.break_connection(conn, IO_FAILED, reason=f"the peer did not answer within the retry window ({window:g} s, "
                                        f"DOCA_PY_RDMA_RETRY_WINDOW) with {n} request(s) in flight: transport "
                                        f"retries exhausted, the connection is down")


def send_reply_and_close(st: Stream, status: int, ctx: ConnectionOwner) -> None:
    if st.closed:
        return
    try:
        st.sock.setblocking(True)
        st.sock.settimeout(1.0)
        st.sock.sendall(REPLY.pack(REPLY_MAGIC, VERSION, status, host_id(), os.getpid(), ctx.perms,
                                    int(rnr_window(ctx.rnr_retry) * 1000)))
    except OSError:
        pass
    st.on_close = ignore_close
    st.close()


def ignore_close(st: Stream, code: int) -> None:
    pass



class Fifo(Lane):
    """One work queue of a queue pair: a connection's send queue or the ctx's receive queue.

    Hardware starts the work requests of one queue in the order they were posted
    (``doca_task_submit``). The Pe launches a lane's tasks in that order (shuffling never
    reorders them within it), and a task's work starts at its launch, unless tasks before it are
    still waiting, *ready*, for the peer to connect: then it joins them in :attr:`tasks` and they
    start in order once the connection is up (or fail when it breaks). So :attr:`tasks` holds the
    launched tasks that wait, in order; a task that completes without starting (flushed, fault
    injected) leaves it then.
    """

    __slots__ = ("ctx", "tasks", "run", "nready")

    def __init__(self, ctx: ConnectionOwner, run: Callable[[], None]) -> None:
        super().__init__()
        self.ctx = ctx
        self.tasks: deque[Work] = deque()
        self.run = run  # start the tasks at the front that may start (Pe thread)
        self.nready = 0  # queued tasks that were launched and wait for their turn

    def head(self) -> Work | None:
        """The front task if it was launched (it stays queued); ``None`` when the queue is empty or
        the front task's launch has not run yet (that launch runs the queue again)."""
        tasks = self.tasks
        if tasks and tasks[0].ready:
            return tasks[0]
        return None

    def pop(self, t: Work) -> None:
        """Take the ready front task *t* off the queue."""
        self.tasks.popleft()
        t.fifo = None
        t.ready = False
        self.nready -= 1

    def remove(self, t: Work) -> None:
        """*t* completed without starting: drop its entry."""
        try:
            self.tasks.remove(t)
        except ValueError:
            pass
        t.fifo = None

    def drop(self) -> list[Work]:
        """Empty the queue (ctx stop); returns the tasks that were waiting to start."""
        waiting = []
        for t in self.tasks:
            t.fifo = None
            if t.ready:
                t.ready = False
                waiting.append(t)
        self.tasks.clear()
        self.nready = 0
        return waiting


def fifo_retry(q: Fifo) -> None:
    q.run()
