"""Emulated ``doca_rdma``: connections over TCP, one-sided access through shared memory.

* **State machine.** The rules of the DOCA version presented (:mod:`.version`, read at
  ``start``). 3.x: ``start`` returns STARTING and the next ``progress`` makes the ctx
  RUNNING without any connection ("ready to export and connect"). 2.6: the ctx stays
  STARTING until ``connect`` was called, then the next ``progress`` makes it RUNNING.
  Both: ``export``/``connect`` work while STARTING or RUNNING; a second ``connect`` on a
  connection is ``BAD_STATE``.
* **Connections.** ``start`` opens a TCP listener (``DOCA_PY_RDMA_BIND_ADDR``, default
  ``127.0.0.1``, port 0). Each ``export`` allocates a connection and returns a blob
  naming the listener, this host (boot id), this process and a random 128-bit key.
  ``connect`` dials the peer's listener and proves it holds the peer's key; the peer
  does the same, so each connection has two streams (see :mod:`.rdma_io`); it is
  established once both are up. The RDMA-CM flow (``start_listen_to_port`` /
  ``connect_to_addr`` / ``accept``) builds the same two streams after a request/accept
  exchange on the CM port.
* **Tasks.** ``submit`` queues the task (the base :class:`EmuTask` rules) and puts it on
  its queue: the connection's send queue or the ctx's receive queue. Inside
  ``progress`` the work starts in submission order per queue, as on a queue pair: a
  send is framed (its source read then), a receive posted, a same-host read or write
  copied. A task on a connection whose peer has not connected yet waits, as on an RC
  queue pair, until the connection is up, breaks (``CONNECTION_RESET``) or the connect
  window (``DOCA_PY_RDMA_CONNECT_WINDOW``, default 5 s) ends (``TIME_OUT``). A submit on
  an exported connection that was never connected is refused (``NOT_CONNECTED``).
  Local buffers must be in maps that have the ctx's device added (else
  ``NOT_PERMITTED``); the remote buffer of read, write and atomics is one buffer (the
  head of a chain).
* **send / receive.** A send is a frame on the stream this side dialed. The peer's I/O
  thread copies it into the oldest posted receive of the peer ctx and acknowledges;
  acknowledgements are batched. With no receive posted the stream stalls (nothing
  later on it is processed) for the sender's receiver-not-ready window; then the
  send fails with ``DOCA_ERROR_TIME_OUT``.
* **read / write.** Peers on the same host (equal boot ids) access the exporter's
  memory directly through :meth:`EmuMmap.ptr` (zero copy; range, RDMA permission and
  revocation checked on every access), inside ``progress``. Peers on different hosts
  send the request to the connection peer, whose I/O thread resolves the mmap blob
  itself (key and revocation), checks range and RDMA_READ/RDMA_WRITE permission of the
  map and of its ctx, and only then touches memory. Atomics always go to the peer,
  whose single I/O thread serialises them.
* **Failures.** A stream that dies fails every task waiting on it with
  ``DOCA_ERROR_CONNECTION_RESET`` (the first failed task moves the ctx to STOPPING as
  any failed task does) and reports the connection's disconnection (or failure,
  before it was established) through the connection state callbacks.
* **Silent peers.** Work waiting for the peer's response (``pending``) runs a retry-window
  timer on the I/O thread (``DOCA_PY_RDMA_RETRY_WINDOW``, default 4 s): when the peer gave no
  sign of life for a whole window (no byte on either stream, no room made in a full socket),
  the connection breaks with ``DOCA_ERROR_IO_FAILED``, as an RC queue pair whose transport
  retries ran out. A receiver stalled for want of a receive sends RNR NAKs (``R_RNR``) meanwhile.
  No timer runs while nothing waits.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import hashlib
import ipaddress
import itertools
import os
import secrets
import socket
import struct
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable
from typing import Any

from ..abc import BufHandle, DevInfoHandle
from ..errors import (
    DocaBadState,
    DocaConnectionAborted,
    DocaError,
    DocaFull,
    DocaInvalidValue,
    DocaNotConnected,
    DocaNotFound,
    DocaNotSupported,
    ErrorCode,
)
from ..log import logger
from ..types import AccessFlag as A
from . import export as ex
from .buf import EmuBuf
from . import version as emu_version
from .ctx import FLUSHED, EmuCtx, EmuTask, TaskPool, _complete, unreachable_ok
from .mmap import Access, EmuMmap, dev_key, mmap_create_from_export
from .rdma_io import HDR, HDR_SIZE, RX_SIZE, Listener, Stream, put_frame, reactor

__all__ = ["EmuRdma", "EmuRdmaConnection", "rdma_create", "configure", "host_id", "decode_blob",
           "MAX_MESSAGE_SIZE", "MAX_BUF_LIST_LEN", "MAX_QUEUE_SIZE", "MAX_NUM_CONNECTIONS",
           "ConnBlob", "rnr_window", "cap_get_max_recv_queue_size", "cap_get_max_send_queue_size",
           "cap_get_max_send_buf_list_len", "cap_get_max_message_size", "cap_get_gid_table_size", "cap_get_gid",
           "cap_transport_type_is_supported", "cap_task_is_supported", "cap_task_receive_get_max_dst_buf_list_len",
           "cap_get_max_num_tasks"]

# -- limits and defaults --------------------------------------------------------------------
MAX_MESSAGE_SIZE = 1 << 30
MAX_BUF_LIST_LEN = 16
MAX_QUEUE_SIZE = 1 << 15
MAX_NUM_CONNECTIONS = 1 << 12
MAX_NUM_TASKS = 1 << 16
DEFAULT_QUEUE_SIZE = 1 << 10
GID_TABLE_SIZE = 1

#: Seconds a task on a connection waits for the peer to connect (``DOCA_PY_RDMA_CONNECT_WINDOW``).
DEFAULT_CONNECT_WINDOW = 5.0
#: Seconds work in flight on a connection waits without any sign of life from the peer before it
#: fails as after RC transport-retry exhaustion (``DOCA_PY_RDMA_RETRY_WINDOW``). Hardware's window is
#: retry_cnt (7) × the local ACK timeout (4.096 µs × 2^timeout; ~0.5 s at the usual 16-18), a few
#: seconds; 4 s keeps a loaded 2-core machine clear of false alarms.
DEFAULT_RETRY_WINDOW = 4.0

_SUCCESS = 0
_IO_FAILED = int(ErrorCode.IO_FAILED)
_INVALID = int(ErrorCode.INVALID_VALUE)
_NOT_PERMITTED = int(ErrorCode.NOT_PERMITTED)
_RESET = int(ErrorCode.CONNECTION_RESET)
_ABORTED = int(ErrorCode.CONNECTION_ABORTED)
_TIME_OUT = int(ErrorCode.TIME_OUT)
_TOO_BIG = int(ErrorCode.TOO_BIG)
_NOT_SUPPORTED = int(ErrorCode.NOT_SUPPORTED)
_IDLE, _STARTING, _RUNNING, _STOPPING = 0, 1, 2, 3
_RDMA_READ, _RDMA_WRITE, _RDMA_ATOMIC = int(A.RDMA_READ), int(A.RDMA_WRITE), int(A.RDMA_ATOMIC)
_LOCAL_RW = int(A.LOCAL_READ_WRITE)
_NOT_RDMA = int(A.PCI_READ_ONLY | A.PCI_READ_WRITE | A.PCI_RELAXED_ORDERING)

# Connection events, as the public layer maps them to the four DOCA callbacks.
EV_REQUEST, EV_ESTABLISHED, EV_FAILURE, EV_DISCONNECTION = 0, 1, 2, 3
# Receive opcodes (enum doca_rdma_opcode).
OP_RECV_SEND, OP_RECV_SEND_WITH_IMM, OP_RECV_WRITE_WITH_IMM = 0, 1, 2

# Frame types: requests (dialer -> acceptor) and responses (acceptor -> dialer).
T_SEND, T_WRITE, T_READ, T_MAP, T_ATOMIC, T_DISC = 1, 2, 3, 4, 5, 6
R_ACK, R_ERR, R_DATA = 16, 17, 18
R_RNR = 19  # receiver not ready, still alive (the responder's RNR NAK): keeps the requester's retry window open
F_IMM = 1  # the frame carries immediate data (in *b* for writes, *a* for sends)
F_NODATA = 2  # write-with-imm whose bytes were placed already (same host): *a* = length
F_CAS = 4  # atomic: compare-and-swap (else fetch-and-add)

_small = 1 << 16
_memmove = ctypes.memmove
_monotonic = time.monotonic


# -- configuration ----------------------------------------------------------------------------
class _Config:
    def __init__(self) -> None:
        self.bind_addr = os.environ.get("DOCA_PY_RDMA_BIND_ADDR", "127.0.0.1")
        self.advertise_addr = os.environ.get("DOCA_PY_RDMA_ADVERTISE_ADDR", "")
        hid = os.environ.get("DOCA_PY_RDMA_HOST_ID", "")
        self.host_id: bytes | None = _hash_id(hid) if hid else None
        rnr = os.environ.get("DOCA_PY_RDMA_RNR_TIMEOUT", "")
        self.rnr_timeout: float | None = float(rnr) if rnr else None
        self.connect_timeout = float(os.environ.get("DOCA_PY_RDMA_CONNECT_TIMEOUT", "5.0"))
        self.connect_window = float(os.environ.get("DOCA_PY_RDMA_CONNECT_WINDOW", "") or DEFAULT_CONNECT_WINDOW)
        self.retry_window = float(os.environ.get("DOCA_PY_RDMA_RETRY_WINDOW", "") or DEFAULT_RETRY_WINDOW)


def _hash_id(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()[:16]


_cfg = _Config()


def configure(*, bind_addr: str | None = None, advertise_addr: str | None = None, host_id: str | None = None,
              rnr_timeout: float | None = None, connect_timeout: float | None = None,
              connect_window: float | None = None, retry_window: float | None = None) -> None:
    """Override the environment for contexts started from now on (tests, tools).

    *host_id* fakes the host identity (any string; ``""`` restores the boot id): peers
    with different host ids use the TCP path for one-sided access, as across hosts.
    *connect_window* is how long tasks on a connection wait for the peer to connect
    (``0`` restores the default, :data:`DEFAULT_CONNECT_WINDOW`). *retry_window* is how long work in
    flight on a connection waits without any sign of life from the peer before it fails with
    ``DOCA_ERROR_IO_FAILED`` and the connection goes down (``0`` restores :data:`DEFAULT_RETRY_WINDOW`).
    """
    if bind_addr is not None:
        _cfg.bind_addr = bind_addr
    if advertise_addr is not None:
        _cfg.advertise_addr = advertise_addr
    if host_id is not None:
        _cfg.host_id = _hash_id(host_id) if host_id else None
    if rnr_timeout is not None:
        _cfg.rnr_timeout = rnr_timeout if rnr_timeout > 0 else None
    if connect_timeout is not None:
        _cfg.connect_timeout = connect_timeout
    if connect_window is not None:
        _cfg.connect_window = connect_window if connect_window > 0 else DEFAULT_CONNECT_WINDOW
    if retry_window is not None:
        _cfg.retry_window = retry_window if retry_window > 0 else DEFAULT_RETRY_WINDOW


def host_id() -> bytes:
    """16 bytes naming this host for RDMA (the boot id, or ``DOCA_PY_RDMA_HOST_ID``)."""
    return _cfg.host_id if _cfg.host_id is not None else ex.boot_id()


def rnr_window(retry_count: int) -> float:
    """Seconds a send waits for a posted receive: 50 ms × 2^count (7 → 6.4 s)."""
    if _cfg.rnr_timeout is not None:
        return _cfg.rnr_timeout
    return 0.05 * (1 << min(max(retry_count, 0), 7))


# -- connection blob --------------------------------------------------------------------------
# magic | version u16 | transport u8 | family u8 | host 16B | pid u32 | ctx serial u32 | conn id u32
# | key 16B | perms u32 | rnr window ms u32 | ip 16B | port u16 | crc32 u32
_MAGIC = b"DOCAPYRC"
_VERSION = 1
_CONN = struct.Struct("<8sHBB16sIII16sII16sH")
_CRC = struct.Struct("<I")
BLOB_SIZE = _CONN.size + _CRC.size


class ConnBlob:
    """The decoded contents of a connection blob."""

    __slots__ = ("transport", "host", "pid", "serial", "conn_id", "key", "perms", "rnr_ms", "ip", "port")

    def __init__(self, transport: int, host: bytes, pid: int, serial: int, conn_id: int, key: bytes, perms: int,
                 rnr_ms: int, ip: str, port: int) -> None:
        self.transport, self.host, self.pid, self.serial = transport, host, pid, serial
        self.conn_id, self.key, self.perms, self.rnr_ms, self.ip, self.port = conn_id, key, perms, rnr_ms, ip, port


def _pack_ip(ip: str) -> tuple[int, bytes]:
    addr = ipaddress.ip_address(ip)
    return (6 if addr.version == 6 else 4), addr.packed.ljust(16, b"\0")


def _unpack_ip(family: int, raw: bytes) -> str:
    if family == 4:
        return str(ipaddress.IPv4Address(raw[:4]))
    if family == 6:
        return str(ipaddress.IPv6Address(raw))
    raise ValueError(f"address family {family}")


def encode_blob(b: ConnBlob) -> bytes:
    family, ip = _pack_ip(b.ip)
    body = _CONN.pack(_MAGIC, _VERSION, b.transport, family, b.host, b.pid, b.serial, b.conn_id, b.key,
                      b.perms, b.rnr_ms, ip, b.port)
    return body + _CRC.pack(zlib.crc32(body))


def decode_blob(data: bytes) -> ConnBlob:
    """Parse a peer's connection blob; anything malformed is ``DocaConnectionAborted``."""
    if len(data) < 10 or data[:8] != _MAGIC:
        raise DocaConnectionAborted("not a doca_py rdma connection blob (bad magic or truncated)")
    (version,) = struct.unpack_from("<H", data, 8)
    if version != _VERSION:
        raise DocaConnectionAborted(f"connection blob version {version}, this build reads version {_VERSION}")
    if len(data) != BLOB_SIZE:
        raise DocaConnectionAborted(f"connection blob is {len(data)} bytes, expected {BLOB_SIZE}")
    body = data[:_CONN.size]
    if zlib.crc32(body) != _CRC.unpack_from(data, _CONN.size)[0]:
        raise DocaConnectionAborted("connection blob is corrupt (checksum mismatch)")
    _, _, transport, family, host, pid, serial, conn_id, key, perms, rnr_ms, ip, port = _CONN.unpack(body)
    try:
        ip_s = _unpack_ip(family, ip)
    except ValueError:
        raise DocaConnectionAborted("connection blob names no valid address") from None
    if port == 0 or transport != 0:
        raise DocaConnectionAborted("connection blob names no port or an unsupported transport")
    return ConnBlob(transport, host, pid, serial, conn_id, key, perms, rnr_ms, ip_s, port)


# -- handshake on a fresh stream ---------------------------------------------------------------
# magic | version u16 | kind u8 | 0 | target key | sender key | sender host | pid | perms | rnr ms | conn id
# | ip 16B | port u16 | family u8 | 0
_HELLO_MAGIC = b"DOCAPYRH"
_HELLO = struct.Struct("<8sHBx16s16s16sIIII16sHBx")
_REPLY_MAGIC = b"DOCAPYRR"
_REPLY = struct.Struct("<8sHxxI16sIII")  # magic | version | status | host | pid | perms | rnr ms
_K_CONNECT, _K_CM_REQUEST = 0, 1

# Connection states.
C_NEW, C_REQUESTED, C_CONNECTING, C_ESTABLISHED, C_BROKEN, C_CLOSED = 0, 1, 2, 3, 4, 5

_serials = itertools.count(1)
#: Peer keys this process has already connected to: a replayed blob is refused.
_used_keys: set[bytes] = set()
_used_lock = threading.Lock()


def _advertised(listener: Listener) -> str:
    ip = listener.addr[0]
    if ip in ("0.0.0.0", "::"):
        return _cfg.advertise_addr or ("127.0.0.1" if ip == "0.0.0.0" else "::1")
    return ip


class EmuRdmaConnection:
    """Emulated ``doca_rdma_connection``."""

    def __init__(self, ctx: EmuRdma, conn_id: int) -> None:
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
        self.pending: deque[_RdmaTask] = deque()  # requests awaiting responses, in order (under req.lock)
        self.map_ids: dict[ex.Blob, int] = {}
        self.blob = b""
        self.epoch = ctx.epoch
        self.sq = _Fifo(ctx, self._run_sq)  # submitted tasks, in order, until they start (Pe thread)
        self.err = _RESET  # status of tasks started after the connection broke
        self.err_reason = "the connection is down"
        self.window_armed = False  # a connect-window timer runs for tasks waiting on the peer
        self.since = 0.0  # when :attr:`pending` last became non-empty (retry window)
        self.rt_armed = False  # a retry-window timer runs (set while :attr:`pending` is non-empty)

    # -- public verbs ---------------------------------------------------------------------------
    def get_id(self) -> int:
        return self.id

    def get_addr(self) -> tuple[int, str, int] | None:
        return self.cm_addr

    def accept(self, private_data: bytes | None) -> None:
        """Accept a pending CM request (server side)."""
        ctx = self.ctx
        if self.state != C_REQUESTED or self.peer_key is None or self.peer_addr is None:
            raise DocaBadState("accept: the connection is not a pending connection request")
        if private_data is not None and len(private_data) > 255:
            raise DocaInvalidValue("private data is at most 255 bytes")
        cm = self.cm_sock
        try:
            ctx._dial(self, self.peer_addr, self.peer_key)
        except DocaError:
            ctx._break(self, _ABORTED)
            raise
        if cm is not None:
            cm.r.call(lambda: _send_reply_and_close(cm, 0, ctx))

    def reject(self) -> None:
        """Reject a pending CM request (server side)."""
        if self.state != C_REQUESTED:
            raise DocaBadState("reject: the connection is not a pending connection request")
        cm = self.cm_sock
        ctx = self.ctx
        with ctx.lock:
            self.state = C_CLOSED
            self.err, self.err_reason = _ABORTED, "the connection request was rejected"
            if self in ctx.conns:
                ctx.conns.remove(self)
        if cm is not None:
            cm.r.call(lambda: _send_reply_and_close(cm, _ABORTED, ctx))
        if self.sq.tasks and ctx.pe is not None:
            ctx.pe.post(_fifo_retry, self.sq)  # tasks waiting on the request fail

    def disconnect(self) -> None:
        """Tear the connection down; the peer sees its disconnection callback."""
        if self.state not in (C_ESTABLISHED, C_CONNECTING, C_REQUESTED, C_NEW):
            raise DocaBadState("disconnect: the connection is not up")
        req = self.req
        if req is not None:
            with req.lock:
                if not req.closed:
                    put_frame(req.out, T_DISC, 0, 0, 0, 0, 0)
            req.flush()
        self.ctx._break(self, _RESET, local=True)

    # -- sending requests (Pe thread) -----------------------------------------------------------
    def _run_sq(self) -> None:
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
            t._go()

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
            pe.post(ctx._window_expired, arg)
        r.call(lambda: r.call_later(_cfg.connect_window, expired))

    def _stream(self) -> Stream:
        st = self.req
        if self.state != C_ESTABLISHED or st is None:
            if self.state in (C_BROKEN, C_CLOSED):
                raise _Fail(self.err, self.err_reason)
            raise _Fail(int(ErrorCode.NOT_CONNECTED), "the connection is not established")
        return st

    def _push(self, t: _RdmaTask) -> None:
        """*t* now waits for the peer's response (st.lock held): the retry window runs while any does."""
        p = self.pending
        if not p:
            self.since = _monotonic()
            if not self.rt_armed:
                self.rt_armed = True
                r = reactor()
                r.call(functools.partial(r.call_later, self.ctx.retry_window, functools.partial(_retry_check, self)))
        p.append(t)

    def _schedule(self, st: Stream) -> None:
        if not st.flush_posted:
            st.flush_posted = True
            pe = self.ctx.pe
            assert pe is not None
            pe.post(_flush, st)

    def _map_id(self, st: Stream, mm: EmuMmap) -> int:
        """The id of *mm* on this connection; registers it with the peer first (st.lock held)."""
        blob = mm.blob
        if blob is None:
            raise _Fail(_INVALID, "the remote buffer is not in an mmap created from an RDMA export")
        mid = self.map_ids.get(blob)
        if mid is None:
            if len(self.map_ids) >= 0xFFFF:
                raise _Fail(int(ErrorCode.FULL), "too many remote mmaps used on one connection")
            mid = len(self.map_ids) + 1
            self.map_ids[blob] = mid
            data = ex.encode(blob)
            put_frame(st.out, T_MAP, 0, mid, len(data), 0, 0)
            st.out += data
        return mid


class _Fail(Exception):
    """A task fails with *code* (raised while starting it)."""

    def __init__(self, code: int, detail: str = "") -> None:
        super().__init__(detail)
        self.code = code


def _flush(st: Stream) -> None:
    st.flush()


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
        conn.rt_armed = False
        return
    with st.lock:
        if not conn.pending or st.closed:
            conn.rt_armed = False
            return
        srv = conn.srv
        last = max(conn.since, st.heard, srv.heard if srv is not None else 0.0)
        left = last + window - _monotonic()
        if left > 0:
            st.r.call_later(left, functools.partial(_retry_check, conn))
            return
        conn.rt_armed = False
        n = len(conn.pending)
    ctx._break(conn, _IO_FAILED, reason=f"the peer did not answer within the retry window ({window:g} s, "
                                        f"DOCA_PY_RDMA_RETRY_WINDOW) with {n} request(s) in flight: transport "
                                        f"retries exhausted, the connection is down")


def _send_reply_and_close(st: Stream, status: int, ctx: EmuRdma) -> None:
    if st.closed:
        return
    try:
        st.sock.setblocking(True)
        st.sock.settimeout(1.0)
        st.sock.sendall(_REPLY.pack(_REPLY_MAGIC, _VERSION, status, host_id(), os.getpid(), ctx.perms,
                                    int(rnr_window(ctx.rnr_retry) * 1000)))
    except OSError:
        pass
    st.on_close = _ignore_close
    st.close()


def _ignore_close(st: Stream, code: int) -> None:
    pass


# -- tasks -----------------------------------------------------------------------------------
def _segments(buf: EmuBuf | None, write: bool) -> tuple[list[memoryview], int]:
    """Views of a local buffer list: data regions (sources) or the room after them (destinations)."""
    segs: list[memoryview] = []
    total = 0
    b = buf
    while b is not None:
        mm = b.mmap
        if mm is None:
            raise _Fail(_INVALID, "buffer is not allocated")
        if write:
            start = b.data + b.data_len
            n = b.head + b.len - start
        else:
            start, n = b.data, b.data_len
        if n:
            try:
                segs.append(mm.view(start, n, write))
            except DocaError as exc:
                raise _Fail(exc.code, str(exc)) from None
            total += n
        b = b.next
    return segs, total


def _list_len(buf: EmuBuf | None) -> int:
    n = 0
    while buf is not None:
        n, buf = n + 1, buf.next
    return n


def _scatter(segs: list[memoryview], data: memoryview) -> None:
    off = 0
    for s in segs:
        k = min(len(s), len(data) - off)
        if k <= 0:
            break
        s[:k] = data[off:off + k]
        off += k


def _grow(buf: EmuBuf | None, n: int) -> None:
    """Account *n* bytes written after the data of a destination list."""
    b = buf
    while b is not None and n > 0:
        room = b.head + b.len - b.data - b.data_len
        k = min(room, n)
        b.data_len += k
        n -= k
        b = b.next


class _Fifo:
    """One work queue of a queue pair: a connection's send queue or the ctx's receive queue.

    Hardware starts the work requests of one queue in the order they were posted
    (``doca_task_submit``). Here a task's work runs inside ``progress()`` when its launch
    comes up, and the launches of one round may run in any order
    (``DOCA_PY_EMU_SHUFFLE``); so each task enters its queue at submit, and its work
    starts only after the work of every task submitted before it on that queue. A task
    whose launch came before its turn is *ready* and waits in the queue.
    """

    __slots__ = ("ctx", "tasks", "run", "nready", "retry_posted")

    def __init__(self, ctx: EmuRdma, run: Callable[[], None]) -> None:
        self.ctx = ctx
        self.tasks: deque[_RdmaTask] = deque()
        self.run = run  # start the tasks at the front that may start (Pe thread)
        self.nready = 0  # queued tasks that were launched and wait for their turn
        self.retry_posted = False

    def head(self) -> _RdmaTask | None:
        """The front task if it was launched (it stays queued); ``None`` when the queue is
        empty or the front task's launch has not run yet (that launch runs the queue again)."""
        tasks = self.tasks
        while tasks:
            t = tasks[0]
            if t.ready:
                return t
            if t.inflight:  # submitted earlier, its launch comes later in this round (shuffled)
                if self.nready:
                    self._retry()  # in case that launch flushes or fault-injects it instead
                return None
            tasks.popleft()  # completed without starting: flushed or fault injected
            t.fifo = None
        return None

    def pop(self, t: _RdmaTask) -> None:
        """Take the ready front task *t* off the queue."""
        self.tasks.popleft()
        t.fifo = None
        t.ready = False
        self.nready -= 1

    def _retry(self) -> None:
        pe = self.ctx.pe
        if not self.retry_posted and pe is not None:
            self.retry_posted = True
            pe.post(_fifo_retry, self)

    def drop(self) -> list[_RdmaTask]:
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


def _fifo_retry(q: _Fifo) -> None:
    q.retry_posted = False
    q.run()


def _reach(task: _RdmaTask, buf: EmuBuf) -> None:
    """A local buffer list must lie in maps that have the ctx's device added (a single
    buffer's map is remembered on the task: checked once per map, not per submit)."""
    key = task.ctx.dev_key
    if not key:
        return
    b: EmuBuf | None = buf
    while b is not None:
        m = b.mmap
        if m is not None and key not in m.reach:
            unreachable_ok(task, b)  # records the reason
            raise _Fail(_NOT_PERMITTED, task.reason)
        b = b.next
    task.reached = buf.mmap if buf.next is None else None


class _RdmaTask(EmuTask):
    """Base of the emulated rdma tasks.

    The base ``submit`` checks and queues the launch; the last of its checks
    (:meth:`_check_submit`) also puts the task on its queue (:class:`_Fifo`). In
    ``progress()`` the launch (:meth:`_begin`) starts the task when it is its turn and
    the connection is up, else marks it ready and leaves it to the queue
    (:meth:`_go`); its completion comes later from the I/O thread, or at once for
    same-host work and refusals.
    """

    __slots__ = ("conn", "nbytes", "fifo", "ready", "reached")

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.conn: EmuRdmaConnection | None = None  # None for receives
        self.nbytes = 0
        self.fifo: _Fifo | None = None
        self.ready = False
        self.reached: EmuMmap | None = None  # the local map last found reachable by the ctx's device

    def _check_submit(self) -> None:
        c = self.conn
        if c is None or c.ctx is not self.ctx:
            raise DocaInvalidValue("the task's connection does not belong to this rdma ctx")
        if c.state == C_NEW:
            raise DocaNotConnected(f"connection {c.id} was exported but not connected: call Rdma.connect with "
                                   f"the peer's blob before submitting tasks on it")
        if self.fifo is None:  # _enqueue inlined (the hot path)
            self.fifo = q = c.sq
            q.tasks.append(self)
        else:
            self._enqueue(c.sq)

    def _enqueue(self, q: _Fifo) -> None:
        """Take a place in *q*, in submission order (the last submit check: nothing after it
        refuses; were it to, the entry is dropped as stale when it reaches the front)."""
        old = self.fifo
        if old is not None:  # a stale entry: the task completed without starting (flushed, fault injected)
            try:
                old.tasks.remove(self)
            except ValueError:
                pass
        self.fifo = q
        q.tasks.append(self)

    def _begin(self) -> None:
        q = self.fifo
        if q is None:  # not queued (cannot happen while the ctx runs): start it now
            self._go()
            return
        tasks = q.tasks
        c = self.conn  # None for receives: their queue has no gate
        if tasks[0] is self and (c is None or c.state == C_ESTABLISHED):
            tasks.popleft()  # its turn, and the connection is up: the hot path (_go inlined)
            self.fifo = None
            try:
                self._start()
            except _Fail as f:
                self.status = f.code
                self.reason = str(f)
                _complete(self)
            except DocaError as exc:
                self.status = exc.code
                self.reason = str(exc)
                _complete(self)
            if q.nready:  # tasks launched before their turn wait behind
                q.run()
            return
        self.ready = True
        q.nready += 1
        q.run()

    def _go(self) -> None:
        """Start the work (Pe thread, inside ``progress()``); a refusal completes the task now."""
        try:
            self._start()
        except _Fail as f:
            self.status = f.code
            self.reason = str(f)
            _complete(self)
        except DocaError as exc:
            self.status = exc.code
            self.reason = str(exc)
            _complete(self)

    def _start(self) -> None:
        raise NotImplementedError

    def _ok(self) -> None:
        """Success response arrived (I/O thread): account the bytes."""

    def set_rdma_connection(self, conn: Any) -> None:
        assert isinstance(conn, EmuRdmaConnection)
        self.conn = conn

    def get_rdma_connection(self) -> EmuRdmaConnection | None:
        return self.conn


class EmuRdmaTaskReceive(_RdmaTask):
    """``doca_rdma_task_receive``: posted to the ctx's receive queue in submission order."""

    __slots__ = ("dst", "opcode", "result_len", "imm", "result_conn")
    kind = "rdma_receive"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.dst: EmuBuf | None = None
        self.opcode = 0
        self.result_len = 0
        self.imm = 0
        self.result_conn: EmuRdmaConnection | None = None

    def _check_submit(self) -> None:
        self._enqueue(self.ctx.rq)  # type: ignore[attr-defined]  # no connection to check

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return (self.dst,)

    def _start(self) -> None:
        ctx = self.ctx
        assert isinstance(ctx, EmuRdma)
        dst = self.dst
        if dst is not None and (dst.mmap is not self.reached or dst.next is not None):
            _reach(self, dst)
        self.result_len = self.imm = 0
        self.result_conn = None
        with ctx.lock:
            ctx.posted.append(self)
            wake = bool(ctx.stalled)
        if wake:
            reactor().call(ctx._resume_stalled)

    def _validate(self) -> None:
        if _list_len(self.dst) > self.ctx.recv_list_len:  # type: ignore[attr-defined]
            raise DocaInvalidValue("receive destination list is longer than the configured dst_buf_list_len")

    def set_dst_buf(self, buf: BufHandle | None) -> None:
        assert buf is None or isinstance(buf, EmuBuf)
        self.dst = buf


class EmuRdmaTaskSend(_RdmaTask):
    """``doca_rdma_task_send`` (and send-with-immediate when *has_imm*)."""

    __slots__ = ("src", "imm", "has_imm")
    kind = "rdma_send"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.src: EmuBuf | None = None
        self.imm = 0
        self.has_imm = False

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return (self.src,)

    def _start(self) -> None:
        conn = self.conn
        assert conn is not None
        src = self.src
        if src is None:
            segs: list[memoryview] = []
            n = 0
        else:
            if src.next is not None and _list_len(src) > self.ctx.send_list_len:  # type: ignore[attr-defined]
                raise _Fail(_INVALID, "source list is longer than max_send_buf_list_len")
            if src.mmap is not self.reached or src.next is not None:
                _reach(self, src)
            segs, n = _segments(src, False)
        if n > MAX_MESSAGE_SIZE:
            raise _Fail(_TOO_BIG, f"message of {n} bytes exceeds the maximum {MAX_MESSAGE_SIZE}")
        st = conn._stream()
        with st.lock:
            if st.closed:
                raise _Fail(_RESET, "the connection is down")
            out = st.out
            put_frame(out, T_SEND, F_IMM if self.has_imm else 0, 0, n, self.imm, 0)
            for s in segs:
                out += s
            conn._push(self)
        conn._schedule(st)

    def set_src_buf(self, buf: BufHandle | None) -> None:
        assert buf is None or isinstance(buf, EmuBuf)
        self.src = buf


class EmuRdmaTaskRead(_RdmaTask):
    """``doca_rdma_task_read``: remote *src* (its head: the remote side is one buffer) into local *dst*."""

    __slots__ = ("src", "dst", "segs")
    kind = "rdma_read"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.src: EmuBuf | None = None
        self.dst: EmuBuf | None = None
        self.segs: list[memoryview] = []

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return self.src, self.dst

    def _start(self) -> None:
        conn = self.conn
        assert conn is not None
        src, dst = self.src, self.dst
        if src is None or dst is None:
            raise _Fail(_INVALID, "read needs a remote source and a local destination")
        rm = src.mmap  # a chained remote buffer: DOCA uses the head only
        if rm is None or not rm.from_export or rm.kind != Access.RDMA:
            raise _Fail(_INVALID, "the read source must be a buffer of an mmap created from an RDMA export")
        if dst.mmap is not self.reached or dst.next is not None:
            _reach(self, dst)
        n = src.data_len
        if n > MAX_MESSAGE_SIZE:
            raise _Fail(_TOO_BIG, f"read of {n} bytes exceeds the maximum {MAX_MESSAGE_SIZE}")
        dm = dst.mmap
        at = dst.data + dst.data_len
        fast = dst.next is None and dm is not None and dm.fast and dm.writable and dm.addr <= at and \
            at + n <= dm.hi and at + n <= dst.head + dst.len
        st = conn._stream()
        self.nbytes = n
        if fast and conn.same_host:
            if not conn.peer_perms & _RDMA_READ:
                raise _Fail(_NOT_PERMITTED, "the peer rdma ctx does not grant RDMA_READ")
            try:
                p = rm.ptr(src.data, n, False)
            except DocaError as exc:
                raise _Fail(exc.code, str(exc)) from None
            _memmove(at, p, n)
            dst.data_len += n
            _complete(self)
            return
        segs, room = _segments(dst, True)
        if room < n:
            raise _Fail(_INVALID, f"read destination has {room} bytes free, the source holds {n}")
        if conn.same_host:
            if not conn.peer_perms & _RDMA_READ:
                raise _Fail(_NOT_PERMITTED, "the peer rdma ctx does not grant RDMA_READ")
            try:
                p = rm.ptr(src.data, n, False)
            except DocaError as exc:
                raise _Fail(exc.code, str(exc)) from None
            _copy_from(segs, p, n)
            _grow(dst, n)
            _complete(self)
            return
        self.segs = segs
        with st.lock:
            if st.closed:
                raise _Fail(_RESET, "the connection is down")
            mid = conn._map_id(st, rm)
            put_frame(st.out, T_READ, 0, mid, 0, src.data, n)
            conn._push(self)
        conn._schedule(st)

    def _ok(self) -> None:
        _grow(self.dst, self.nbytes)
        self.segs = []

    def set_src_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.src = buf

    def set_dst_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.dst = buf


def _copy_from(segs: list[memoryview], p: int, n: int) -> None:
    """Copy *n* bytes at process address *p* into *segs*."""
    off = 0
    for s in segs:
        k = min(len(s), n - off)
        if k <= 0:
            break
        if k <= _small:
            s[:k] = _target_view(p + off, k)
        else:
            _memmove((ctypes.c_char * k).from_buffer(s), p + off, k)  # releases the GIL
        off += k


def _copy_to(p: int, segs: list[memoryview]) -> int:
    """Copy *segs* to process address *p*."""
    off = 0
    for s in segs:
        k = len(s)
        if k <= _small:
            _target_view(p + off, k)[:] = s
        else:
            _memmove(p + off, (ctypes.c_char * k).from_buffer(s), k)
        off += k
    return off


class EmuRdmaTaskWrite(_RdmaTask):
    """``doca_rdma_task_write`` (and write-with-immediate when *has_imm*): local *src* to remote *dst*
    (its head: the remote side is one buffer)."""

    __slots__ = ("src", "dst", "imm", "has_imm")
    kind = "rdma_write"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.src: EmuBuf | None = None
        self.dst: EmuBuf | None = None
        self.imm = 0
        self.has_imm = False

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return self.src, self.dst

    def _start(self) -> None:
        conn = self.conn
        assert conn is not None
        src, dst = self.src, self.dst
        if src is None or dst is None:
            raise _Fail(_INVALID, "write needs a local source and a remote destination")
        if src.next is not None and _list_len(src) > self.ctx.send_list_len:  # type: ignore[attr-defined]
            raise _Fail(_INVALID, "source list is longer than max_send_buf_list_len")
        rm = dst.mmap  # a chained remote buffer: DOCA uses the head only
        if rm is None or not rm.from_export or rm.kind != Access.RDMA:
            raise _Fail(_INVALID, "the write destination must be a buffer of an mmap created from an RDMA export")
        sm = src.mmap
        if sm is not self.reached or src.next is not None:
            _reach(self, src)
        if src.next is None and sm is not None and sm.fast and sm.addr <= src.data and \
                src.data + src.data_len <= sm.hi:
            segs, n = list[memoryview](), src.data_len  # a started local map: its addresses are this process's
        else:
            sm = None
            segs, n = _segments(src, False)
        if n > MAX_MESSAGE_SIZE:
            raise _Fail(_TOO_BIG, f"write of {n} bytes exceeds the maximum {MAX_MESSAGE_SIZE}")
        d = dst.data + dst.data_len
        if d + n > dst.head + dst.len:
            raise _Fail(_INVALID, f"write destination has {dst.head + dst.len - d} bytes free, the source holds {n}")
        st = conn._stream()
        self.nbytes = n
        if conn.same_host:
            if not conn.peer_perms & _RDMA_WRITE:
                raise _Fail(_NOT_PERMITTED, "the peer rdma ctx does not grant RDMA_WRITE")
            try:
                p = rm.ptr(d, n, True)
            except DocaError as exc:
                raise _Fail(exc.code, str(exc)) from None
            if sm is not None:
                _memmove(p, src.data, n)
            else:
                _copy_to(p, segs)
            if not self.has_imm:
                dst.data_len += n
                _complete(self)
                return
            with st.lock:  # the bytes are in place: tell the peer, which consumes a receive
                if st.closed:
                    raise _Fail(_RESET, "the connection is down")
                put_frame(st.out, T_WRITE, F_IMM | F_NODATA, 0, 0, n, self.imm)
                conn._push(self)
            conn._schedule(st)
            return
        with st.lock:
            if st.closed:
                raise _Fail(_RESET, "the connection is down")
            mid = conn._map_id(st, rm)
            out = st.out
            put_frame(out, T_WRITE, F_IMM if self.has_imm else 0, mid, n, d, self.imm)
            if sm is not None and sm.mv is not None:
                out += sm.mv[src.data - sm.addr:src.data - sm.addr + n]
            for s in segs:
                out += s
            conn._push(self)
        conn._schedule(st)

    def _ok(self) -> None:
        dst = self.dst
        if dst is not None:
            dst.data_len += self.nbytes

    def set_src_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.src = buf

    def set_dst_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.dst = buf


class EmuRdmaTaskAtomic(_RdmaTask):
    """``doca_rdma_task_atomic_cmp_swp`` / ``_fetch_add``: 64-bit, at the peer."""

    __slots__ = ("dst", "result", "cmp", "swap", "add", "is_cas", "segs")
    kind = "rdma_atomic"

    def __init__(self, pool: TaskPool[EmuTask]) -> None:
        super().__init__(pool)
        self.dst: EmuBuf | None = None
        self.result: EmuBuf | None = None
        self.cmp = self.swap = self.add = 0
        self.is_cas = False
        self.segs: list[memoryview] = []

    def _bufs(self) -> tuple[EmuBuf | None, ...]:
        return self.dst, self.result

    def _start(self) -> None:
        conn = self.conn
        assert conn is not None
        dst, res = self.dst, self.result
        if dst is None or res is None:
            raise _Fail(_INVALID, "an atomic task needs a remote destination and a local result buffer")
        rm = dst.mmap  # a chained remote buffer: the head only
        if rm is None or not rm.from_export or rm.kind != Access.RDMA:
            raise _Fail(_INVALID, "the atomic destination must be a buffer of an RDMA-imported mmap")
        if res.mmap is not self.reached or res.next is not None:
            _reach(self, res)
        segs, room = _segments(res, True)
        if room < 8:
            raise _Fail(_INVALID, "the atomic result buffer needs 8 bytes free")
        st = conn._stream()
        self.segs, self.nbytes = segs, 8
        a1, a2 = (self.cmp, self.swap) if self.is_cas else (self.add, 0)
        with st.lock:
            if st.closed:
                raise _Fail(_RESET, "the connection is down")
            mid = conn._map_id(st, rm)
            put_frame(st.out, T_ATOMIC, F_CAS if self.is_cas else 0, mid, 16, dst.data, 0)
            st.out += _Q2.pack(a1 & _U64, a2 & _U64)
            conn._push(self)
        conn._schedule(st)

    def _ok(self) -> None:
        _grow(self.result, 8)
        self.segs = []

    def set_dst_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.dst = buf

    def set_result_buf(self, buf: BufHandle) -> None:
        assert isinstance(buf, EmuBuf)
        self.result = buf


_Q2 = struct.Struct("<QQ")
_U64 = (1 << 64) - 1


# -- the context -------------------------------------------------------------------------------
class EmuRdma(EmuCtx):
    """Emulated ``doca_rdma`` context."""

    def __init__(self, dev: object) -> None:
        super().__init__()
        self.dev = dev
        self.perms = _LOCAL_RW
        self.transport = 0
        self.gid_index = 0
        self.max_conns = 1
        self.mtu = 3  # 2K, the MTU the software path reports
        self.recv_queue = DEFAULT_QUEUE_SIZE
        self.send_queue = DEFAULT_QUEUE_SIZE
        self.send_list_len = 1
        self.recv_list_len = 1
        self.grh = 1
        self.sl = 0
        self.rnr_retry = 7
        self.cm_timeout_ms = 5000
        self.retry_window = _cfg.retry_window  # read again at start
        self.receive = TaskPool(self, EmuRdmaTaskReceive)
        self.send = TaskPool(self, EmuRdmaTaskSend)
        self.send_imm = TaskPool(self, EmuRdmaTaskSend)
        self.read = TaskPool(self, EmuRdmaTaskRead)
        self.write = TaskPool(self, EmuRdmaTaskWrite)
        self.write_imm = TaskPool(self, EmuRdmaTaskWrite)
        self.atomic_cmp_swp = TaskPool(self, EmuRdmaTaskAtomic)
        self.atomic_fetch_add = TaskPool(self, EmuRdmaTaskAtomic)
        self.lock = threading.Lock()
        self.rq = _Fifo(self, self._run_rq)  # submitted receives, in order, until posted (Pe thread)
        self.posted: deque[EmuRdmaTaskReceive] = deque()
        self.stalled: deque[Stream] = deque()
        self.conns: list[EmuRdmaConnection] = []
        self.next_conn_id = 0
        self.listener: Listener | None = None
        self.cm_listeners: dict[int, Listener] = {}
        self.conn_cb: Callable[[int, EmuRdmaConnection], None] | None = None
        self.epoch = 0
        self.host = b""
        self.serial = next(_serials)
        #: DOCA 3.x rules (RUNNING without a connection) or 2.6 (RUNNING after connect), chosen at start.
        self.v3 = True

    # -- attributes (idle only for setters) -----------------------------------------------------
    _ATTRS = {"permissions": "perms", "transport_type": "transport", "gid_index": "gid_index",
              "max_num_connections": "max_conns", "mtu": "mtu", "recv_queue_size": "recv_queue",
              "send_queue_size": "send_queue", "max_send_buf_list_len": "send_list_len",
              "receive_dst_buf_list_len": "recv_list_len", "grh_enabled": "grh", "sl": "sl",
              "rnr_retry_count": "rnr_retry", "connection_request_timeout": "cm_timeout_ms"}

    def _set(self, name: str, value: int) -> None:
        self._configurable(f"set_{name}")
        attr = self._ATTRS[name]
        v = int(value)
        if v < 0:
            raise DocaInvalidValue(f"{name} must not be negative")
        if name == "permissions":
            if v & ~int(sum(A)):
                raise DocaInvalidValue(f"unknown access flag bits in {v:#x}")
            if v & _NOT_RDMA:
                raise DocaInvalidValue(f"doca_rdma_set_permissions takes the local and RDMA access flags; "
                                       f"{A(v & _NOT_RDMA)!r} are not RDMA flags")
        elif name == "transport_type":
            if v not in (0, 1):
                raise DocaInvalidValue(f"unknown transport type {v}")
            if v == 1:
                raise DocaNotSupported("the emulated device supports the RC transport only")
        elif name == "mtu" and v > 4:
            raise DocaInvalidValue(f"unsupported mtu enum value {v}")
        elif name in ("recv_queue_size", "send_queue_size"):
            if not 0 < v <= MAX_QUEUE_SIZE:
                raise DocaInvalidValue(f"{name} must be in 1..{MAX_QUEUE_SIZE}")
            v = 1 << (v - 1).bit_length()
        elif name in ("max_send_buf_list_len", "receive_dst_buf_list_len") and not 0 < v <= MAX_BUF_LIST_LEN:
            raise DocaInvalidValue(f"{name} must be in 1..{MAX_BUF_LIST_LEN}")
        elif name == "max_num_connections" and not 0 < v <= MAX_NUM_CONNECTIONS:
            raise DocaInvalidValue(f"max_num_connections must be in 1..{MAX_NUM_CONNECTIONS}")
        elif name == "gid_index" and v >= GID_TABLE_SIZE:
            raise DocaInvalidValue(f"gid_index {v} is outside the GID table (size {GID_TABLE_SIZE})")
        elif name == "rnr_retry_count" and v > 7:
            raise DocaInvalidValue("rnr_retry_count is at most 7")
        elif name == "connection_request_timeout" and v > 0xFFFF:
            raise DocaInvalidValue("connection_request_timeout is a 16-bit number of milliseconds")
        setattr(self, attr, v)

    def _get(self, name: str) -> int:
        return int(getattr(self, self._ATTRS[name]))

    def set_permissions(self, value: int) -> None:
        self._set("permissions", value)

    def get_permissions(self) -> int:
        return self._get("permissions")

    def set_transport_type(self, value: int) -> None:
        self._set("transport_type", value)

    def get_transport_type(self) -> int:
        return self._get("transport_type")

    def set_gid_index(self, value: int) -> None:
        self._set("gid_index", value)

    def get_gid_index(self) -> int:
        return self._get("gid_index")

    def set_max_num_connections(self, value: int) -> None:
        self._set("max_num_connections", value)

    def get_max_num_connections(self) -> int:
        return self._get("max_num_connections")

    def set_mtu(self, value: int) -> None:
        self._set("mtu", value)

    def get_mtu(self) -> int:
        return self._get("mtu")

    def set_recv_queue_size(self, value: int) -> None:
        self._set("recv_queue_size", value)

    def get_recv_queue_size(self) -> int:
        return self._get("recv_queue_size")

    def set_send_queue_size(self, value: int) -> None:
        self._set("send_queue_size", value)

    def get_send_queue_size(self) -> int:
        return self._get("send_queue_size")

    def set_max_send_buf_list_len(self, value: int) -> None:
        self._set("max_send_buf_list_len", value)

    def get_max_send_buf_list_len(self) -> int:
        return self._get("max_send_buf_list_len")

    def set_receive_dst_buf_list_len(self, value: int) -> None:
        self._set("receive_dst_buf_list_len", value)

    def get_receive_dst_buf_list_len(self) -> int:
        return self._get("receive_dst_buf_list_len")

    def set_grh_enabled(self, value: bool) -> None:
        self._set("grh_enabled", int(value))

    def get_grh_enabled(self) -> bool:
        return bool(self._get("grh_enabled"))

    def set_sl(self, value: int) -> None:
        self._set("sl", value)

    def get_sl(self) -> int:
        return self._get("sl")

    def set_rnr_retry_count(self, value: int) -> None:
        self._set("rnr_retry_count", value)

    def get_rnr_retry_count(self) -> int:
        return self._get("rnr_retry_count")

    def set_connection_request_timeout(self, value: int) -> None:
        self._set("connection_request_timeout", value)

    def get_connection_request_timeout(self) -> int:
        return self._get("connection_request_timeout")

    def set_connection_state_cb(self, cb: Callable[[int, EmuRdmaConnection], None]) -> None:
        self._configurable("set_connection_state_callbacks")
        self.conn_cb = cb

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self) -> int:
        if self.pe is None:
            raise DocaNotConnected("connect the ctx to a Pe before start")
        if self.state != _IDLE:
            raise DocaBadState("ctx is not IDLE")
        try:
            listener = Listener(_cfg.bind_addr, 0, self._accept)
        except (OSError, ValueError) as exc:
            raise DocaError(f"cannot listen on {_cfg.bind_addr!r}: {exc}", code=int(ErrorCode.OPERATING_SYSTEM)) \
                from None
        self.listener = listener
        self.epoch += 1
        self.retry_window = _cfg.retry_window
        self.host = host_id()
        self.v3 = emu_version.VERSION >= (3, 0)
        for pool in self.pools:
            pool.build()
        self._set_state(_STARTING)
        if self.v3:  # 3.x: RUNNING on the next progress, connected or not ("ready to export and connect")
            assert self.pe is not None
            self.pe.post(self._to_running, self.epoch)
        return self.state

    def _to_running(self, epoch: int) -> None:
        """STARTING -> RUNNING, inside ``progress()``."""
        if epoch == self.epoch and self.state == _STARTING:
            self.state = _RUNNING
            self._deliver_state((_STARTING, _RUNNING))

    def _on_stop(self) -> None:
        with self.lock:
            claimed: list[_RdmaTask] = list(self.posted)
            self.posted.clear()
            self.stalled.clear()
            conns, self.conns = self.conns, []
        claimed.extend(self.rq.drop())
        for c in conns:
            claimed.extend(c.sq.drop())
            claimed.extend(self._close_conn(c))
        pe = self.pe
        assert pe is not None
        for t in claimed:
            t.status = FLUSHED
            pe.post(_complete, t)
        if self.listener is not None:
            self.listener.close()
            self.listener = None
        for lst in self.cm_listeners.values():
            lst.close()
        self.cm_listeners.clear()

    def _close_conn(self, c: EmuRdmaConnection) -> list[_RdmaTask]:
        """Detach *c* from its streams (any thread); returns the tasks that waited on it."""
        claimed: list[_RdmaTask] = []
        c.state = C_CLOSED
        req = c.req
        if req is not None:
            with req.lock:
                claimed.extend(c.pending)
                c.pending.clear()
            req.r.call(req.close)
        srv_st = c.srv
        if srv_st is not None:
            # Wait (briefly) for the answers to leave: a process that exits right after stopping
            # its ctx would otherwise take its I/O thread, and the sender's acknowledgement, with it.
            answered = threading.Event()

            def close_answering() -> None:
                try:
                    _close_answering(srv_st)
                finally:
                    answered.set()

            srv_st.r.call(close_answering)
            if not srv_st.r.on_thread():
                answered.wait(1.0)
        if c.cm_sock is not None:
            c.cm_sock.r.call(c.cm_sock.close)
        return claimed

    def destroy(self) -> None:
        super().destroy()
        if self.listener is not None:
            self.listener.close()
            self.listener = None

    # -- export / connect ---------------------------------------------------------------------------
    def _new_conn(self) -> EmuRdmaConnection:
        if self.state not in (_STARTING, _RUNNING):
            raise DocaBadState("rdma connections are made after start (ctx STARTING or RUNNING)")
        with self.lock:
            live = sum(1 for c in self.conns if c.state not in (C_BROKEN, C_CLOSED))
            if live >= self.max_conns:
                raise DocaFull(f"all {self.max_conns} connections of this ctx are in use (set_max_num_connections)")
            c = EmuRdmaConnection(self, self.next_conn_id)
            self.next_conn_id += 1
            self.conns.append(c)
        return c

    def export(self) -> tuple[bytes, EmuRdmaConnection]:
        c = self._new_conn()
        assert self.listener is not None
        c.blob = encode_blob(ConnBlob(0, self.host, os.getpid(), self.serial, c.id, c.key, self.perms,
                                      int(rnr_window(self.rnr_retry) * 1000), _advertised(self.listener),
                                      self.listener.addr[1]))
        return c.blob, c

    def connect(self, blob: bytes, conn: Any) -> None:
        if not isinstance(conn, EmuRdmaConnection) or conn.ctx is not self:
            raise DocaInvalidValue("the connection was not exported by this rdma ctx")
        if self.state not in (_STARTING, _RUNNING):
            raise DocaBadState("connect needs a started rdma ctx")
        if conn.state != C_NEW or conn.req is not None:
            raise DocaBadState("this connection is already connected (a new connection needs a new export)")
        if not blob:
            raise DocaInvalidValue("empty connection blob")
        b = decode_blob(bytes(blob))
        with _used_lock:
            if b.key in _used_keys:
                raise DocaConnectionAborted("this connection blob was already used for a connection (replayed)")
        if conn.peer_key is not None and conn.peer_key != b.key:
            raise DocaConnectionAborted("another peer already connected to this connection's export")
        self._dial(conn, (b.ip, b.port), b.key)
        if not self.v3 and self.state == _STARTING:  # 2.6: the next progress moves the ctx to RUNNING
            assert self.pe is not None
            self.pe.post(self._to_running, self.epoch)

    def _dial(self, conn: EmuRdmaConnection, addr: tuple[str, int], peer_key: bytes) -> None:
        """Open our request stream to the peer's listener and prove we hold its key (Pe thread)."""
        assert self.listener is not None
        family, ip = _pack_ip(_advertised(self.listener))
        hello = _HELLO.pack(_HELLO_MAGIC, _VERSION, _K_CONNECT, peer_key, conn.key, self.host, os.getpid(),
                            self.perms, int(rnr_window(self.rnr_retry) * 1000), conn.id, ip, self.listener.addr[1],
                            family)
        reply = _exchange(addr, hello, _cfg.connect_timeout)
        sock, (magic, version, status, phost, ppid, pperms, prnr) = reply
        if status:
            sock.close()
            raise DocaConnectionAborted(f"the peer refused the connection ({ErrorCode(status).name if status in ErrorCode._value2member_map_ else status})")
        with _used_lock:
            _used_keys.add(peer_key)
        st = Stream(sock, conn_responses(conn), _req_closed(conn))
        with self.lock:
            if self.state not in (_STARTING, _RUNNING):
                sock.close()
                raise DocaConnectionAborted("the ctx stopped while connecting")
            if conn.state in (C_BROKEN, C_CLOSED):
                # The peer accepted, then left before we got here. doca_rdma_connect only moves
                # the local QP, so it succeeds; the loss is reported by the connection's
                # callbacks and by its tasks, as it already was.
                sock.close()
                return
            conn.req = st
            conn.peer_key = peer_key
            conn.peer_host, conn.peer_pid, conn.peer_perms, conn.peer_rnr = phost, ppid, pperms, prnr / 1000.0
            conn.peer_addr = addr
            conn.same_host = phost == self.host
            if conn.state in (C_NEW, C_REQUESTED):
                conn.state = C_CONNECTING
            self._maybe_established(conn)
        st.start()

    def _maybe_established(self, conn: EmuRdmaConnection) -> None:
        """Both streams up: the connection is established (ctx.lock held)."""
        if conn.req is not None and conn.srv is not None and conn.state in (C_NEW, C_CONNECTING, C_REQUESTED):
            conn.state = C_ESTABLISHED
            pe = self.pe
            assert pe is not None
            pe.post(self._on_established, (conn, self.epoch))

    def _on_established(self, arg: tuple[EmuRdmaConnection, int]) -> None:
        conn, epoch = arg
        if epoch != self.epoch or conn.state != C_ESTABLISHED:
            return
        if self.state == _STARTING:  # a CM connection (2.6 rules; 3.x is RUNNING already)
            self.state = _RUNNING
            self._deliver_state((_STARTING, _RUNNING))
        if self.conn_cb is not None:
            self.conn_cb(EV_ESTABLISHED, conn)
        if conn.state == C_ESTABLISHED:
            conn._run_sq()  # tasks that waited for the peer

    def _window_expired(self, arg: tuple[EmuRdmaConnection, int]) -> None:
        """The connect window of tasks waiting on *conn* ended (inside ``progress()``)."""
        conn, epoch = arg
        conn.window_armed = False
        if epoch != self.epoch or conn.state in (C_ESTABLISHED, C_BROKEN, C_CLOSED):
            return
        if not conn.sq.nready:
            return  # nothing waits (any more); the connection may still come up
        self._break(conn, _TIME_OUT, reason=f"the peer did not connect within the connect window "
                                            f"({_cfg.connect_window:g} s, DOCA_PY_RDMA_CONNECT_WINDOW)")
        conn._run_sq()

    def _post_event(self, kind: int, conn: EmuRdmaConnection) -> None:
        pe = self.pe
        if pe is None or self.conn_cb is None:
            return
        pe.post(self._deliver_event, (kind, conn, self.epoch))

    def _deliver_event(self, arg: tuple[int, EmuRdmaConnection, int]) -> None:
        kind, conn, epoch = arg
        if epoch == self.epoch and self.conn_cb is not None and not self.destroyed:
            self.conn_cb(kind, conn)

    def _break(self, conn: EmuRdmaConnection, code: int, local: bool = False, reason: str = "") -> None:
        """The connection died (any thread): fail its waiting tasks, report it once."""
        with self.lock:
            if conn.state in (C_BROKEN, C_CLOSED) or conn.epoch != self.epoch:
                return
            was = conn.state
            conn.err = code
            conn.err_reason = reason or ("the connection was disconnected" if local else
                                         "the connection is down (the peer went away or failed)")
            conn.state = C_BROKEN
            for st in (conn.srv,):
                if st is not None and st in self.stalled:
                    self.stalled.remove(st)
        claimed = self._close_conn(conn)
        conn.state = C_BROKEN
        if not local:
            self._post_event(EV_DISCONNECTION if was == C_ESTABLISHED else EV_FAILURE, conn)
        pe = self.pe
        if pe is not None:
            for t in claimed:
                t.status = code
                t.reason = conn.err_reason
                pe.post(_complete, t)
            if conn.sq.tasks:
                pe.post(_fifo_retry, conn.sq)  # the tasks not started yet fail too

    # -- accepting streams (I/O thread) -----------------------------------------------------------
    def _accept(self, sock: socket.socket) -> None:
        st = Stream(sock, self._handshake, _ignore_close)
        st.start()

    def _handshake(self, st: Stream) -> None:
        if st.rend - st.rpos < _HELLO.size:
            return
        fields = _HELLO.unpack_from(st.rx, st.rpos)
        st.rpos += _HELLO.size
        magic, version, kind, target, key, phost, ppid, pperms, prnr, pconn, pip, pport, pfam = fields
        status = 0
        conn: EmuRdmaConnection | None = None
        if magic != _HELLO_MAGIC or version != _VERSION or kind != _K_CONNECT:
            status = _ABORTED
        else:
            with self.lock:
                if self.state not in (_STARTING, _RUNNING):
                    status = int(ErrorCode.BAD_STATE)
                else:
                    conn = next((c for c in self.conns if c.key == target), None)
                    if conn is None or conn.state in (C_BROKEN, C_CLOSED):
                        status = _ABORTED  # unknown, stale or closed key
                    elif conn.srv is not None:
                        status = _ABORTED  # replayed: the connection already has its peer
                    elif conn.peer_key is not None and conn.peer_key != key:
                        status = _ABORTED  # not the peer we connected to
                    else:
                        conn.srv = st
                        conn.peer_key = key
                        conn.peer_host, conn.peer_pid, conn.peer_perms = phost, ppid, pperms
                        conn.peer_rnr = prnr / 1000.0
                        conn.same_host = phost == self.host
                        try:
                            conn.peer_addr = (_unpack_ip(pfam, pip), pport)
                        except ValueError:
                            conn.peer_addr = None
                        st.ctx = _SrvState(conn)
                        st.on_data = _serve
                        st.on_close = _srv_closed
                        self._maybe_established(conn)
                        if conn.req is None and conn.cm_sock is not None and self.pe is not None:
                            self.pe.post(self._cm_dial, (conn, self.epoch))
        try:
            st.sock.send(_REPLY.pack(_REPLY_MAGIC, _VERSION, status, self.host, os.getpid(), self.perms,
                                     int(rnr_window(self.rnr_retry) * 1000)))
        except OSError:
            status = _RESET
        if status:
            if conn is not None and conn.srv is st:
                conn.srv = None
            st.on_close = _ignore_close
            st.close()
            return
        if st.rend > st.rpos:
            _serve(st)

    # -- RDMA-CM flow -------------------------------------------------------------------------------
    def start_listen_to_port(self, port: int) -> int:
        if self.state not in (_STARTING, _RUNNING):
            raise DocaBadState("start_listen_to_port needs a started rdma ctx")
        if port in self.cm_listeners:
            raise DocaBadState(f"already listening on port {port}")
        try:
            lst = Listener(_cfg.bind_addr, port, self._cm_accept)
        except OSError as exc:
            code = int(ErrorCode.IN_USE) if exc.errno == errno.EADDRINUSE else int(ErrorCode.OPERATING_SYSTEM)
            raise DocaError(f"cannot listen on port {port}: {exc.strerror}", code=code) from None
        actual = lst.addr[1]
        self.cm_listeners[port if port else actual] = lst
        return actual

    def stop_listen_to_port(self, port: int) -> None:
        lst = self.cm_listeners.pop(port, None)
        if lst is None:
            raise DocaNotFound(f"not listening on port {port}")
        lst.close()

    def _cm_accept(self, sock: socket.socket) -> None:
        st = Stream(sock, self._cm_request, _ignore_close)
        st.start()

    def _cm_request(self, st: Stream) -> None:
        if st.rend - st.rpos < _HELLO.size:
            return
        fields = _HELLO.unpack_from(st.rx, st.rpos)
        st.rpos += _HELLO.size
        magic, version, kind, _target, key, phost, ppid, pperms, prnr, _pconn, pip, pport, pfam = fields
        st.on_data = _drop_data
        if magic != _HELLO_MAGIC or version != _VERSION or kind != _K_CM_REQUEST:
            _send_reply_and_close(st, _ABORTED, self)
            return
        try:
            conn = self._new_conn()
            conn.peer_addr = (_unpack_ip(pfam, pip), pport)
        except (DocaError, ValueError):
            _send_reply_and_close(st, int(ErrorCode.FULL), self)
            return
        conn.state = C_REQUESTED
        conn.peer_key = key
        conn.cm_sock = st
        conn.cm_addr = (1 if pfam == 6 else 0, conn.peer_addr[0], pport)
        st.on_close = lambda s, code: self._break(conn, _ABORTED) if conn.state == C_REQUESTED else None
        pe = self.pe
        assert pe is not None
        if self.conn_cb is None:
            pe.post(self._auto_accept, (conn, self.epoch))  # no request callback: accept
            return
        self._post_event(EV_REQUEST, conn)

    def _auto_accept(self, arg: tuple[EmuRdmaConnection, int]) -> None:
        conn, epoch = arg
        if epoch == self.epoch and conn.state == C_REQUESTED:
            try:
                conn.accept(None)
            except DocaError as exc:
                logger.warning("rdma: accepting a connection request failed: %s", exc)

    def _cm_dial(self, arg: tuple[EmuRdmaConnection, int]) -> None:
        """CM client: the server accepted (it dialed us); dial it back (Pe thread)."""
        conn, epoch = arg
        if epoch != self.epoch or conn.state != C_CONNECTING or conn.req is not None or conn.peer_addr is None \
                or conn.peer_key is None:
            return
        try:
            self._dial(conn, conn.peer_addr, conn.peer_key)
        except DocaError as exc:
            logger.debug("rdma: CM dial-back failed: %s", exc)
            self._break(conn, _ABORTED)

    def connect_to_addr(self, addr_type: int, address: str, port: int) -> EmuRdmaConnection:
        """RDMA-CM client: ask a listening peer for a connection; the result comes by callback."""
        if self.state not in (_STARTING, _RUNNING):
            raise DocaBadState("connect_to_addr needs a started rdma ctx")
        conn = self._new_conn()
        conn.state = C_CONNECTING
        conn.cm_addr = (addr_type, address, port)
        assert self.listener is not None
        family, ip = _pack_ip(_advertised(self.listener))
        hello = _HELLO.pack(_HELLO_MAGIC, _VERSION, _K_CM_REQUEST, bytes(16), conn.key, self.host, os.getpid(),
                            self.perms, int(rnr_window(self.rnr_retry) * 1000), conn.id, ip, self.listener.addr[1],
                            family)
        timeout = min(_cfg.connect_timeout, self.cm_timeout_ms / 1000.0) if self.cm_timeout_ms else \
            _cfg.connect_timeout
        try:
            sock = socket.create_connection((address, port), timeout=timeout)
            sock.sendall(hello)
        except OSError as exc:
            logger.debug("rdma connect_to_addr %s:%d failed: %s", address, port, exc)
            self._break(conn, _ABORTED)
            return conn
        st = Stream(sock, self._cm_reply, lambda s, code: self._cm_lost(conn))
        st.ctx = conn
        conn.cm_sock = st
        st.start()
        epoch = self.epoch
        r = st.r
        r.call(lambda: r.call_later(timeout, lambda: self._cm_timeout(conn, epoch)))
        return conn

    def _cm_reply(self, st: Stream) -> None:
        if st.rend - st.rpos < _REPLY.size:
            return
        magic, version, status, *_ = _REPLY.unpack_from(st.rx, st.rpos)
        st.rpos += _REPLY.size
        conn: EmuRdmaConnection = st.ctx
        st.on_close = _ignore_close
        st.close()
        if magic != _REPLY_MAGIC or status:
            self._break(conn, _ABORTED)

    def _cm_lost(self, conn: EmuRdmaConnection) -> None:
        if conn.state in (C_CONNECTING, C_NEW) and conn.srv is None:
            self._break(conn, _ABORTED)

    def _cm_timeout(self, conn: EmuRdmaConnection, epoch: int) -> None:
        if epoch == self.epoch and conn.state == C_CONNECTING:
            self._break(conn, _TIME_OUT)

    # -- receive matching (I/O thread and Pe thread) -------------------------------------------------
    def _run_rq(self) -> None:
        """Post the queued receives in submission order (Pe thread, inside ``progress()``)."""
        q = self.rq
        while True:
            t = q.head()
            if t is None:
                return
            q.pop(t)
            t._go()

    def _resume_stalled(self) -> None:
        while True:
            with self.lock:
                if not self.stalled or not self.posted:
                    return
                st = self.stalled.popleft()
            srv: _SrvState = st.ctx
            srv.stall_token += 1
            st.resume()

    # -- tasks --------------------------------------------------------------------------------------
    def task_receive_allocate_init(self, dst: BufHandle | None) -> EmuRdmaTaskReceive:
        t = self.receive.alloc()
        assert isinstance(t, EmuRdmaTaskReceive) and (dst is None or isinstance(dst, EmuBuf))
        t.dst = dst
        return t

    def _send_alloc(self, pool: TaskPool[EmuTask], conn: Any, src: BufHandle | None, imm: int | None) \
            -> EmuRdmaTaskSend:
        _check_conn(self, conn)
        t = pool.alloc()
        assert isinstance(t, EmuRdmaTaskSend) and (src is None or isinstance(src, EmuBuf))
        t.conn, t.src = conn, src
        t.has_imm, t.imm = imm is not None, _u32(imm or 0)
        return t

    def task_send_allocate_init(self, conn: Any, src: BufHandle | None) -> EmuRdmaTaskSend:
        return self._send_alloc(self.send, conn, src, None)

    def task_send_imm_allocate_init(self, conn: Any, src: BufHandle | None, imm: int) -> EmuRdmaTaskSend:
        return self._send_alloc(self.send_imm, conn, src, imm)

    def task_read_allocate_init(self, conn: Any, src: BufHandle, dst: BufHandle) -> EmuRdmaTaskRead:
        _check_conn(self, conn)
        t = self.read.alloc()
        assert isinstance(t, EmuRdmaTaskRead) and isinstance(src, EmuBuf) and isinstance(dst, EmuBuf)
        t.conn, t.src, t.dst = conn, src, dst
        return t

    def _write_alloc(self, pool: TaskPool[EmuTask], conn: Any, src: BufHandle, dst: BufHandle, imm: int | None) \
            -> EmuRdmaTaskWrite:
        _check_conn(self, conn)
        t = pool.alloc()
        assert isinstance(t, EmuRdmaTaskWrite) and isinstance(src, EmuBuf) and isinstance(dst, EmuBuf)
        t.conn, t.src, t.dst = conn, src, dst
        t.has_imm, t.imm = imm is not None, _u32(imm or 0)
        return t

    def task_write_allocate_init(self, conn: Any, src: BufHandle, dst: BufHandle) -> EmuRdmaTaskWrite:
        return self._write_alloc(self.write, conn, src, dst, None)

    def task_write_imm_allocate_init(self, conn: Any, src: BufHandle, dst: BufHandle, imm: int) -> EmuRdmaTaskWrite:
        return self._write_alloc(self.write_imm, conn, src, dst, imm)

    def task_atomic_cmp_swp_allocate_init(self, conn: Any, dst: BufHandle, result: BufHandle, cmp: int,
                                          swap: int) -> EmuRdmaTaskAtomic:
        _check_conn(self, conn)
        t = self.atomic_cmp_swp.alloc()
        assert isinstance(t, EmuRdmaTaskAtomic) and isinstance(dst, EmuBuf) and isinstance(result, EmuBuf)
        t.conn, t.dst, t.result, t.cmp, t.swap, t.is_cas = conn, dst, result, cmp & _U64, swap & _U64, True
        return t

    def task_atomic_fetch_add_allocate_init(self, conn: Any, dst: BufHandle, result: BufHandle,
                                            add: int) -> EmuRdmaTaskAtomic:
        _check_conn(self, conn)
        t = self.atomic_fetch_add.alloc()
        assert isinstance(t, EmuRdmaTaskAtomic) and isinstance(dst, EmuBuf) and isinstance(result, EmuBuf)
        t.conn, t.dst, t.result, t.add, t.is_cas = conn, dst, result, add & _U64, False
        return t


def _u32(v: int) -> int:
    if not 0 <= v <= 0xFFFFFFFF:
        raise DocaInvalidValue(f"immediate data {v} does not fit in 32 bits")
    return v


def _check_conn(ctx: EmuRdma, conn: Any) -> None:
    if not isinstance(conn, EmuRdmaConnection) or conn.ctx is not ctx:
        raise DocaInvalidValue("the connection does not belong to this rdma ctx")


def _drop_data(st: Stream) -> None:
    st.rpos = st.rend


def _exchange(addr: tuple[str, int], hello: bytes, timeout: float) -> tuple[socket.socket, tuple[Any, ...]]:
    """Dial *addr*, send the handshake, read the reply (bounded by *timeout*)."""
    deadline = time.monotonic() + timeout
    try:
        sock = socket.create_connection(addr, timeout=timeout)
    except OSError as exc:
        raise DocaConnectionAborted(f"cannot reach the peer at {addr[0]}:{addr[1]}: {exc}") from None
    try:
        sock.sendall(hello)
        buf = bytearray()
        while len(buf) < _REPLY.size:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            chunk = sock.recv(_REPLY.size - len(buf))
            if not chunk:
                raise DocaConnectionAborted("the peer closed the connection during the handshake")
            buf += chunk
    except OSError as exc:
        sock.close()
        raise DocaConnectionAborted(f"handshake with {addr[0]}:{addr[1]} failed: {exc}") from None
    except DocaError:
        sock.close()
        raise
    fields = _REPLY.unpack(bytes(buf))
    if fields[0] != _REPLY_MAGIC or fields[1] != _VERSION:
        sock.close()
        raise DocaConnectionAborted("the peer is not a compatible doca_py rdma endpoint")
    return sock, fields


# -- the requester's side of a stream: responses ------------------------------------------------
def conn_responses(conn: EmuRdmaConnection) -> Callable[[Stream], None]:
    def on_data(st: Stream) -> None:
        _responses(conn, st)
    return on_data


def _req_closed(conn: EmuRdmaConnection) -> Callable[[Stream, int], None]:
    def on_close(st: Stream, code: int) -> None:
        conn.ctx._break(conn, _RESET)
    return on_close


def _responses(conn: EmuRdmaConnection, st: Stream) -> None:
    ctx = conn.ctx
    pe = ctx.pe
    if pe is None:
        return
    rx, mv = st.rx, st.mv
    pos, end = st.rpos, st.rend
    pending = conn.pending
    post = pe.post
    while end - pos >= HDR_SIZE:
        typ, flags, aux, length, a, b = HDR.unpack_from(rx, pos)
        if typ == R_ACK:
            pos += HDR_SIZE
            with st.lock:
                acked = [pending.popleft() for _ in range(min(a, len(pending)))]
            for at in acked:
                at._ok()
                post(_complete, at)
        elif typ == R_RNR:
            pos += HDR_SIZE  # the peer lives (Stream.heard), its receive queue is empty
        elif typ == R_ERR:
            pos += HDR_SIZE
            with st.lock:
                et = pending.popleft() if pending else None
            if et is not None:
                et.status = int(a) or _IO_FAILED
                post(_complete, et)
        elif typ == R_DATA:
            body = pos + HDR_SIZE
            avail = end - body
            with st.lock:
                t: _RdmaTask | None = pending[0] if pending else None
            segs: list[memoryview] = getattr(t, "segs", []) if t is not None else []
            if t is None or length != t.nbytes:
                st.rpos = pos
                st.close(_IO_FAILED)  # protocol violation: the peer answered something we did not ask
                return
            if avail >= length:
                _scatter(segs, mv[body:body + length])
                pos = body + length
                with st.lock:
                    mine = bool(pending) and pending[0] is t
                    if mine:
                        pending.popleft()
                if mine:
                    t._ok()
                    post(_complete, t)
                continue
            if HDR_SIZE + length <= RX_SIZE:
                break  # wait for the rest of the frame
            # Stream the payload straight into the destination.
            _scatter(segs, mv[body:end])
            rest = _tail(segs, avail)
            st.rpos = st.rend = 0
            task = t

            def done() -> None:
                with st.lock:
                    mine = bool(pending) and pending[0] is task
                    if mine:
                        pending.popleft()
                if mine:
                    task._ok()
                    post(_complete, task)
            st.sink.extend(rest)
            st.sink_done = done
            return
        else:
            st.rpos = pos
            st.close(_IO_FAILED)
            return
    st.rpos = pos


def _tail(segs: list[memoryview], skip: int) -> list[memoryview]:
    """The parts of *segs* after the first *skip* bytes."""
    out: list[memoryview] = []
    for s in segs:
        if skip >= len(s):
            skip -= len(s)
            continue
        out.append(s[skip:])
        skip = 0
    return out


# -- the acceptor's side of a stream: requests -----------------------------------------------------
class _SrvState:
    """Per-stream state of a connection's incoming requests (I/O thread only)."""

    __slots__ = ("conn", "maps", "acks", "stall_token", "rnr_fail", "scratch", "sink_task")

    def __init__(self, conn: EmuRdmaConnection) -> None:
        self.conn = conn
        self.maps: dict[int, EmuMmap | int] = {}
        self.acks = 0
        self.stall_token = 0
        self.rnr_fail = False
        self.scratch: memoryview | None = None
        self.sink_task: EmuRdmaTaskReceive | None = None  # a receive being filled straight from the socket

    def discard_segs(self, n: int) -> list[memoryview]:
        if self.scratch is None:
            self.scratch = memoryview(bytearray(RX_SIZE))
        segs = []
        while n > 0:
            k = min(n, RX_SIZE)
            segs.append(self.scratch[:k])
            n -= k
        return segs

    def close_maps(self) -> None:
        for m in self.maps.values():
            if isinstance(m, EmuMmap):
                try:
                    m.destroy()
                except DocaError:
                    pass
        self.maps.clear()


def _srv_closed(st: Stream, code: int) -> None:
    srv: _SrvState = st.ctx
    srv.close_maps()
    conn = srv.conn
    t, srv.sink_task = srv.sink_task, None
    pe = conn.ctx.pe
    if t is not None and pe is not None:
        t.status = _RESET
        pe.post(_complete, t)
    req = conn.req
    if req is not None and not req.closed and conn.pending:
        # A peer that stops closes both streams; the answers to our sends come on the other one and
        # may be read after this EOF. Its own EOF (which follows them) breaks the connection; the
        # timer bounds a peer that closed only this stream.
        st.r.call_later(1.0, lambda: conn.ctx._break(conn, _RESET))
        return
    conn.ctx._break(conn, _RESET)


def _close_answering(st: Stream) -> None:
    """Close the stream the peer sends on, after answering what was received (I/O thread).

    On hardware the acknowledgement leaves when the data lands, before the receiver's
    software even sees its completion: a receiver that stops right after its receive
    completed must not turn the sender's delivered send into CONNECTION_RESET."""
    srv = st.ctx
    if isinstance(srv, _SrvState):
        with st.lock:
            _respond_acks(st, srv)
    st.flush()  # what the socket takes now is delivered before the FIN
    st.close()


def _respond_acks(st: Stream, srv: _SrvState) -> None:
    if srv.acks:
        put_frame(st.out, R_ACK, 0, 0, 0, srv.acks, 0)
        srv.acks = 0


def _serve(st: Stream) -> None:
    """Process the requests buffered in *st* (I/O thread)."""
    srv: _SrvState = st.ctx
    conn = srv.conn
    ctx = conn.ctx
    pe = ctx.pe
    if pe is None or conn.state in (C_BROKEN, C_CLOSED):
        st.rpos = st.rend
        return
    rx, mv = st.rx, st.mv
    pos, end = st.rpos, st.rend
    out = st.out
    lock = st.lock
    try:
        while end - pos >= HDR_SIZE:
            typ, flags, aux, length, a, b = HDR.unpack_from(rx, pos)
            body = pos + HDR_SIZE
            avail = end - body
            big = HDR_SIZE + length > RX_SIZE
            if length and avail < length and not big:
                break  # wait for the whole frame
            if typ == T_SEND or (typ == T_WRITE and flags & F_IMM):
                # Validate a write's target before it may consume a receive.
                target = 0
                if typ == T_WRITE and not flags & F_NODATA:
                    code, target = _resolve(srv, ctx, aux, a, length, True)
                    if code:
                        with lock:
                            _respond_acks(st, srv)
                            put_frame(out, R_ERR, 0, 0, 0, code, 0)
                        pos = _skip(st, srv, pos, length)
                        if pos < 0:
                            return
                        continue
                if srv.rnr_fail:  # the receiver-not-ready window ran out for this frame
                    srv.rnr_fail = False
                    with lock:
                        _respond_acks(st, srv)
                        put_frame(out, R_ERR, 0, 0, 0, _TIME_OUT, 0)
                    pos = _skip(st, srv, pos, length if not flags & F_NODATA else 0)
                    if pos < 0:
                        return
                    continue
                with ctx.lock:
                    task = ctx.posted.popleft() if ctx.posted else None
                    if task is None:
                        ctx.stalled.append(st)
                if task is None:
                    st.rpos = pos
                    srv.stall_token += 1
                    token = srv.stall_token
                    st.pause()
                    st.r.call_later(max(conn.peer_rnr, 0.001), lambda: _rnr_expired(st, token))
                    st.r.call_later(_nak_interval(ctx), functools.partial(_rnr_nak, st, token))
                    return
                task.result_conn = conn
                if typ == T_SEND:
                    task.opcode = OP_RECV_SEND_WITH_IMM if flags & F_IMM else OP_RECV_SEND
                    task.imm = a if flags & F_IMM else 0
                else:
                    task.opcode = OP_RECV_WRITE_WITH_IMM
                    task.imm = b
                nbytes = length if typ == T_SEND else (a if flags & F_NODATA else length)
                task.result_len = nbytes
                if typ == T_SEND:
                    code, segs = _recv_segments(task, length)
                else:
                    code, segs = 0, ([_target_view(target, length)] if length else [])
                if code:
                    task.status = code
                    post_code = _IO_FAILED
                    with lock:
                        _respond_acks(st, srv)
                        put_frame(out, R_ERR, 0, 0, 0, post_code, 0)
                    pe.post(_complete, task)
                    pos = _skip(st, srv, pos, length)
                    if pos < 0:
                        return
                    continue
                if typ == T_SEND and length:
                    if avail >= length:
                        _scatter(segs, mv[body:body + length])
                        _grow(task.dst, length)
                    else:
                        _scatter(segs, mv[body:end])
                        srv.sink_task = task
                        _sink(st, _tail(segs, avail), functools.partial(_finish_recv, st, srv, task, length))
                        return
                elif length:
                    if avail >= length:
                        _scatter(segs, mv[body:body + length])
                    else:
                        _scatter(segs, mv[body:end])
                        srv.sink_task = task
                        _sink(st, _tail(segs, avail), functools.partial(_finish_recv, st, srv, task, 0))
                        return
                pos = body + length
                task.status = _SUCCESS
                pe.post(_complete, task)
                srv.acks += 1
            elif typ == T_WRITE:
                code, target = _resolve(srv, ctx, aux, a, length, True)
                if code:
                    with lock:
                        _respond_acks(st, srv)
                        put_frame(out, R_ERR, 0, 0, 0, code, 0)
                    pos = _skip(st, srv, pos, length)
                    if pos < 0:
                        return
                    continue
                if avail >= length:
                    if length:
                        _target_view(target, length)[:] = mv[body:body + length]
                    pos = body + length
                    srv.acks += 1
                else:
                    view = _target_view(target, length)
                    view[:avail] = mv[body:end]
                    _sink(st, [view[avail:]], lambda: _finish_ack(st, srv))
                    return
            elif typ == T_READ:
                pos = body
                code, target = _resolve(srv, ctx, aux, a, b, False)
                with lock:
                    _respond_acks(st, srv)
                    if code:
                        put_frame(out, R_ERR, 0, 0, 0, code, 0)
                    else:
                        put_frame(out, R_DATA, 0, 0, b, 0, 0)
                        if b:
                            out += _target_view(target, b)
            elif typ == T_MAP:
                if length > 4096:
                    st.close(_IO_FAILED)
                    return
                srv.maps[aux] = _import_map(ctx, bytes(mv[body:body + length]))
                pos = body + length
            elif typ == T_ATOMIC:
                if length != 16:
                    st.close(_IO_FAILED)
                    return
                a1, a2 = _Q2.unpack_from(rx, body)
                pos = body + length
                code, target = _resolve(srv, ctx, aux, a, 8, True, atomic=True)
                with lock:
                    _respond_acks(st, srv)
                    if code:
                        put_frame(out, R_ERR, 0, 0, 0, code, 0)
                    else:
                        cell = ctypes.c_uint64.from_address(target)
                        old = cell.value
                        if flags & F_CAS:
                            if old == a1:
                                cell.value = a2
                        else:
                            cell.value = (old + a1) & _U64
                        put_frame(out, R_DATA, 0, 0, 8, 0, 0)
                        out += struct.pack("<Q", old)
            elif typ == T_DISC:
                st.rpos = st.rend
                ctx._break(conn, _RESET)
                return
            else:
                st.close(_IO_FAILED)  # not our protocol
                return
        st.rpos = pos
    finally:
        if not st.closed:
            with lock:
                _respond_acks(st, srv)
            st.flush()


def _skip(st: Stream, srv: _SrvState, pos: int, length: int) -> int:
    """Consume the frame at *pos* without using its payload; -1 when the rest is streamed away."""
    body = pos + HDR_SIZE
    avail = st.rend - body
    if avail >= length:
        return body + length
    _sink(st, srv.discard_segs(length - avail), lambda: _resume_after_sink(st))
    return -1


def _sink(st: Stream, segs: list[memoryview], done: Callable[[], None]) -> None:
    st.rpos = st.rend = 0
    if not segs:
        done()
        return
    st.sink.extend(segs)
    st.sink_done = done


def _resume_after_sink(st: Stream) -> None:
    st.flush()


def _finish_recv(st: Stream, srv: _SrvState, task: EmuRdmaTaskReceive, grow: int) -> None:
    srv.sink_task = None
    if grow:
        _grow(task.dst, grow)
    task.status = _SUCCESS
    pe = srv.conn.ctx.pe
    if pe is not None:
        pe.post(_complete, task)
    _finish_ack(st, srv)


def _finish_ack(st: Stream, srv: _SrvState) -> None:
    srv.acks += 1
    with st.lock:
        _respond_acks(st, srv)
    st.flush()


def _nak_interval(ctx: EmuRdma) -> float:
    return min(ctx.retry_window / 4, 0.25)


def _rnr_nak(st: Stream, token: int) -> None:
    """While a request stalls for want of a receive, tell the requester we live (as RNR NAKs do)."""
    srv: _SrvState = st.ctx
    if st.closed or srv.stall_token != token or not st.paused:
        return
    with st.lock:
        put_frame(st.out, R_RNR, 0, 0, 0, 0, 0)
    st.flush()
    st.r.call_later(_nak_interval(srv.conn.ctx), functools.partial(_rnr_nak, st, token))


def _rnr_expired(st: Stream, token: int) -> None:
    srv: _SrvState = st.ctx
    if st.closed or srv.stall_token != token or not st.paused:
        return
    ctx = srv.conn.ctx
    with ctx.lock:
        if st in ctx.stalled:
            ctx.stalled.remove(st)
    srv.rnr_fail = True
    st.resume()


def _recv_segments(task: EmuRdmaTaskReceive, n: int) -> tuple[int, list[memoryview]]:
    if not n:
        return 0, []
    try:
        segs, room = _segments(task.dst, True)
    except _Fail as f:
        return f.code, []
    if room < n:
        return _TOO_BIG, []
    return 0, segs


def _target_view(p: int, n: int) -> memoryview:
    return memoryview((ctypes.c_char * n).from_address(p)).cast("B")


def _resolve(srv: _SrvState, ctx: EmuRdma, mid: int, addr: int, n: int, write: bool,
             atomic: bool = False) -> tuple[int, int]:
    """Validate one remote access on behalf of the peer: (status, process address)."""
    mm = srv.maps.get(mid)
    if mm is None:
        return _INVALID, 0
    if isinstance(mm, int):
        return mm, 0
    need = _RDMA_ATOMIC if atomic else (_RDMA_WRITE if write else _RDMA_READ)
    if not ctx.perms & need:
        return _NOT_PERMITTED, 0
    if n > MAX_MESSAGE_SIZE:
        return _TOO_BIG, 0
    try:
        if atomic:
            if addr % 8:
                return _INVALID, 0
            if not mm.perms & _RDMA_ATOMIC:
                return _NOT_PERMITTED, 0
            if addr < mm.addr or addr + 8 > mm.addr + mm.length:
                return _INVALID, 0
            mm._check_live()
            return 0, addr + mm._delta
        return 0, mm.ptr(addr, n, write)
    except DocaError as exc:
        return exc.code, 0


def _import_map(ctx: EmuRdma, data: bytes) -> EmuMmap | int:
    """Resolve a peer's mmap blob here, as its owner would: key, revocation, kind."""
    try:
        b = ex.decode(data)
    except DocaError as exc:
        return exc.code
    if b.kind is not ex.ExportKind.RDMA:
        return _NOT_PERMITTED
    if b.boot_id != ex.boot_id():
        return _NOT_SUPPORTED  # memory of a third host: not reachable from here
    try:
        mm = mmap_create_from_export(data, ctx.dev)  # type: ignore[arg-type]
    except DocaError as exc:
        return exc.code
    return mm


def rdma_create(dev: object) -> EmuRdma:
    """``doca_rdma_create``."""
    r = EmuRdma(dev)
    r.dev_key = dev_key(dev) if hasattr(dev, "devinfo") else ""  # type: ignore[arg-type]
    return r


# -- capabilities ----------------------------------------------------------------------------------
def cap_get_max_recv_queue_size(devinfo: DevInfoHandle) -> int:
    return MAX_QUEUE_SIZE


def cap_get_max_send_queue_size(devinfo: DevInfoHandle) -> int:
    return MAX_QUEUE_SIZE


def cap_get_max_send_buf_list_len(devinfo: DevInfoHandle) -> int:
    return MAX_BUF_LIST_LEN


def cap_get_max_message_size(devinfo: DevInfoHandle) -> int:
    return MAX_MESSAGE_SIZE


def cap_get_gid_table_size(devinfo: DevInfoHandle) -> int:
    return GID_TABLE_SIZE


def cap_get_gid(devinfo: DevInfoHandle, start: int, num: int) -> list[bytes]:
    if start < 0 or num < 0 or start + num > GID_TABLE_SIZE:
        raise DocaInvalidValue(f"GID entries [{start}, +{num}) are outside the table (size {GID_TABLE_SIZE})")
    v4 = devinfo.ipv4_addr()
    return [b"\0" * 10 + b"\xff\xff" + v4[:4] for _ in range(num)]


def cap_transport_type_is_supported(devinfo: DevInfoHandle, transport: int) -> bool:
    return transport == 0


def cap_task_is_supported(devinfo: DevInfoHandle, task: str) -> bool:
    return task in ("receive", "send", "send_imm", "read", "write", "write_imm", "atomic_cmp_swp",
                    "atomic_fetch_add")


def cap_task_receive_get_max_dst_buf_list_len(devinfo: DevInfoHandle, transport: int) -> int:
    return MAX_BUF_LIST_LEN


def cap_get_max_num_tasks(devinfo: DevInfoHandle) -> int:
    return MAX_NUM_TASKS
