"""Limits, status codes, frame and state constants, and the process-wide configuration of the emulated rdma."""

from __future__ import annotations

import ctypes
import hashlib
import os
import time

from ...errors import (
    ErrorCode,
)
from ...types import AccessFlag as A
from .. import export as ex

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

SUCCESS = 0
IO_FAILED = int(ErrorCode.IO_FAILED)
INVALID = int(ErrorCode.INVALID_VALUE)
NOT_PERMITTED = int(ErrorCode.NOT_PERMITTED)
RESET = int(ErrorCode.CONNECTION_RESET)
ABORTED = int(ErrorCode.CONNECTION_ABORTED)
BAD_STATE = int(ErrorCode.BAD_STATE)
TIME_OUT = int(ErrorCode.TIME_OUT)
TOO_BIG = int(ErrorCode.TOO_BIG)
NOT_SUPPORTED = int(ErrorCode.NOT_SUPPORTED)
IDLE, STARTING, RUNNING, STOPPING = 0, 1, 2, 3
RDMA_READ, RDMA_WRITE, RDMA_ATOMIC = int(A.RDMA_READ), int(A.RDMA_WRITE), int(A.RDMA_ATOMIC)
LOCAL_RW = int(A.LOCAL_READ_WRITE)
NOT_RDMA = int(A.PCI_READ_ONLY | A.PCI_READ_WRITE | A.PCI_RELAXED_ORDERING)

# Connection events, as the public layer maps them to the four DOCA callbacks.
EV_REQUEST, EV_ESTABLISHED, EV_FAILURE, EV_DISCONNECTION = 0, 1, 2, 3
# Receive opcodes (enum doca_rdma_opcode).
OP_RECV_SEND, OP_RECV_SEND_WITH_IMM, OP_RECV_WRITE_WITH_IMM = 0, 1, 2

# Frame types: requests (dialer -> acceptor) and responses (acceptor -> dialer).
T_SEND, T_WRITE, T_READ, T_MAP, T_ATOMIC, T_DISC = 1, 2, 3, 4, 5, 6
T_PING = 7  # are you alive? (answered with R_RNR): the retry window of same-host ring sends
R_ACK, R_ERR, R_DATA = 16, 17, 18
R_RNR = 19  # receiver not ready, still alive (the responder's RNR NAK): keeps the requester's retry window open
F_IMM = 1  # the frame carries immediate data (in *b* for writes, *a* for sends)
F_NODATA = 2  # write-with-imm whose bytes were placed already (same host): *a* = length
F_CAS = 4  # atomic: compare-and-swap (else fetch-and-add)

_small = 1 << 16
memmove = ctypes.memmove
monotonic = time.monotonic


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
        # Same-host send/receive over shared-memory rings (rdma/shm.py): opt-in until it beats the streams
        # (docs/performance.md "Same-host rings").
        self.shm = os.environ.get("DOCA_PY_RDMA_SHM", "").lower() in ("1", "true", "yes", "on")


def _hash_id(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()[:16]


cfg = _Config()


def configure(*, bind_addr: str | None = None, advertise_addr: str | None = None, host_id: str | None = None,
              rnr_timeout: float | None = None, connect_timeout: float | None = None,
              connect_window: float | None = None, retry_window: float | None = None,
              shm: bool | None = None) -> None:
    """Override the environment for contexts started from now on (tests, tools).

    *host_id* fakes the host identity (any string; ``""`` restores the boot id): peers
    with different host ids use the TCP path for one-sided access, as across hosts.
    *connect_window* is how long tasks on a connection wait for the peer to connect
    (``0`` restores the default, :data:`DEFAULT_CONNECT_WINDOW`). *retry_window* is how long work in
    flight on a connection waits without any sign of life from the peer before it fails with
    ``DOCA_ERROR_IO_FAILED`` and the connection goes down (``0`` restores :data:`DEFAULT_RETRY_WINDOW`).
    *shm* (``DOCA_PY_RDMA_SHM``) lets same-host connections carry send/receive over shared-memory rings.
    """
    if bind_addr is not None:
        cfg.bind_addr = bind_addr
    if advertise_addr is not None:
        cfg.advertise_addr = advertise_addr
    if host_id is not None:
        cfg.host_id = _hash_id(host_id) if host_id else None
    if rnr_timeout is not None:
        cfg.rnr_timeout = rnr_timeout if rnr_timeout > 0 else None
    if connect_timeout is not None:
        cfg.connect_timeout = connect_timeout
    if connect_window is not None:
        cfg.connect_window = connect_window if connect_window > 0 else DEFAULT_CONNECT_WINDOW
    if retry_window is not None:
        cfg.retry_window = retry_window if retry_window > 0 else DEFAULT_RETRY_WINDOW
    if shm is not None:
        cfg.shm = shm


def host_id() -> bytes:
    """16 bytes naming this host for RDMA (the boot id, or ``DOCA_PY_RDMA_HOST_ID``)."""
    return cfg.host_id if cfg.host_id is not None else ex.boot_id()


def rnr_window(retry_count: int) -> float:
    """Seconds a send waits for a posted receive: 50 ms × 2^count (7 → 6.4 s)."""
    if cfg.rnr_timeout is not None:
        return cfg.rnr_timeout
    return 0.05 * (1 << min(max(retry_count, 0), 7))



# Connection states.
C_NEW, C_REQUESTED, C_CONNECTING, C_ESTABLISHED, C_BROKEN, C_CLOSED = 0, 1, 2, 3, 4, 5
